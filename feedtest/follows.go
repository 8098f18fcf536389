package feedtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	feed "github.com/feedd/feedd"
)

// The follow store's part of TestStores.

func wantCounts(t testing.TB, b *Backend, id int64, fans, followee int) {
	t.Helper()
	u := getUser(t, b, id)
	if u.Fans != fans || u.Followee != followee {
		t.Fatalf("user %d has fans %d, followee %d; want %d, %d", id, u.Fans, u.Followee, fans, followee)
	}
}

func isFollowing(t testing.TB, b *Backend, a, c int64) bool {
	t.Helper()
	ok, err := b.Follows.IsFollowing(context.Background(), a, c)
	must(t, err, "IsFollowing")
	return ok
}

// wantFollowJobs fails t unless the jobs enqueued since the last call are
// exactly want, in any order.
func wantFollowJobs(t testing.TB, b *Backend, what string, want ...feed.FollowJob) {
	t.Helper()
	got := b.Jobs()
	key := func(j any) string { return fmt.Sprintf("%#v", j) }
	g := make([]string, len(got))
	for i, j := range got {
		g[i] = key(j)
	}
	w := make([]string, len(want))
	for i, j := range want {
		w[i] = key(j)
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s enqueued %v, want %v", what, g, w)
	}
}

func testFollows(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 3, now)
	a, c, d := ids[0], ids[1], ids[2]
	b.Jobs()
	// follow changes the follow and checks the FollowJob it enqueued: one
	// when the follow row changed, none when it was already in that state.
	follow := func(x, y int64, on, changes bool) {
		t.Helper()
		what := fmt.Sprintf("SetFollow(%d, %d, %v)", x, y, on)
		must(t, b.Follows.SetFollow(ctx, x, y, on, now), what)
		if changes {
			wantFollowJobs(t, b, what, feed.FollowJob{FollowerID: x, FolloweeID: y, Follow: on})
		} else {
			wantFollowJobs(t, b, what+" (no change)")
		}
	}
	follow(a, c, true, true)
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	if !isFollowing(t, b, a, c) || isFollowing(t, b, c, a) {
		t.Fatalf("IsFollowing after a follows c: a→c %v, c→a %v", isFollowing(t, b, a, c), isFollowing(t, b, c, a))
	}
	follow(a, c, true, false) // idempotent: counted once, no second job
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	follow(d, c, true, true)
	follow(c, a, true, true)
	wantCounts(t, b, a, 1, 1)
	wantCounts(t, b, c, 2, 1)
	wantCounts(t, b, d, 0, 1)
	follow(a, c, false, true)
	wantCounts(t, b, a, 1, 0)
	wantCounts(t, b, c, 1, 1)
	if isFollowing(t, b, a, c) {
		t.Fatal("IsFollowing after unfollow = true")
	}
	follow(a, c, false, false) // idempotent: never below zero
	follow(a, d, false, false) // never followed
	wantCounts(t, b, a, 1, 0)
	wantCounts(t, b, c, 1, 1)
	wantCounts(t, b, d, 0, 1)

	missing := d + 1000
	wantCode(t, b.Follows.SetFollow(ctx, a, missing, true, now), feed.ENOTFOUND, "SetFollow of a missing user")
	wantNoJobs(t, b, "a refused SetFollow")
	wantCode(t, b.Follows.SetFollow(ctx, a, missing, false, now), feed.ENOTFOUND, "SetFollow(false) of a missing user")
	wantNoJobs(t, b, "a refused SetFollow")
	wantCounts(t, b, a, 1, 0)
	if isFollowing(t, b, a, missing) {
		t.Fatal("a refused SetFollow left a follow behind")
	}

	// Concurrent follows of one pair count once and enqueue one job;
	// concurrent unfollows too.
	for _, on := range []bool{true, false} {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- b.Follows.SetFollow(ctx, d, a, on, now) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err, "concurrent SetFollow")
		}
		n := 0
		if on {
			n = 1
		}
		wantCounts(t, b, a, 1+n, 0)
		wantCounts(t, b, d, 0, 1+n)
		wantFollowJobs(t, b, fmt.Sprintf("8 concurrent SetFollow(%v)", on), feed.FollowJob{FollowerID: d, FolloweeID: a, Follow: on})
	}
}

// testFollowCounts runs random follows and unfollows and compares the
// counts and the graph with a model.
func testFollowCounts(t *testing.T, b *Backend) {
	ctx := t.Context()
	r := newRand(t)
	now := base()
	ids := newUsers(t, b, 6, now)
	graph := map[[2]int64]bool{}
	for range 150 {
		x, y := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
		if x == y {
			continue
		}
		on := r.IntN(3) > 0
		must(t, b.Follows.SetFollow(ctx, x, y, on, now), "SetFollow")
		graph[[2]int64{x, y}] = on
	}
	for _, x := range ids {
		fans, followee := 0, 0
		for _, y := range ids {
			if graph[[2]int64{y, x}] {
				fans++
			}
			if graph[[2]int64{x, y}] {
				followee++
			}
			if got := isFollowing(t, b, x, y); got != graph[[2]int64{x, y}] {
				t.Fatalf("IsFollowing(%d, %d) = %v, want %v", x, y, got, !got)
			}
		}
		wantCounts(t, b, x, fans, followee)
		var want []int64
		for _, y := range ids {
			if graph[[2]int64{y, x}] {
				want = append(want, y)
			}
		}
		slices.Sort(want)
		got, err := b.Follows.FollowersAfter(ctx, x, 0, 100)
		must(t, err, "FollowersAfter")
		wantIDs(t, fmt.Sprintf("FollowersAfter(%d)", x), got, want)
	}
}

