package feedtest_test

import (
	"fmt"
	"testing"

	feed "github.com/feedd/feedd"
)

// The cursor arithmetic of every feed page, without I/O. Compare changes
// with benchstat:
//
//	go test -run '^$' -bench . -count 10 ./feedtest > old.txt

// pageWithTies is a page of n entries whose last tie group holds ties
// entries.
func pageWithTies(n, ties int) []feed.Entry {
	es := make([]feed.Entry, n)
	for i := range es {
		score := int64(1_800_000_000_000 - i)
		if i >= n-ties {
			score = 1_800_000_000_000 - int64(n-ties)
		}
		es[i] = feed.Entry{PostID: int64(10_000_000 - i), Score: score}
	}
	return es
}

func BenchmarkNextCursor(b *testing.B) {
	for _, c := range []struct {
		name    string
		n, ties int
	}{{"page10", 10, 1}, {"page10-ties5", 10, 5}, {"page50-allties", 50, 50}} {
		es := pageWithTies(c.n, c.ties)
		b.Run(c.name, func(b *testing.B) {
			var sink int
			for b.Loop() {
				_, n := feed.NextCursor(es, es[0].Score, 3)
				sink += n
			}
			_ = sink
		})
	}
}

// BenchmarkMergeEntries merges an inbox page with the outboxes of pull-mode
// authors, as a read of a follower of celebrities does.
func BenchmarkMergeEntries(b *testing.B) {
	for _, authors := range []int{1, 10} {
		in := pageWithTies(20, 1)
		var lists [][]feed.Entry
		lists = append(lists, in)
		for a := range authors {
			out := make([]feed.Entry, 20)
			for i := range out {
				out[i] = feed.Entry{PostID: int64(20_000_000 + a*100 + i), Score: int64(1_800_000_000_000 - 2*i - a)}
			}
			lists = append(lists, out)
		}
		b.Run(fmt.Sprintf("outboxes=%d", authors), func(b *testing.B) {
			for b.Loop() {
				feed.MergeEntries(lists...)
			}
		})
	}
}
