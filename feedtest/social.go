package feedtest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestSocial runs the contract of feed.SocialStore (mutes, blocks and their
// effect on follows, the follow lists, modes, activity) and of feed.Outbox,
// and checks that users carry their mode and activity time. open must return
// an empty backend with Social and Outbox set on every call; Social must be
// the store behind Users and Follows.
func TestSocial(t *testing.T, open func(t *testing.T) *Backend) {
	o := func(t *testing.T) *Backend {
		b := open(t)
		if b.Social == nil || b.Outbox == nil {
			t.Fatal("TestSocial needs a Backend with Social and Outbox")
		}
		return b
	}
	t.Run("Users", func(t *testing.T) { testSocialUsers(t, o(t)) })
	t.Run("Mutes", func(t *testing.T) { testMutes(t, o(t)) })
	t.Run("Blocks", func(t *testing.T) { testBlocks(t, o(t)) })
	t.Run("Lists", func(t *testing.T) { testSocialLists(t, o(t)) })
	t.Run("Modes", func(t *testing.T) { testModes(t, o(t)) })
	t.Run("PullFollowees", func(t *testing.T) { testPullFollowees(t, o(t)) })
	t.Run("PullConcurrent", func(t *testing.T) { testPullConcurrent(t, o(t)) })
	t.Run("Touch", func(t *testing.T) { testTouch(t, o(t)) })
	t.Run("ActiveFollowersAfter", func(t *testing.T) { testActiveFollowers(t, o(t)) })
	t.Run("Concurrent", func(t *testing.T) { testSocialConcurrent(t, o(t)) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, o(t)) })
}

// wantMessage fails t unless err carries code and message.
func wantMessage(t testing.TB, err error, code, message, what string) {
	t.Helper()
	wantCode(t, err, code, what)
	if got := feed.ErrorMessage(err); got != message {
		t.Fatalf("%s: message %q, want %q", what, got, message)
	}
}

// setFollow follows or unfollows and forgets the jobs it enqueued.
func setFollow(t testing.TB, b *Backend, x, y int64, on bool, now time.Time) {
	t.Helper()
	must(t, b.Follows.SetFollow(context.Background(), x, y, on, now), fmt.Sprintf("SetFollow(%d, %d, %v)", x, y, on))
	b.Jobs()
}

func wantUser(t testing.TB, what string, u *feed.User, mode feed.Mode, activeAt time.Time) {
	t.Helper()
	if u == nil {
		t.Fatalf("%s: no user", what)
	}
	if u.Mode != mode || !u.ActiveAt.Equal(activeAt) {
		t.Fatalf("%s: user %d has Mode %d, ActiveAt %v; want %d, %v", what, u.ID, u.Mode, u.ActiveAt, mode, activeAt)
	}
}

func testSocialUsers(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := newUser(t, b, 1, now)
	wantUser(t, "a new user", u, feed.PushMode, now)
	v := newUser(t, b, 2, now.Add(time.Minute))
	wantUser(t, "a new user", v, feed.PushMode, now.Add(time.Minute))
	again, err := b.Users.FindOrCreateUser(ctx, phone(1), "user_again", now.Add(time.Hour))
	must(t, err, "FindOrCreateUser")
	wantUser(t, "FindOrCreateUser of an existing phone", again, feed.PushMode, now)

	must(t, b.Social.SetMode(ctx, u.ID, feed.PullMode), "SetMode")
	prev, err := b.Social.Touch(ctx, u.ID, now.Add(2*time.Hour), time.Hour)
	must(t, err, "Touch")
	if !prev.Equal(now) {
		t.Fatalf("Touch returned %v, want the creation time %v", prev, now)
	}
	wantUser(t, "User after SetMode and Touch", getUser(t, b, u.ID), feed.PullMode, now.Add(2*time.Hour))
	m, err := b.Users.Users(ctx, []int64{u.ID, v.ID})
	must(t, err, "Users")
	wantUser(t, "Users", m[u.ID], feed.PullMode, now.Add(2*time.Hour))
	wantUser(t, "Users", m[v.ID], feed.PushMode, now.Add(time.Minute))
	again, err = b.Users.FindOrCreateUser(ctx, phone(1), "user_again", now.Add(3*time.Hour))
	must(t, err, "FindOrCreateUser")
	wantUser(t, "FindOrCreateUser after SetMode and Touch", again, feed.PullMode, now.Add(2*time.Hour))
}

