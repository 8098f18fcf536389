package feedtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// testCommentCursor scrolls a post's comments (or a thread's replies) in
// order with random page sizes while other goroutines add comments, delete
// some, and like and unlike them: a scroll never repeats a comment, shows
// only comments that existed when it began or were added during it, and
// shows every comment that existed when it began and was not deleted.
// In the new order and in replies, it is also in order.
func testCommentCursor(t *testing.T, b *Backend, order string, n int) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	r := newRand(t)
	users := w.users(12)
	p := w.post(users[0])
	var thread int64
	if order == "replies" {
		thread = w.comment(users[1], p.ID, "thread").ID
	}
	add := func(i int) (*feed.CommentView, error) {
		if thread != 0 {
			return w.add(users[i%len(users)], p.ID, thread, fmt.Sprintf("c%d", i))
		}
		return w.add(users[i%len(users)], p.ID, 0, fmt.Sprintf("c%d", i))
	}
	var start []int64
	deletable := map[int64]bool{}
	for i := range n {
		v, err := add(i)
		must(t, err, "add")
		start = append(start, v.ID)
		if r.IntN(5) == 0 {
			deletable[v.ID] = true
		}
		if r.IntN(3) == 0 {
			must(t, w.s.SetCommentLike(ctx, users[r.IntN(len(users))], v.ID, true), "like")
		}
	}
	for rounds := range 3 {
		var stop atomic.Bool
		var added sync.Map
		errc := make(chan error, 1)
		seed := r.Uint64()
		go func() {
			r := rand.New(rand.NewPCG(seed, 1))
			var err error
			for i := 0; !stop.Load() && err == nil; i++ {
				id := start[r.IntN(len(start))]
				switch k := r.IntN(10); {
				case k < 3:
					var v *feed.CommentView
					if v, err = add(n + rounds*100000 + i); err == nil {
						added.Store(v.ID, true)
					}
				case k < 4 && deletable[id]:
					c, gerr := b.Comments.Comment(ctx, id)
					if gerr == nil && !c.Deleted {
						err = w.s.DeleteComment(ctx, c.UserID, id)
					}
				default:
					err = w.s.SetCommentLike(ctx, users[r.IntN(len(users))], id, r.IntN(2) == 0)
				}
				if feed.ErrorCode(err) == feed.ENOTFOUND {
					err = nil // deleted meanwhile
				}
			}
			errc <- err
		}()
		seen := map[int64]bool{}
		var keys []feed.Entry
		var cur *feed.CommentCursor
		for pages := 0; ; pages++ {
			size := 1 + r.IntN(9)
			var page *feed.CommentPage
			var err error
			if thread != 0 {
				page, err = w.s.CommentReplies(ctx, users[2], thread, cur, size)
			} else {
				page, err = w.s.PostComments(ctx, users[2], p.ID, order, cur, size)
			}
			must(t, err, "page")
			for _, v := range page.List {
				if seen[v.ID] {
					stop.Store(true)
					t.Fatalf("round %d page %d repeats comment %d", rounds, pages, v.ID)
				}
				seen[v.ID] = true
				keys = append(keys, v.Key())
			}
			if page.Next == nil {
				break
			}
			if pages > 10*n {
				t.Fatal("scroll does not end")
			}
			cur = roundTrip(t, *page.Next, map[bool]string{true: "replies", false: order}[thread != 0])
		}
		stop.Store(true)
		must(t, <-errc, "concurrent writes")
		for id := range seen { // once the writes are over: an add is known when it returns
			if _, new := added.Load(id); !new && !slices.Contains(start, id) {
				t.Fatalf("round %d: comment %d is neither from the start nor added", rounds, id)
			}
		}
		for _, id := range start {
			if !seen[id] && !deletable[id] {
				t.Fatalf("round %d: comment %d, there at the start and never deleted, was not shown (%d seen)", rounds, id, len(seen))
			}
		}
		switch {
		case order == feed.CommentOrderNew && !slices.IsSortedFunc(keys, feed.CompareEntries):
			t.Fatalf("new order out of order: %v", fmtEntries(keys))
		case thread != 0 && !slices.IsSortedFunc(keys, func(a, b feed.Entry) int { return b.Compare(a) }):
			t.Fatalf("replies out of order: %v", fmtEntries(keys))
		}
		// What was added joins the set every later round must show.
		added.Range(func(k, _ any) bool { start = append(start, k.(int64)); return true })
		for id := range deletable {
			if c, err := b.Comments.Comment(ctx, id); err != nil || c.Deleted {
				start = slices.DeleteFunc(start, func(x int64) bool { return x == id })
			}
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return
		}
	}
}

// testCommentRanked: in the ranked timeline, a post commented on by someone
// the viewer interacts with (whose post the viewer liked) ranks above an
// otherwise equal, newer one; its author's own comments do not count.
func testCommentRanked(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(4)
	v, a, bo, c := u[0], u[1], u[2], u[3]
	for _, x := range []int64{a, bo, c} {
		must(t, b.Follows.SetFollow(ctx, v, x, true, time.UnixMilli(w.clock.Load())), "SetFollow")
	}
	publish := func(author int64) int64 {
		w.tick()
		p, err := w.s.Publish(ctx, author, feed.PostInput{Title: "t", Content: "c"})
		must(t, err, "Publish")
		must(t, RunJobs(ctx, b), "RunJobs")
		return p.ID
	}
	pc := publish(c)
	must(t, w.s.SetLike(ctx, v, pc, true), "SetLike")
	pb := publish(bo)
	pa := publish(a)
	w.comment(a, pa, "the author's own comment")
	w.comment(c, pb, "c talks about b's post")
	page, err := w.s.RankedTimeline(ctx, v, nil, 10)
	must(t, err, "RankedTimeline")
	var ids []int64
	feature := map[int64]float64{}
	for _, p := range page.List {
		ids = append(ids, p.ID)
		feature[p.ID] = p.Rank.Features["comments"]
	}
	if len(ids) < 2 || ids[0] != pb || ids[1] != pa {
		t.Fatalf("ranked %v, want %d (commented on by someone the viewer likes) before %d", ids, pb, pa)
	}
	if feature[pb] != 0.5 || feature[pa] != 0 {
		t.Fatalf("comments features %v, want 0.5 for %d and 0 for %d", feature, pb, pa)
	}
}
