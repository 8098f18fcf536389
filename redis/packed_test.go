package redis_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// TestPackedInPlace drives full packed inboxes through the paths a full
// inbox takes in production, where scores are distinct and rise: the cut of
// the body's count alone, the merge of the head into the ring's slots in
// place (wrapping around), and, mixed in, ties, slightly late entries,
// redeliveries and removals, which take the merge at the top of the ring. After every post
// some inboxes are read whole and must hold exactly the newest entries
// delivered (ties by numeric id), within the cap's slack (less one an
// earlier removal, as in a sorted set); and the rings
// must have been written in place (a rewritten body starts at slot 0).
func TestPackedInPlace(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		// The default head limit (0: 32) and a small one; a cap above it, so
		// that a merge fills only some of the ring's slots.
		for _, c := range []struct{ cap, headMax int }{{50, 0}, {20, 4}} {
			t.Run(fmt.Sprintf("Cap%dHeadMax%d", c.cap, c.headMax), func(t *testing.T) {
				ctx := t.Context()
				rdb, prefix := open(t)
				const posts, users = 1500, 12
				cap := c.cap
				ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: cap, Layout: redis.LayoutPacked, HeadMax: c.headMax})
				all := make([]int64, users)
				for i := range all {
					all[i] = int64(i + 1)
					mustDo(t, ib.Restore(ctx, all[i], nil), "Restore")
				}
				delivered := map[int64][]feed.Entry{}
				deliver := func(e feed.Entry, to []int64) {
					mustDo(t, ib.Deliver(ctx, e, to), "Deliver")
					for _, u := range to {
						if !slices.Contains(delivered[u], e) {
							delivered[u] = append(delivered[u], e)
						}
					}
				}
				var last feed.Entry
				removed := 0 // a removal leaves an inbox at the cap one short
				for id := int64(1); id <= posts; id++ {
					e := feed.Entry{PostID: id, Score: s0 + 10*id}
					switch {
					case id%50 == 0: // a tie with the previous post
						e.Score = last.Score
					case id%37 == 0: // slightly late: among the newest still
						e.Score = last.Score - 3
					}
					to := all
					if id%3 == 0 {
						to = all[:users/2]
					}
					deliver(e, to)
					if id%41 == 0 { // a retried fan-out
						deliver(e, to)
					}
					if id%97 == 0 { // a deleted post, delivered a little earlier
						gone := feed.Entry{PostID: id - 2, Score: s0 + 10*(id-2)}
						mustDo(t, ib.Remove(ctx, gone, all), "Remove")
						removed++
						for _, u := range all {
							delivered[u] = slices.DeleteFunc(delivered[u], func(x feed.Entry) bool { return x == gone })
						}
					}
					last = e
					for _, u := range []int64{1, users} {
						n, err := ib.Len(ctx, u)
						mustDo(t, err, "Len")
						if n > cap+capSlack || n < min(cap, len(delivered[u]))-removed {
							t.Fatalf("after post %d inbox %d holds %d entries; cap %d, %d delivered", id, u, n, cap, len(delivered[u]))
						}
						wantEntries(t, fmt.Sprintf("inbox %d after post %d", u, id), pageAll(t, ib, u), inOrder(delivered[u])[:n])
					}
				}
				rotated := 0
				for _, u := range all {
					if bodyRotated(t, rdb, redis.BodyKey(prefix, u)) {
						rotated++
					}
					mustDo(t, ib.Trim(ctx, u, cap), "Trim")
					wantEntries(t, "after Trim", pageAll(t, ib, u), inOrder(delivered[u])[:cap])
				}
				if rotated == 0 {
					t.Fatalf("no body was written in place (every ring starts at slot 0)")
				}
			})
		}
	})
}