func testMutes(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 5, now)
	viewer, f1, f2, other, lone := ids[0], ids[1], ids[2], ids[3], ids[4]
	missing := lone + 1000
	setFollow(t, b, viewer, f1, true, now)
	setFollow(t, b, viewer, f2, true, now)
	setFollow(t, b, f2, f1, true, now)
	mute := func(x, y int64, on bool) {
		t.Helper()
		must(t, b.Social.SetMute(ctx, x, y, on, now), fmt.Sprintf("SetMute(%d, %d, %v)", x, y, on))
		wantNoJobs(t, b, "SetMute")
	}
	visible := func(v int64, authors []int64, want ...int64) {
		t.Helper()
		got, err := b.Social.Visible(ctx, v, authors)
		must(t, err, "Visible")
		var ids []int64
		for id, ok := range got {
			if ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		wantIDs(t, fmt.Sprintf("Visible(%d, %v)", v, authors), ids, want)
	}
	muted := func(v int64, want ...int64) {
		t.Helper()
		got, err := b.Social.Muted(ctx, v, 0, 100)
		must(t, err, "Muted")
		wantIDs(t, fmt.Sprintf("Muted(%d)", v), got, want)
	}
	all := []int64{viewer, f1, f2, other, missing, f1}

	wantMessage(t, b.Social.SetMute(ctx, viewer, viewer, true, now), feed.EINVALID, "you cannot mute yourself", "SetMute of oneself")
	wantMessage(t, b.Social.SetMute(ctx, viewer, viewer, false, now), feed.EINVALID, "you cannot mute yourself", "SetMute(false) of oneself")
	wantCode(t, b.Social.SetMute(ctx, viewer, missing, true, now), feed.ENOTFOUND, "SetMute of a missing user")
	wantCode(t, b.Social.SetMute(ctx, viewer, missing, false, now), feed.ENOTFOUND, "SetMute(false) of a missing user")
	muted(viewer)
	visible(viewer, all, viewer, f1, f2)

	mute(viewer, f1, true)
	mute(viewer, f1, true) // idempotent
	muted(viewer, f1)
	visible(viewer, all, viewer, f2)
	mute(viewer, other, true) // muting someone not followed
	muted(viewer, min(f1, other), max(f1, other))
	visible(viewer, all, viewer, f2)
	// Mutes are the muter's own: the follow and counts stay, f2's feed keeps f1.
	if !isFollowing(t, b, viewer, f1) {
		t.Fatal("SetMute removed a follow")
	}
	wantCounts(t, b, viewer, 0, 2)
	wantCounts(t, b, f1, 2, 0)
	visible(f2, []int64{f1, f2, viewer}, f1, f2)
	muted(f2)

	mute(viewer, f1, false)
	mute(viewer, f1, false) // idempotent
	mute(viewer, lone, false)
	muted(viewer, other)
	visible(viewer, all, viewer, f1, f2)
	visible(viewer, nil)
	visible(lone, append(all, lone), lone)
	visible(lone, []int64{f1})
}

