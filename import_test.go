package feed_test

import (
	"fmt"
	"testing"

	feed "github.com/feedd/feedd"
)

func fmtEntries(es []feed.Entry) string { return fmt.Sprint(es) }

// TestBuiltInbox: own posts all come, each followee's newest backfill,
// the newest cap of all in feed order, each entry once.
func TestBuiltInbox(t *testing.T) {
	e := func(score, post int64) feed.Entry { return feed.Entry{Score: score, PostID: post} }
	own := []feed.Entry{e(9, 9), e(5, 5), e(1, 1)}
	a := []feed.Entry{e(8, 8), e(7, 7), e(2, 2)}
	b := []feed.Entry{e(9, 9), e(6, 6)} // shares an entry with own
	if got := feed.BuiltInbox(own, [][]feed.Entry{a, b}, 2, 100); fmtEntries(got) != fmtEntries([]feed.Entry{e(9, 9), e(8, 8), e(7, 7), e(6, 6), e(5, 5), e(1, 1)}) {
		t.Fatalf("backfill 2: %s", fmtEntries(got))
	}
	if got := feed.BuiltInbox(own, [][]feed.Entry{a, b}, 200, 4); fmtEntries(got) != fmtEntries([]feed.Entry{e(9, 9), e(8, 8), e(7, 7), e(6, 6)}) {
		t.Fatalf("cap 4: %s", fmtEntries(got))
	}
}