// TestPackedMergeProperty delivers random posts to packed inboxes and, with
// the same operations, to plain sorted-set inboxes (the reference), and
// checks after every operation that both read alike, whole: most posts in
// time order, some a little late (a few posts older than the newest, as
// concurrent fan-outs deliver them), some far behind, ties of a score
// (with ids of different lengths, so that member bytes and numeric order
// differ, and ids above 2^53), redeliveries, removals and trims. The late
// ones take the merge at the top of the ring, in place; the rings must
// have been written in place. Unfollows take many entries out of one inbox
// at once (RemoveEntries), checked against a Remove of each.
func TestPackedMergeProperty(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		for _, c := range []struct{ cap, headMax int }{{40, 0}, {30, 4}, {25, -1}} {
			t.Run(fmt.Sprintf("Cap%dHeadMax%d", c.cap, c.headMax), func(t *testing.T) {
				ctx := t.Context()
				rdb, prefix := open(t)
				seed := uint64(time.Now().UnixNano())
				t.Logf("seed %d", seed)
				rng := rand.New(rand.NewPCG(seed, uint64(c.cap)))
				packed := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: c.cap, Layout: redis.LayoutPacked, HeadMax: c.headMax})
				ref := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix + "ref:", Cap: c.cap, Layout: redis.LayoutSortedSet})
				const users, ops = 8, 1200
				all := make([]int64, users)
				for i := range all {
					all[i] = int64(i + 1)
					mustDo(t, packed.Restore(ctx, all[i], nil), "Restore")
					mustDo(t, ref.Restore(ctx, all[i], nil), "Restore reference")
				}
				var posts []feed.Entry
				ids := map[int64]bool{}
				newID := func() int64 {
					for {
						var id int64
						switch r := rng.IntN(20); {
						case r == 0: // above 2^53
							id = 1<<62 + rng.Int64N(1<<40)
						case r < 4: // short ids: "9" sorts after "10" by bytes
							id = 1 + rng.Int64N(200)
						default:
							id = 1_000_000 + rng.Int64N(9_000_000)
						}
						if !ids[id] {
							ids[id] = true
							return id
						}
					}
				}
				clock := int64(s0)
				check := func(what string, us ...int64) {
					t.Helper()
					for _, u := range us {
						wantEntries(t, fmt.Sprintf("inbox %d after %s", u, what), pageAll(t, packed, u), pageAll(t, ref, u))
					}
				}
				for op := range ops {
					to := all
					if rng.IntN(3) == 0 {
						to = all[:1+rng.IntN(users)]
					}
					var what string
					switch r := rng.IntN(100); {
					case r < 6 && len(posts) > 0: // a redelivery of a recent post
						e := posts[max(0, len(posts)-1-rng.IntN(20))]
						what = fmt.Sprintf("op %d: redelivery of %v", op, e)
						mustDo(t, packed.Deliver(ctx, e, to), "Deliver")
						mustDo(t, ref.Deliver(ctx, e, to), "Deliver reference")
					case r < 8 && len(posts) > 0: // a removal
						e := posts[rng.IntN(len(posts))]
						what = fmt.Sprintf("op %d: removal of %v", op, e)
						mustDo(t, packed.Remove(ctx, e, all), "Remove")
						mustDo(t, ref.Remove(ctx, e, all), "Remove reference")
					case r < 9 && len(posts) > 0: // an unfollow: many entries out of one inbox
						u := all[rng.IntN(users)]
						var es []feed.Entry
						for _, e := range posts {
							if rng.IntN(3) == 0 {
								es = append(es, e)
							}
						}
						what = fmt.Sprintf("op %d: RemoveEntries(%d, %d entries)", op, u, len(es))
						mustDo(t, packed.RemoveEntries(ctx, u, es), "RemoveEntries")
						for _, e := range es {
							mustDo(t, ref.Remove(ctx, e, []int64{u}), "Remove reference")
						}
						to = []int64{u}
					case r < 10: // a trim, to a cap a little lower at times
						u, cap := all[rng.IntN(users)], c.cap-rng.IntN(3)
						what = fmt.Sprintf("op %d: Trim(%d, %d)", op, u, cap)
						mustDo(t, packed.Trim(ctx, u, cap), "Trim")
						mustDo(t, ref.Trim(ctx, u, cap), "Trim reference")
					default:
						clock += 10
						e := feed.Entry{PostID: newID(), Score: clock}
						switch r := rng.IntN(100); {
						case r < 20: // a little late: a few posts behind
							e.Score -= 1 + rng.Int64N(60)
						case r < 24: // far behind
							e.Score -= 100 + rng.Int64N(2000)
						case r < 30 && len(posts) > 0: // a tie with a recent post
							e.Score = posts[max(0, len(posts)-1-rng.IntN(8))].Score
						}
						posts = append(posts, e)
						what = fmt.Sprintf("op %d: delivery of %v", op, e)
						mustDo(t, packed.Deliver(ctx, e, to), "Deliver")
						mustDo(t, ref.Deliver(ctx, e, to), "Deliver reference")
					}
					check(what, all[rng.IntN(users)], to[0])
				}
				check("the last operation", all...)
				rotated := 0
				for _, u := range all {
					if bodyRotated(t, rdb, redis.BodyKey(prefix, u)) {
						rotated++
					}
					mustDo(t, packed.Trim(ctx, u, c.cap), "Trim")
					mustDo(t, ref.Trim(ctx, u, c.cap), "Trim reference")
					check("the last Trim", u)
				}
				if rotated == 0 {
					t.Fatalf("no body was written in place (every ring starts at slot 0)")
				}
			})
		}
	})
}