func testBlocks(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 5, now)
	a, c, d, e, f := ids[0], ids[1], ids[2], ids[3], ids[4]
	missing := f + 1000
	setFollow(t, b, a, c, true, now)
	setFollow(t, b, c, a, true, now)
	setFollow(t, b, d, c, true, now)
	setFollow(t, b, a, e, true, now)
	// block sets a block and checks what it reports (changed) and the
	// follow jobs it enqueued (removed).
	block := func(x, y int64, on, changed bool, removed ...feed.FollowJob) {
		t.Helper()
		what := fmt.Sprintf("SetBlock(%d, %d, %v)", x, y, on)
		got, err := b.Social.SetBlock(ctx, x, y, on, now)
		must(t, err, what)
		if got != changed {
			t.Fatalf("%s reported changed = %v, want %v", what, got, changed)
		}
		wantFollowJobs(t, b, what, removed...)
	}
	blocked := func(x int64, want ...int64) {
		t.Helper()
		got, err := b.Social.Blocked(ctx, x, 0, 100)
		must(t, err, "Blocked")
		wantIDs(t, fmt.Sprintf("Blocked(%d)", x), got, want)
	}
	refused := func(x, y int64) {
		t.Helper()
		what := fmt.Sprintf("SetFollow(%d, %d) across a block", x, y)
		wantMessage(t, b.Follows.SetFollow(ctx, x, y, true, now), feed.EFORBIDDEN, "you cannot follow this user", what)
		wantNoJobs(t, b, what)
		if isFollowing(t, b, x, y) {
			t.Fatalf("%s left a follow", what)
		}
	}
	unfollow := func(x, y int64) {
		t.Helper()
		must(t, b.Follows.SetFollow(ctx, x, y, false, now), "SetFollow(false) across a block")
		wantNoJobs(t, b, "an unfollow of no follow")
	}

	setBlock := func(x, y int64, on bool) error {
		_, err := b.Social.SetBlock(ctx, x, y, on, now)
		return err
	}
	wantMessage(t, setBlock(a, a, true), feed.EINVALID, "you cannot block yourself", "SetBlock of oneself")
	wantMessage(t, setBlock(a, a, false), feed.EINVALID, "you cannot block yourself", "SetBlock(false) of oneself")
	wantCode(t, setBlock(a, missing, true), feed.ENOTFOUND, "SetBlock of a missing user")
	wantCode(t, setBlock(a, missing, false), feed.ENOTFOUND, "SetBlock(false) of a missing user")
	wantNoJobs(t, b, "refused SetBlock")
	wantCounts(t, b, a, 1, 2)
	blocked(a)

	// a blocks c: the follows both ways go, each with its job and counts.
	block(a, c, true, true, feed.FollowJob{FollowerID: a, FolloweeID: c}, feed.FollowJob{FollowerID: c, FolloweeID: a})
	if isFollowing(t, b, a, c) || isFollowing(t, b, c, a) {
		t.Fatal("a follow across a block survived it")
	}
	wantCounts(t, b, a, 0, 1) // still follows e
	wantCounts(t, b, c, 1, 0) // still followed by d
	wantCounts(t, b, d, 0, 1)
	wantCounts(t, b, e, 1, 0)
	block(a, c, true, false) // idempotent: nothing more to remove
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	blocked(a, c)
	blocked(c)

	// Neither may follow the other while the block stands; unfollows are fine.
	refused(c, a)
	refused(a, c)
	unfollow(a, c)
	unfollow(c, a)
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	if v, err := b.Social.Visible(ctx, a, []int64{c}); err != nil || v[c] {
		t.Fatalf("Visible(blocker, blocked) = %v, %v; want not visible", v, err)
	}

	// A block removes only the follows that exist: one direction here, and
	// none between e and f.
	block(d, c, true, true, feed.FollowJob{FollowerID: d, FolloweeID: c})
	wantCounts(t, b, c, 0, 0)
	wantCounts(t, b, d, 0, 0)
	block(e, f, true, true)
	blocked(e, f)

	// Both block each other: lifting one block is not enough.
	block(c, a, true, true)
	block(a, c, false, true)
	block(a, c, false, false) // idempotent
	blocked(a)
	blocked(c, a)
	refused(a, c)
	refused(c, a)
	block(c, a, false, true)
	blocked(c)

	// Unblocked: follows are allowed again, with their jobs.
	must(t, b.Follows.SetFollow(ctx, a, c, true, now), "SetFollow after unblock")
	wantFollowJobs(t, b, "SetFollow after unblock", feed.FollowJob{FollowerID: a, FolloweeID: c, Follow: true})
	wantCounts(t, b, a, 0, 2)
	wantCounts(t, b, c, 1, 0)
	block(e, f, false, true)
	setFollow(t, b, f, e, true, now)
	wantCounts(t, b, e, 2, 0)
}