func testFollowersAfter(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	// Users that never follow come first, so that follower ids differ from
	// the order (and any row id) of the follows.
	newUsers(t, b, 5, now)
	star := newUser(t, b, 1, now).ID
	fans := []int64{}
	for i := 0; i < 25; i++ {
		fans = append(fans, newUser(t, b, 100+i, now).ID)
	}
	other := newUser(t, b, 2, now).ID
	shuffled := slices.Clone(fans)
	slices.Reverse(shuffled)
	shuffled = append(shuffled[10:], shuffled[:10]...)
	for _, f := range shuffled {
		must(t, b.Follows.SetFollow(ctx, f, star, true, now), "SetFollow")
	}
	must(t, b.Follows.SetFollow(ctx, star, other, true, now), "SetFollow")
	must(t, b.Follows.SetFollow(ctx, fans[0], other, true, now), "SetFollow")
	var got []int64
	for after := int64(0); ; {
		page, err := b.Follows.FollowersAfter(ctx, star, after, 7)
		must(t, err, "FollowersAfter")
		if len(page) > 7 {
			t.Fatalf("FollowersAfter returned %d ids, limit 7", len(page))
		}
		got = append(got, page...)
		if len(page) < 7 {
			break
		}
		after = page[len(page)-1]
	}
	wantIDs(t, "FollowersAfter, paged", got, fans)
	for _, c := range []struct {
		after int64
		n     int
		want  int64
	}{{0, 1, fans[0]}, {0, 7, fans[6]}, {fans[6], 7, fans[13]}, {0, 25, fans[24]}, {0, 26, 0}, {fans[20], 4, fans[24]}, {fans[20], 5, 0}} {
		got, err := b.Follows.NthFollowerAfter(ctx, star, c.after, c.n)
		must(t, err, "NthFollowerAfter")
		if got != c.want {
			t.Fatalf("NthFollowerAfter(after %d, n %d) = %d, want %d", c.after, c.n, got, c.want)
		}
	}
	page, err := b.Follows.FollowersAfter(ctx, star, fans[10], 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(after a follower)", page, fans[11:16])
	page, err = b.Follows.FollowersAfter(ctx, star, fans[24], 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(after the last)", page, nil)
	page, err = b.Follows.FollowersAfter(ctx, other, 0, 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(other)", page, []int64{star, fans[0]})
	if star > fans[0] {
		t.Fatalf("fixture: star %d created before fans %d", star, fans[0])
	}
	must(t, b.Follows.SetFollow(ctx, fans[3], star, false, now), "SetFollow")
	page, err = b.Follows.FollowersAfter(ctx, star, fans[1], 3)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter after an unfollow", page, []int64{fans[2], fans[4], fans[5]})
	wantCounts(t, b, star, 24, 1)
}

func testCommonFollowees(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 8, now)
	a, c := ids[0], ids[1]
	follow := func(x int64, ys ...int64) {
		for _, y := range ys {
			must(t, b.Follows.SetFollow(ctx, x, y, true, now), "SetFollow")
		}
	}
	follow(a, ids[2], ids[3], ids[4], ids[7], c)
	follow(c, ids[3], ids[4], ids[5], ids[7], a)
	follow(ids[6], ids[2], ids[3], ids[4], ids[5])
	must(t, b.Follows.SetFollow(ctx, c, ids[7], false, now), "SetFollow")
	common := func(x, y int64, limit int) []int64 {
		got, err := b.Follows.CommonFollowees(ctx, x, y, limit)
		must(t, err, "CommonFollowees")
		s := slices.Clone(got)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(got) {
			t.Fatalf("CommonFollowees(%d, %d) = %v has duplicates", x, y, got)
		}
		return s
	}
	wantIDs(t, "CommonFollowees(a, c)", common(a, c, 100), []int64{ids[3], ids[4]})
	wantIDs(t, "CommonFollowees(c, a)", common(c, a, 100), []int64{ids[3], ids[4]})
	wantIDs(t, "CommonFollowees(a, ids[6])", common(a, ids[6], 100), []int64{ids[2], ids[3], ids[4]})
	wantIDs(t, "CommonFollowees with one who follows no one", common(a, ids[5], 100), nil)
	got := common(a, ids[6], 2)
	if len(got) != 2 || !slices.Contains([]int64{ids[2], ids[3], ids[4]}, got[0]) || !slices.Contains([]int64{ids[2], ids[3], ids[4]}, got[1]) {
		t.Fatalf("CommonFollowees(limit 2) = %v", got)
	}
}