// bodyRotated reports whether the packed body at key is a ring whose
// newest entry is not in slot 0: one written in place.
func bodyRotated(t *testing.T, rdb goredis.UniversalClient, key string) bool {
	t.Helper()
	h, err := rdb.GetRange(t.Context(), key, 0, redis.PackedHeaderSize-1).Bytes()
	mustDo(t, err, "GETRANGE")
	return len(h) == redis.PackedHeaderSize && binary.BigEndian.Uint32(h) != 0
}

// TestPackedEarlierHead: a packed inbox of the releases before the head had a
// key of its own (the head at InboxKey, its members decimal post ids, and the
// body) reads as lost after the upgrade; its rebuild holds exactly what it
// was rebuilt with, none of the old body's entries, and deletes the old
// head. Deliveries in between go to the new head and are kept by the
// rebuild, as on any lost inbox.
func TestPackedEarlierHead(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		ctx := t.Context()
		rdb, prefix := open(t)
		const user = 42
		var old []feed.Entry
		for i := int64(1); i <= 60; i++ {
			old = append(old, feed.Entry{PostID: 1000 + i, Score: s0 + i})
		}
		// The earlier layout, built by hand: sentinel, marker and decimal
		// members at InboxKey; a body of the same format as today's, made by
		// a packed inbox of another prefix (same hash tag) and renamed.
		head := redis.InboxKey(prefix, user)
		mustDo(t, rdb.ZAdd(ctx, head, goredis.Z{Score: math.Inf(-1), Member: "-"}, goredis.Z{Score: math.Inf(-1), Member: "="}).Err(), "ZADD")
		for _, e := range old[50:] {
			mustDo(t, rdb.ZAdd(ctx, head, goredis.Z{Score: float64(e.Score), Member: strconv.FormatInt(e.PostID, 10)}).Err(), "ZADD")
		}
		other := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix + "x:", Layout: redis.LayoutPacked})
		mustDo(t, other.Restore(ctx, user, old[:50]), "Restore")
		mustDo(t, rdb.Rename(ctx, redis.BodyKey(prefix+"x:", user), redis.BodyKey(prefix, user)).Err(), "RENAME")

		ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Layout: redis.LayoutPacked})
		if _, err := ib.Page(ctx, user, feed.Top(), 0, 10); !errors.Is(err, feed.ErrInboxLost) {
			t.Fatalf("Page of an inbox of the earlier layout: %v, want feed.ErrInboxLost", err)
		}
		late := feed.Entry{PostID: 5000, Score: s0 + 500}
		mustDo(t, ib.Deliver(ctx, late, []int64{user}), "Deliver")
		rebuilt := []feed.Entry{{PostID: 7, Score: s0 + 7}, {PostID: 3, Score: s0 + 3}}
		mustDo(t, ib.Restore(ctx, user, rebuilt), "Restore")
		wantEntries(t, "rebuilt", pageAll(t, ib, user), inOrder(append(rebuilt, late)))
		if n := rdb.Exists(ctx, head).Val(); n != 0 {
			t.Fatalf("the earlier head %s still exists after the rebuild", head)
		}
		// Past the first compaction the old body's slots are reused, never
		// read back.
		var more []feed.Entry
		for i := int64(1); i <= 100; i++ {
			e := feed.Entry{PostID: 9000 + i, Score: s0 + 1000 + i}
			more = append(more, e)
			mustDo(t, ib.Deliver(ctx, e, []int64{user}), "Deliver")
		}
		wantEntries(t, "after 100 more deliveries", pageAll(t, ib, user), inOrder(append(append(rebuilt, late), more...)))
	})
}