// pageAllIDs reads a keyset-paged list of ids, pages of limit, and checks
// each page is ascending past its after.
func pageAllIDs(t testing.TB, what string, limit int, list func(after int64, limit int) ([]int64, error)) []int64 {
	t.Helper()
	var out []int64
	for after := int64(0); ; {
		page, err := list(after, limit)
		must(t, err, what)
		if len(page) > limit {
			t.Fatalf("%s(after %d) returned %d ids, limit %d", what, after, len(page), limit)
		}
		for _, id := range page {
			if id <= after {
				t.Fatalf("%s(after %d) = %v: not ascending past after", what, after, page)
			}
			after = id
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
	}
}

func testSocialLists(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	newUsers(t, b, 3, now) // ids that are in no list
	hub := newUser(t, b, 1, now).ID
	var others []int64
	for i := range 17 {
		others = append(others, newUser(t, b, 100+i, now).ID)
	}
	outsider := newUser(t, b, 2, now).ID
	r := newRand(t)
	pick := func() []int64 { // a random subset, in random order
		var s []int64
		for _, id := range others {
			if r.IntN(2) == 0 {
				s = append(s, id)
			}
		}
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		return s
	}
	followers, following, muted, blocked := pick(), pick(), pick(), pick()
	// A blocked user neither follows nor is followed by hub.
	followers = slices.DeleteFunc(followers, func(id int64) bool { return slices.Contains(blocked, id) })
	following = slices.DeleteFunc(following, func(id int64) bool { return slices.Contains(blocked, id) })
	for _, id := range followers {
		setFollow(t, b, id, hub, true, now)
	}
	for _, id := range following {
		setFollow(t, b, hub, id, true, now)
	}
	for _, id := range muted {
		must(t, b.Social.SetMute(ctx, hub, id, true, now), "SetMute")
	}
	for _, id := range blocked {
		_, err := b.Social.SetBlock(ctx, hub, id, true, now)
		must(t, err, "SetBlock")
	}
	// The outsider's relations must not show up in hub's lists.
	setFollow(t, b, outsider, others[0], true, now)
	setFollow(t, b, others[1], outsider, true, now)
	must(t, b.Social.SetMute(ctx, outsider, others[2], true, now), "SetMute")
	_, err := b.Social.SetBlock(ctx, outsider, others[3], true, now)
	must(t, err, "SetBlock")
	b.Jobs()

	lists := []struct {
		name string
		list func(ctx context.Context, userID, after int64, limit int) ([]int64, error)
		want []int64
	}{
		{"Followers", b.Social.Followers, followers},
		{"Following", b.Social.Following, following},
		{"Muted", b.Social.Muted, muted},
		{"Blocked", b.Social.Blocked, blocked},
	}
	for _, l := range lists {
		want := slices.Sorted(slices.Values(l.want))
		for _, limit := range []int{1, 3, 100} {
			got := pageAllIDs(t, l.name, limit, func(after int64, limit int) ([]int64, error) { return l.list(ctx, hub, after, limit) })
			wantIDs(t, fmt.Sprintf("%s(hub), pages of %d", l.name, limit), got, want)
		}
		if len(want) > 2 {
			got, err := l.list(ctx, hub, want[1], 1)
			must(t, err, l.name)
			wantIDs(t, l.name+"(after the second, limit 1)", got, want[2:3])
			// after need not be in the list.
			after := want[1] + 1
			got, err = l.list(ctx, hub, after, 100)
			must(t, err, l.name)
			wantIDs(t, fmt.Sprintf("%s(after %d)", l.name, after), got, slices.DeleteFunc(slices.Clone(want), func(id int64) bool { return id <= after }))
		}
		if len(want) > 0 {
			got, err := l.list(ctx, hub, want[len(want)-1], 10)
			must(t, err, l.name)
			wantIDs(t, l.name+"(after the last)", got, nil)
		}
		got, err := l.list(ctx, outsider+1000, 0, 10)
		must(t, err, l.name)
		wantIDs(t, l.name+" of a missing user", got, nil)
	}
	// The lists agree with the counters.
	wantCounts(t, b, hub, len(followers), len(following))
}

func testModes(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 7, now)
	viewer, a1, a2, a3, a4, a5, lone := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]
	for _, a := range []int64{a1, a2, a3, a4} {
		setFollow(t, b, viewer, a, true, now)
	}
	pull := func(v int64, want ...int64) {
		t.Helper()
		got, err := b.Social.PullFollowees(ctx, v)
		must(t, err, "PullFollowees")
		slices.Sort(got)
		wantIDs(t, fmt.Sprintf("PullFollowees(%d)", v), got, want)
	}
	setMode := func(id int64, m feed.Mode) {
		t.Helper()
		must(t, b.Social.SetMode(ctx, id, m), fmt.Sprintf("SetMode(%d, %d)", id, m))
		wantNoJobs(t, b, "SetMode")
		if got := getUser(t, b, id).Mode; got != m {
			t.Fatalf("after SetMode(%d, %d) the user has Mode %d", id, m, got)
		}
	}
	pull(viewer)
	setMode(a2, feed.PullMode)
	setMode(a3, feed.LeavingPullMode)
	setMode(a5, feed.PullMode) // not followed by viewer
	setMode(a5, feed.PullMode) // idempotent
	pull(viewer, a2, a3)
	pull(lone)
	setFollow(t, b, a5, a2, true, now)
	pull(a5, a2)
	setMode(a3, feed.PushMode)
	pull(viewer, a2)
	setFollow(t, b, viewer, a5, true, now)
	pull(viewer, a2, a5)
	setFollow(t, b, viewer, a2, false, now)
	pull(viewer, a5)
	if getUser(t, b, a1).Mode != feed.PushMode || getUser(t, b, a4).Mode != feed.PushMode {
		t.Fatal("SetMode of one user changed another's")
	}
	wantCode(t, b.Social.SetMode(ctx, lone+1000, feed.PullMode), feed.ENOTFOUND, "SetMode of a missing user")
	wantCode(t, b.Social.SetMode(ctx, a1, feed.Mode(7)), feed.EINVALID, "SetMode to an unknown mode")
	if got := getUser(t, b, a1).Mode; got != feed.PushMode {
		t.Fatalf("a refused SetMode left Mode %d", got)
	}
}

