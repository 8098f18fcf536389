package feed_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	feed "github.com/feedd/feedd"
)

// TestCommentCursor: every kind of comment cursor reads back as it was
// written, only for its own list; a top cursor holding its whole order
// (200 ids of a post spread over a large id range) stays short enough for
// a URL; anything else, or a cursor tampered with, is refused.
func TestCommentCursor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	top := make([]int64, feed.TopCommentsKept)
	for i := range top {
		top[i] = 1 + r.Int64N(1<<40)
	}
	cursors := []feed.CommentCursor{
		{Order: feed.CommentOrderNew, Key: feed.Entry{Score: 1_800_000_000_000, PostID: 42}},
		{Order: "replies", Thread: 7, Key: feed.Entry{Score: 1_800_000_000_001, PostID: 43}},
		{Order: feed.CommentOrderTop, Top: top, Pos: 20, Since: 1_800_000_000_002},
		{Order: feed.CommentOrderTop, Top: top, Pos: feed.TopCommentsKept, Since: 5, Tail: true, InTail: true, Key: feed.Entry{Score: 4, PostID: 9}},
		{Order: feed.CommentOrderTop, Top: []int64{3, 1, 2}, Pos: 1},
	}
	for _, c := range cursors {
		s := feed.EncodeCommentCursor(c)
		if len(s) > 2000 {
			t.Fatalf("a %s cursor of %d ids is %d bytes long", c.Order, len(c.Top), len(s))
		}
		got, err := feed.DecodeCommentCursor(s, c.Order)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("%s cursor read back as %+v, %v", c.Order, got, err)
		}
		for _, other := range []string{feed.CommentOrderNew, feed.CommentOrderTop, "replies"} {
			if other != c.Order {
				if _, err := feed.DecodeCommentCursor(s, other); feed.ErrorCode(err) != feed.EINVALID {
					t.Fatalf("a %s cursor passed for %s: %v", c.Order, other, err)
				}
			}
		}
		if _, err := feed.DecodeCommentCursor(s[:len(s)-2], c.Order); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("a truncated %s cursor passed: %v", c.Order, err)
		}
	}
	for _, bad := range []string{"", "x", "YzE6bmV3OjE6MA", feed.EncodeCursor(feed.Cursor{Score: 1, PostID: 2})} {
		for _, order := range []string{feed.CommentOrderNew, feed.CommentOrderTop, "replies"} {
			if _, err := feed.DecodeCommentCursor(bad, order); feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("cursor %q passed for %s", bad, order)
			}
		}
	}
	t.Logf("a top cursor of %d ids: %d bytes", len(top), len(feed.EncodeCommentCursor(cursors[2])))
}
