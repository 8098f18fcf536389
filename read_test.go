package feed_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	feed "github.com/feedd/feedd"
)

func TestMergeEntries(t *testing.T) {
	e := func(score, id int64) feed.Entry { return feed.Entry{PostID: id, Score: score} }
	got := feed.MergeEntries(
		[]feed.Entry{e(9, 3), e(5, 2), e(5, 1)},
		[]feed.Entry{e(7, 8), e(5, 2)}, // 5/2 both pushed and in an outbox
		nil,
		[]feed.Entry{e(5, 4)},
	)
	want := []feed.Entry{e(9, 3), e(7, 8), e(5, 4), e(5, 2), e(5, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("MergeEntries = %v, want %v", got, want)
	}
	if got := feed.MergeEntries(); len(got) != 0 {
		t.Fatalf("MergeEntries() = %v", got)
	}
}

// TestMergeEntriesProperty: merging any split of a feed, with overlaps,
// gives the feed back.
func TestMergeEntriesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		all := randomFeed(r, r.IntN(50))
		lists := make([][]feed.Entry, 1+r.IntN(4))
		for _, e := range all {
			for i := range lists {
				if r.IntN(len(lists)) == 0 || i == 0 && r.IntN(2) == 0 {
					lists[i] = append(lists[i], e)
				}
			}
		}
		var want []feed.Entry
		for _, e := range all {
			for _, l := range lists {
				if slices.Contains(l, e) {
					want = append(want, e)
					break
				}
			}
		}
		if got := feed.MergeEntries(lists...); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("MergeEntries(%v) = %v, want %v", lists, got, want)
		}
	}
}
