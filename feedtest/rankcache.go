package feedtest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	feed "github.com/feedd/feedd"
)

// testRankCache checks the ranked timeline's per-process cache (post
// facts, like counts, each viewer's likes and follows): after every change
// made through the service (like, unlike, another user's like, unfollow,
// follow, delete, block) the first ranked page, warm cache and all, ranks
// exactly as a service without the cache, and so it does after new posts
// (the candidates the cache holds merged with the head of the stream); a
// like made through another process shows once the TTLs have passed, and
// not before.
func testRankCache(t *testing.T, b *Backend) {
	ctx := t.Context()
	w := newWorld(t, b, newRand(t))
	svc := w.svc // the default settings: the cache on
	rs := feed.DefaultRankSettings()
	if rs.CountsTTL <= 0 || rs.ViewerTTL <= 0 {
		t.Fatalf("default settings %+v: the cache is off", rs)
	}
	plain := newService(b, &w.clock)
	off := rs
	off.CountsTTL, off.ViewerTTL = 0, 0
	plain.Rank = &off

	a1, a2, a3 := w.authors[2], w.authors[3], w.authors[4]
	feedAuthors := []int64{w.v1, a1, a2, a3}
	byAuthor := map[int64][]int64{}
	for i := range 32 {
		w.clock.Add(int64(1 + w.r.IntN(60_000)))
		p := w.publish(feedAuthors[i%len(feedAuthors)])
		byAuthor[p.UserID] = append(byAuthor[p.UserID], p.ID)
	}
	for _, id := range byAuthor[a2][:4] {
		must(t, svc.SetLike(ctx, w.v1, id, true), "SetLike")
	}
	for _, id := range byAuthor[a1][:3] {
		must(t, svc.SetLike(ctx, w.v2, id, true), "SetLike")
	}
	for _, id := range byAuthor[w.v1][:2] {
		must(t, svc.SetLike(ctx, a2, id, true), "SetLike")
	}

	ranks := func(s *feed.Service) ([]int64, []feed.Rank) {
		t.Helper()
		page, err := s.RankedTimeline(ctx, w.v1, nil, 50)
		must(t, err, "RankedTimeline")
		ids := viewIDs(page.List)
		rs := make([]feed.Rank, len(page.List))
		for i, v := range page.List {
			rs[i] = *v.Rank
		}
		return ids, rs
	}
	same := func(what string) bool {
		t.Helper()
		ids, got := ranks(svc)
		wantIDs, want := ranks(plain)
		if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
			t.Logf("%s: ranked %v, without the cache %v", what, ids, wantIDs)
			return false
		}
		for i := range got {
			if math.Abs(got[i].Score-want[i].Score) > 1e-9 {
				t.Logf("%s: post %d rank %v, without the cache %v", what, ids[i], got[i], want[i])
				return false
			}
			for name, x := range want[i].Features {
				if math.Abs(got[i].Features[name]-x) > 1e-9 {
					t.Logf("%s: post %d rank %v, without the cache %v", what, ids[i], got[i], want[i])
					return false
				}
			}
		}
		return true
	}
	check := func(what string) {
		t.Helper()
		if !same(what) {
			t.Fatalf("%s: the cached ranking differs", what)
		}
	}
	check("warming the cache")
	check("with the cache warm")

	// The candidates the cache holds: a first page reads only the head of
	// the stream and merges it into them, or all of them again when the
	// head holds none of them (more new entries than its 20).
	feedPublish := func(n int) {
		t.Helper()
		for i := range n {
			w.clock.Add(int64(1 + w.r.IntN(1000)))
			p := w.publish(feedAuthors[i%len(feedAuthors)])
			byAuthor[p.UserID] = append(byAuthor[p.UserID], p.ID)
		}
	}
	feedPublish(3)
	check("after new posts (the head of the stream merged)")
	feedPublish(25)
	check("after more new posts than the head read")
	w.clock.Add(-2500) // a post that sorts below the newest ones
	p := w.publish(a3)
	byAuthor[a3] = append(byAuthor[a3], p.ID)
	w.clock.Add(5000)
	check("after a post that sorts below the newest")

	liked := byAuthor[a3][0]
	must(t, svc.SetLike(ctx, w.v1, liked, true), "SetLike")
	check("after the viewer's like")
	must(t, svc.SetLike(ctx, w.v1, liked, false), "SetLike")
	check("after the viewer's unlike")
	_, err := svc.ToggleLike(ctx, w.v2, byAuthor[a3][1])
	must(t, err, "ToggleLike")
	check("after another user's like")

	w.clock.Add(1000) // within the TTLs
	must(t, svc.Follow(ctx, w.v1, a3, false), "Follow")
	check("after an unfollow")
	w.clock.Add(1000) // within the TTLs
	must(t, svc.Follow(ctx, w.v1, a3, true), "Follow")
	check("after a new follow (follow_age)")

	w.delete(byAuthor[a1][1])
	check("after a delete")
	// v1 blocks a2: a2's likes of v1's posts go (their counts drop), and
	// the follows.
	must(t, svc.Block(ctx, w.v1, a2, true), "Block")
	check("after a block")

	// Another process (another Service, its own cache) likes for v1: this
	// one shows it once its TTLs have passed.
	other := newService(b, &w.clock)
	must(t, other.SetLike(ctx, w.v1, byAuthor[a1][2], true), "SetLike through another process")
	if same("a like through another process, within the TTLs") {
		t.Fatalf("a like through another process shows at once: is the cache on?")
	}
	w.clock.Add(max(rs.CountsTTL, rs.ViewerTTL).Milliseconds() + 1)
	check(fmt.Sprintf("a like through another process, %v later", max(rs.CountsTTL, rs.ViewerTTL)))

	// A post published through another process is in the head of the
	// stream: it is a candidate at once.
	check("the cache warm again")
	op, err := other.Publish(ctx, a1, feed.PostInput{Title: "from another process", Content: "<p>hello</p>"})
	must(t, err, "Publish through another process")
	w.posts[op.ID] = op
	w.order = append(w.order, op.ID)
	w.drain()
	check("after a post published through another process")

	// A pull-mode author: their new posts are in their outbox only, merged
	// when the stream is read, for a caller the cache holds nothing of and
	// for one it holds (the mode is set in the store, as the follow jobs
	// of another process would).
	must(t, b.Social.SetMode(ctx, a3, feed.PullMode), "SetMode")
	pullPublish := func() *feed.Post { // what the fan-out does for a pull-mode author
		t.Helper()
		w.clock.Add(int64(1 + w.r.IntN(1000)))
		p, err := svc.Publish(ctx, a3, feed.PostInput{Title: "pulled", Content: "<p>hello</p>"})
		must(t, err, "Publish")
		w.posts[p.ID] = p
		w.order = append(w.order, p.ID)
		for _, j := range b.Jobs() {
			if j, ok := j.(feed.FanoutJob); ok {
				e := feed.Entry{PostID: j.PostID, Score: j.Score}
				must(t, b.Outbox.Add(ctx, j.AuthorID, e), "Outbox.Add")
				must(t, b.Inbox.Deliver(ctx, e, []int64{j.AuthorID}), "Deliver")
			}
		}
		return p
	}
	w.clock.Add(rs.ViewerTTL.Milliseconds() + 1) // the caller's entry expires
	for range 3 {
		pullPublish()
	}
	check("a pull-mode author's posts, the caller read anew")
	pp := pullPublish()
	check("a pull-mode author's new post, the caller cached")
	ids, _ := ranks(svc)
	if !slices.Contains(ids, pp.ID) {
		t.Fatalf("the pull-mode author's new post %d is not ranked: %v", pp.ID, ids)
	}
}