func testTouch(t *testing.T, b *Backend) {
	ctx := t.Context()
	t0 := base()
	const interval = time.Hour
	u := newUser(t, b, 1, t0).ID
	v := newUser(t, b, 2, t0).ID
	touch := func(id int64, at time.Time, wantPrev, wantStored time.Time) {
		t.Helper()
		prev, err := b.Social.Touch(ctx, id, at, interval)
		must(t, err, "Touch")
		if !prev.Equal(wantPrev) {
			t.Fatalf("Touch(%d, %v) returned %v, want %v", id, at, prev, wantPrev)
		}
		if got := getUser(t, b, id).ActiveAt; !got.Equal(wantStored) {
			t.Fatalf("after Touch(%d, %v) ActiveAt = %v, want %v", id, at, got, wantStored)
		}
	}
	// Within the interval nothing is written, up to and including its end.
	touch(u, t0, t0, t0)
	touch(u, t0.Add(time.Minute), t0, t0)
	touch(u, t0.Add(interval), t0, t0)
	// Past it, now is written and the old time returned.
	t1 := t0.Add(interval + time.Millisecond)
	touch(u, t1, t0, t1)
	touch(u, t1.Add(interval/2), t1, t1)
	// A time before the stored one never moves it back.
	touch(u, t0.Add(-24*time.Hour), t1, t1)
	// Days later.
	t2 := t1.Add(30 * 24 * time.Hour)
	touch(u, t2, t1, t2)
	// Other users are untouched.
	if got := getUser(t, b, v).ActiveAt; !got.Equal(t0) {
		t.Fatalf("Touch of one user moved another's ActiveAt to %v", got)
	}
	_, err := b.Social.Touch(ctx, v+1000, t0, interval)
	wantCode(t, err, feed.ENOTFOUND, "Touch of a missing user")

	// Concurrent touches of an idle user: exactly one sees the old time,
	// the others the time it wrote.
	t3 := t2.Add(2 * interval)
	const n = 8
	prevs := make([]time.Time, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { prevs[i], errs[i] = b.Social.Touch(ctx, u, t3, interval) })
	}
	wg.Wait()
	old := 0
	for i := range n {
		must(t, errs[i], "concurrent Touch")
		switch {
		case prevs[i].Equal(t2):
			old++
		case !prevs[i].Equal(t3):
			t.Fatalf("concurrent Touch returned %v, want %v or %v", prevs[i], t2, t3)
		}
	}
	if old != 1 {
		t.Fatalf("%d of %d concurrent touches returned the old time, want 1", old, n)
	}
	if got := getUser(t, b, u).ActiveAt; !got.Equal(t3) {
		t.Fatalf("after concurrent touches ActiveAt = %v, want %v", got, t3)
	}
}

