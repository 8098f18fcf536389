package feedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	feed "github.com/feedd/feedd"
)

// pullModel is PullFollowees computed the long way, from the follow list
// and each followee's mode: what a store that keeps the answer
// precomputed (sqlite and postgres flag the follows of authors not in push
// mode) must return after any sequence of follows, unfollows, blocks and
// mode changes.
func pullModel(t testing.TB, b *Backend, viewer int64) []int64 {
	t.Helper()
	ids, err := b.Social.Following(t.Context(), viewer, 0, 1000)
	must(t, err, "Following")
	return slices.DeleteFunc(ids, func(id int64) bool { return getUser(t, b, id).Mode == feed.PushMode })
}

func wantPulls(t testing.TB, b *Backend, ids []int64, what string) {
	t.Helper()
	for _, v := range ids {
		got, err := b.Social.PullFollowees(t.Context(), v)
		must(t, err, "PullFollowees")
		wantIDs(t, fmt.Sprintf("%s: PullFollowees(%d)", what, v), got, pullModel(t, b, v))
	}
}

// testPullFollowees drives random follows, unfollows, blocks, unblocks and
// mode changes (push, pull, leaving pull) and checks after each that
// PullFollowees is the viewer's followees not in push mode, ascending.
func testPullFollowees(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 8, now)
	r := newRand(t)
	modes := []feed.Mode{feed.PushMode, feed.PullMode, feed.LeavingPullMode}
	for i := range 300 {
		x, y := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
		var what string
		switch k := r.IntN(10); {
		case k < 4 && x != y:
			what = fmt.Sprintf("op %d: SetFollow(%d, %d, true)", i, x, y)
			if err := b.Follows.SetFollow(ctx, x, y, true, now); feed.ErrorCode(err) != feed.EFORBIDDEN {
				must(t, err, what)
			}
		case k < 6 && x != y:
			what = fmt.Sprintf("op %d: SetFollow(%d, %d, false)", i, x, y)
			must(t, b.Follows.SetFollow(ctx, x, y, false, now), what)
		case k < 7 && x != y:
			block := r.IntN(2) == 0
			what = fmt.Sprintf("op %d: SetBlock(%d, %d, %v)", i, x, y, block)
			_, err := b.Social.SetBlock(ctx, x, y, block, now)
			must(t, err, what)
		default:
			m := modes[r.IntN(len(modes))]
			what = fmt.Sprintf("op %d: SetMode(%d, %d)", i, y, m)
			must(t, b.Social.SetMode(ctx, y, m), what)
		}
		b.Jobs()
		wantPulls(t, b, ids, what)
	}
}

// testPullConcurrent races follows and unfollows of two authors against
// their mode changes: whatever the interleaving, PullFollowees agrees with
// the follows and the modes once every call has returned.
func testPullConcurrent(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 10, now)
	authors, fans := ids[:2], ids[2:]
	seed := newRand(t).Uint64()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 40 {
				a := authors[r.IntN(len(authors))]
				if w < 2 {
					errs <- b.Social.SetMode(ctx, a, []feed.Mode{feed.PushMode, feed.PullMode, feed.LeavingPullMode}[r.IntN(3)])
					continue
				}
				errs <- b.Follows.SetFollow(ctx, fans[r.IntN(len(fans))], a, r.IntN(3) > 0, now)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "concurrent SetMode/SetFollow")
	}
	b.Jobs()
	wantPulls(t, b, ids, "after concurrent SetMode and SetFollow")
}
