package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/inmem"
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

// BenchmarkRankInputs is the one statement of sqlite.DB.RankInputs.
func BenchmarkRankInputs(b *testing.B) {
	w := openBenchWorld(b)
	for _, n := range []int{150, 300} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ids, now := rankIDs(w, n), time.UnixMilli(1_800_000_000_000).Add(time.Hour)
			for b.Loop() {
				if _, _, err := w.db.RankInputs(b.Context(), w.viewer, ids, now.Add(-720*time.Hour), now, 168*time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRankFacts is the one statement of sqlite.DB.RankFacts for 150
// candidates: cold, every post read (read=150), and warm, the posts known
// to the ranked timeline's cache, only the viewer's likes and follows of
// their authors read (read=0).
func BenchmarkRankFacts(b *testing.B) {
	w := openBenchWorld(b)
	ids, now := rankIDs(w, 150), time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	var authors []int64
	for _, p := range w.posts[len(w.posts)-150:] {
		authors = append(authors, p.UserID)
	}
	slices.Sort(authors)
	authors = slices.Compact(authors)
	for _, read := range []int{150, 0} {
		b.Run(fmt.Sprintf("read=%d", read), func(b *testing.B) {
			as := authors
			if read > 0 {
				as = nil
			}
			for b.Loop() {
				if _, err := w.db.RankFacts(b.Context(), w.viewer, ids[:read], as, slices.Min(ids), now.Add(-720*time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRankCandidatesAffinity is the same through the two statements
// of feed.RankStore.
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
// first chronological one. The ranked timeline's cache (rankCache) is
// warm after the first page (stale=1: only its like counts are never
// fresh, so each page reads the posts, RankPosts);
// BenchmarkRankedFirstPageCold starts each page on a new Service, the
// cache empty.
func BenchmarkRankedFirstPage(b *testing.B) {
	w := openBenchWorld(b)
	w.svc.Snapshots = &inmem.Snapshots{}
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	w.svc.Now = func() time.Time { return now }
	for _, c := range []struct{ n, stale int }{{150, 0}, {300, 0}, {150, 1}} {
		name := fmt.Sprint(c.n)
		if c.stale > 0 {
			name += "/stale=1"
		}
		b.Run(name, func(b *testing.B) {
			rs := feed.DefaultRankSettings()
			rs.Candidates = c.n
			svc := w.svc
			if c.stale > 0 {
				rs.CountsTTL = 0
				svc = benchService(w, &rs, now) // a cache of its own
			}
			svc.Rank = &rs
			cpu, n := cpuTime(), 0
			for b.Loop() {
				if _, err := svc.RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}

func BenchmarkRankedFirstPageCold(b *testing.B) {
	w := openBenchWorld(b)
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	for _, ttl := range []time.Duration{0, time.Minute} {
		b.Run(fmt.Sprintf("ttl=%v", ttl), func(b *testing.B) {
			rs := feed.DefaultRankSettings()
			rs.CountsTTL, rs.ViewerTTL = ttl, ttl
			cpu, n := cpuTime(), 0
			for b.Loop() {
				n++
				if _, err := benchService(w, &rs, now).RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}

// benchService is a new Service on w's stores (its caches empty), with
// rs, snapshots in memory and the clock stopped at now.
func benchService(w *benchWorld, rs *feed.RankSettings, now time.Time) *feed.Service {
	return &feed.Service{Users: w.db, Auth: w.db, Posts: w.db, Follows: w.db, Social: w.db, Outbox: w.svc.Outbox, Inbox: w.svc.Inbox,
		Filters: w.db, Ranks: w.db, Snapshots: &inmem.Snapshots{}, Rank: rs, Now: func() time.Time { return now }}
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
// pages of 10 and 20 entries in turn (a chronological page and a ranked
// page's head read): one statement plan for both, not one compiled again
// whenever the limit changes (sqlite.Inbox's inboxRowsQuery).
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

// BenchmarkRankedFirstPageAfterLike is a first ranked page right after
// the caller's own like or unlike (not timed): the cache reads the
// caller's likes and follows again, and keeps the candidates.
func BenchmarkRankedFirstPageAfterLike(b *testing.B) {
	w := openBenchWorld(b)
	w.svc.Snapshots = &inmem.Snapshots{}
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	w.svc.Now = func() time.Time { return now }
	post, on := w.posts[len(w.posts)-1].ID, false
	if _, err := w.svc.RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		on = !on
		if err := w.svc.SetLike(b.Context(), w.viewer, post, on); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := w.svc.RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRankedFirstPageColdViewer is a caller's first ranked page when
// the ranked timeline's cache knows the candidate posts (other callers
// read them) but not the caller: their candidate entries and their likes
// and follows are read (the first page of each viewer in `feedd bench
// rank`). The clock moves on by more than ViewerTTL between pages.
func BenchmarkRankedFirstPageColdViewer(b *testing.B) {
	w := openBenchWorld(b)
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	rs := feed.DefaultRankSettings()
	rs.ViewerTTL, rs.CountsTTL = time.Millisecond, time.Hour
	svc := benchService(w, &rs, now)
	svc.Now = func() time.Time { return now }
	cpu, n := cpuTime(), 0
	for b.Loop() {
		now = now.Add(2 * time.Millisecond)
		if _, err := svc.RankedTimeline(b.Context(), w.viewer, nil, 10); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
}

// BenchmarkSetLike is a like or an unlike, in turn, of the viewer of
// openBenchWorld (133 likes, 20 follows): what keeping the rank profile
// (rankprofile.go) costs a like.
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