func testActiveFollowers(t *testing.T, b *Backend) {
	ctx := t.Context()
	t0 := base().Add(-60 * 24 * time.Hour)
	day := 24 * time.Hour
	star := newUser(t, b, 1, t0).ID
	var fans []int64
	for i := range 12 {
		fans = append(fans, newUser(t, b, 100+i, t0).ID)
	}
	idle := newUser(t, b, 2, t0).ID // active but not a follower
	for _, f := range slices.Backward(fans) {
		setFollow(t, b, f, star, true, t0)
	}
	// fans[i] was last active i days after t0 (fans[0] at t0: creation).
	for i, f := range fans[1:] {
		_, err := b.Social.Touch(ctx, f, t0.Add(time.Duration(i+1)*day), time.Hour)
		must(t, err, "Touch")
	}
	_, err := b.Social.Touch(ctx, idle, t0.Add(100*day), time.Hour)
	must(t, err, "Touch")
	active := func(since time.Time, limit int) []int64 {
		return pageAllIDs(t, "ActiveFollowersAfter", limit, func(after int64, limit int) ([]int64, error) {
			return b.Social.ActiveFollowersAfter(ctx, star, after, limit, since)
		})
	}
	for _, limit := range []int{1, 5, 100} {
		wantIDs(t, "ActiveFollowersAfter(since t0)", active(t0, limit), fans)
		wantIDs(t, "ActiveFollowersAfter(since 5 days): the time itself counts", active(t0.Add(5*day), limit), fans[5:])
		wantIDs(t, "ActiveFollowersAfter(since 5 days + 1 ms)", active(t0.Add(5*day+time.Millisecond), limit), fans[6:])
		wantIDs(t, "ActiveFollowersAfter(since after everyone)", active(t0.Add(12*day), limit), nil)
	}
	got, err := b.Social.ActiveFollowersAfter(ctx, star, fans[7], 2, t0.Add(3*day))
	must(t, err, "ActiveFollowersAfter")
	wantIDs(t, "ActiveFollowersAfter(after fans[7], limit 2)", got, fans[8:10])
	// An unfollow leaves the list; FollowersAfter still lists the idle ones.
	setFollow(t, b, fans[9], star, false, t0)
	wantIDs(t, "ActiveFollowersAfter after an unfollow", active(t0.Add(8*day), 3), []int64{fans[8], fans[10], fans[11]})
	all, err := b.Follows.FollowersAfter(ctx, star, 0, 100)
	must(t, err, "FollowersAfter")
	if len(all) != len(fans)-1 {
		t.Fatalf("FollowersAfter = %v, want the %d followers", all, len(fans)-1)
	}
}

// testSocialConcurrent races follows, unfollows, blocks and unblocks of a
// few users, then checks what no interleaving may break: no follow across a
// block, counters equal to the lists, and exactly one job per change of a
// follow (its net count per pair is the follow's final state).
func testSocialConcurrent(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 5, now)
	b.Jobs()
	seed := newRand(t).Uint64()
	const workers, ops = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range ops {
				x, y := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
				if x == y {
					continue
				}
				var err error
				switch k := r.IntN(10); {
				case k < 5:
					if err = b.Follows.SetFollow(ctx, x, y, true, now); feed.ErrorCode(err) == feed.EFORBIDDEN {
						err = nil
					}
				case k < 7:
					err = b.Follows.SetFollow(ctx, x, y, false, now)
				case k < 9:
					_, err = b.Social.SetBlock(ctx, x, y, false, now)
				default:
					_, err = b.Social.SetBlock(ctx, x, y, true, now)
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "concurrent SetFollow/SetBlock")
	}
	net := map[[2]int64]int{}
	for _, j := range b.Jobs() {
		fj, ok := j.(feed.FollowJob)
		if !ok {
			t.Fatalf("unexpected job %#v", j)
		}
		if fj.Follow {
			net[[2]int64{fj.FollowerID, fj.FolloweeID}]++
		} else {
			net[[2]int64{fj.FollowerID, fj.FolloweeID}]--
		}
	}
	blocks := map[[2]int64]bool{}
	for _, x := range ids {
		bl, err := b.Social.Blocked(ctx, x, 0, 100)
		must(t, err, "Blocked")
		for _, y := range bl {
			blocks[[2]int64{x, y}] = true
		}
	}
	for _, x := range ids {
		followers, err := b.Social.Followers(ctx, x, 0, 100)
		must(t, err, "Followers")
		following, err := b.Social.Following(ctx, x, 0, 100)
		must(t, err, "Following")
		wantCounts(t, b, x, len(followers), len(following))
		for _, y := range ids {
			if x == y {
				continue
			}
			on := isFollowing(t, b, x, y)
			if on != slices.Contains(following, y) {
				t.Fatalf("IsFollowing(%d, %d) = %v disagrees with Following %v", x, y, on, following)
			}
			if on && (blocks[[2]int64{x, y}] || blocks[[2]int64{y, x}]) {
				t.Fatalf("%d follows %d across a block", x, y)
			}
			want := 0
			if on {
				want = 1
			}
			if got := net[[2]int64{x, y}]; got != want {
				t.Fatalf("follow %d→%d is %v but its jobs net %d", x, y, on, got)
			}
		}
	}
}

