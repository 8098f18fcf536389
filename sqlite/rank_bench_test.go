package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/inmem"
	"github.com/feedd/feedd/rank"
	"github.com/feedd/feedd/sqlite"
)

// The first ranked page's reads on the embedded store (the viewer of
// openBenchWorld: 400 inbox entries, 133 likes):
//
//	go test -run '^$' -bench 'Rank|Timeline|InboxPage' -count 10 ./sqlite

func rankIDs(w *benchWorld, n int) []int64 {
	ids := make([]int64, 0, n)
	for _, p := range w.posts[len(w.posts)-n:] {
		ids = append(ids, p.ID)
	}
	return ids
}

// BenchmarkRankCandidatesAffinity is what a first ranked page reads of
// 300 candidates: the two statements of feed.RankStore.
func BenchmarkRankCandidatesAffinity(b *testing.B) {
	w := openBenchWorld(b)
	ids, now := rankIDs(w, 300), time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	ctx := context.Background()
	for b.Loop() {
		cands, err := w.db.Candidates(ctx, w.viewer, ids)
		if err != nil {
			b.Fatal(err)
		}
		var authors []int64
		for _, c := range cands {
			authors = append(authors, c.AuthorID)
		}
		slices.Sort(authors)
		if _, err := w.db.Affinity(ctx, w.viewer, slices.Compact(authors), now.Add(-720*time.Hour), now, 168*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRankedFirstPage is a first ranked page (snapshots in memory)
// of 10 posts, of 150 and 300 candidates, and BenchmarkTimelineFirstPage a
// first chronological one.
func BenchmarkRankedFirstPage(b *testing.B) {
	w := openBenchWorld(b)
	w.svc.Snapshots = &inmem.Snapshots{}
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	w.svc.Now = func() time.Time { return now }
	for _, n := range []int{150, 300} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rs := rank.Default()
			rs.Candidates = n
			w.svc.Rank = &rs
			cpu, k := cpuTime(), 0
			for b.Loop() {
				if _, err := w.svc.RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
					b.Fatal(err)
				}
				k++
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(k), "cpu-ns/op")
		})
	}
}

func BenchmarkTimelineFirstPage(b *testing.B) {
	w := openBenchWorld(b)
	cpu, n := cpuTime(), 0
	for b.Loop() {
		if _, err := w.svc.Timeline(b.Context(), w.viewer, nil, 10); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
}

// BenchmarkInboxPageCandidates is the stream read of a first ranked page:
// 150 entries of the embedded inbox.
func BenchmarkInboxPageCandidates(b *testing.B) {
	w := openBenchWorld(b)
	ib := &sqlite.Inbox{DB: w.db}
	for b.Loop() {
		if es, err := ib.Page(b.Context(), w.viewer, feed.AtMost(1<<62), 0, 150); err != nil || len(es) != 150 {
			b.Fatalf("page: %v", err)
		}
	}
}

// BenchmarkInboxPageSizes reads 10-entry pages of the embedded inbox, and
// pages of 10 and 20 entries in turn: one statement plan for both, not one
// compiled again whenever the limit changes (sqlite.Inbox's
// inboxRowsQuery).
func BenchmarkInboxPageSizes(b *testing.B) {
	w := openBenchWorld(b)
	ib := &sqlite.Inbox{DB: w.db}
	for _, sizes := range [][]int{{10}, {10, 20}} {
		b.Run(fmt.Sprint(sizes), func(b *testing.B) {
			i := 0
			for b.Loop() {
				n := sizes[i%len(sizes)]
				if es, err := ib.Page(b.Context(), w.viewer, feed.AtMost(1<<62), 0, n); err != nil || len(es) != n {
					b.Fatalf("page of %d: %d entries, %v", n, len(es), err)
				}
				i++
			}
		})
	}
}

// BenchmarkSetLike is a like or an unlike, in turn, of the viewer of
// openBenchWorld (133 likes, 20 follows).
func BenchmarkSetLike(b *testing.B) {
	w := openBenchWorld(b)
	post, on := w.posts[len(w.posts)-1].ID, false
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	for b.Loop() {
		on = !on
		if err := w.db.SetLike(b.Context(), post, w.viewer, on, now); err != nil {
			b.Fatal(err)
		}
	}
}