// outboxModel is the posts of each author, for Outbox.Entries.
type outboxModel map[int64][]feed.Entry

// entries is what Outbox.Entries must return.
func (m outboxModel) entries(authors []int64, max int64, limit int) []feed.Entry {
	var out []feed.Entry
	seen := map[int64]bool{}
	for _, a := range authors {
		if seen[a] {
			continue
		}
		seen[a] = true
		var mine []feed.Entry
		for _, e := range m[a] {
			if e.Score <= max {
				mine = append(mine, e)
			}
		}
		SortEntries(mine)
		out = append(out, mine[:min(len(mine), max0(limit))]...)
	}
	SortEntries(out)
	return out
}

func max0(n int) int { return max(n, 0) } // max is shadowed in entries

func testOutbox(t *testing.T, b *Backend) {
	ctx := t.Context()
	r := newRand(t)
	t0 := base()
	ids := newUsers(t, b, 5, t0)
	authors := ids[:4] // ids[3] never posts
	missing := ids[4] + 1000
	model := outboxModel{}
	var posts []*feed.Post
	for i := range 120 {
		// Bursts in one millisecond, authors interleaved, some posts older
		// than those before them; ids[2] posts most.
		a := authors[min(r.IntN(5), 2)]
		at := t0.Add(time.Duration(i/4) * time.Millisecond)
		if i%9 == 0 {
			at = t0.Add(-time.Duration(r.IntN(50)) * time.Millisecond)
		}
		p := newPost(t, b, a, at, fmt.Sprint("post ", i))
		e := feed.Entry{PostID: p.ID, Score: p.Score()}
		must(t, b.Outbox.Add(ctx, a, e), "Outbox.Add")
		must(t, b.Outbox.Add(ctx, a, e), "Outbox.Add again") // idempotent
		model[a] = append(model[a], e)
		posts = append(posts, p)
	}
	b.Jobs()
	check := func(as []int64, max int64, limit int) {
		t.Helper()
		got, err := b.Outbox.Entries(ctx, as, feed.AtMost(max), limit)
		must(t, err, "Outbox.Entries")
		if want := model.entries(as, max, limit); !slices.Equal(got, want) {
			t.Fatalf("Outbox.Entries(%v, max %d, limit %d):\n got %s\nwant %s", as, max, limit, fmtEntries(got), fmtEntries(want))
		}
	}
	all := []int64{ids[0], ids[1], ids[2], ids[3], missing}
	check(all, math.MaxInt64, 1000)
	check(all, math.MaxInt64, 5)
	check(all, math.MaxInt64, 1)
	check(all, math.MaxInt64, 0)
	check([]int64{ids[0]}, math.MaxInt64, 10)
	check([]int64{ids[1], ids[0], ids[1]}, math.MaxInt64, 7) // a repeated author counts once
	check([]int64{ids[3], missing}, math.MaxInt64, 10)
	check(nil, math.MaxInt64, 10)
	check(all, t0.UnixMilli()+10, 6) // max inside a burst
	check(all, t0.UnixMilli()-1000, 10)
	for range 200 {
		var as []int64
		for _, a := range all {
			if r.IntN(2) == 0 {
				as = append(as, a)
			}
		}
		r.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
		max := t0.UnixMilli() + int64(r.IntN(40)) - 10
		check(as, max, r.IntN(30))
	}

	// Deleted posts leave the outbox.
	for _, p := range posts[:40] {
		if r.IntN(2) == 0 {
			continue
		}
		must(t, b.Posts.DeletePost(ctx, p.ID, p.UserID), "DeletePost")
		e := feed.Entry{PostID: p.ID, Score: p.Score()}
		must(t, b.Outbox.Remove(ctx, p.UserID, e), "Outbox.Remove")
		must(t, b.Outbox.Remove(ctx, p.UserID, e), "Outbox.Remove again") // idempotent
		model[p.UserID] = slices.DeleteFunc(model[p.UserID], func(x feed.Entry) bool { return x == e })
	}
	b.Jobs()
	check(all, math.MaxInt64, 1000)
	check(all, math.MaxInt64, 4)
	check(all, t0.UnixMilli()+5, 3)
}
