package redis_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// TestPackedInPlace drives full packed inboxes through the paths a full
// inbox takes in production, where scores are distinct and rise: the cut of
// the body's count alone, the merge of the head into the ring's slots in
// place (wrapping around), and, mixed in, ties, slightly late entries,
// redeliveries and removals, which take the general merge. After every post
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
					h, err := rdb.GetRange(ctx, redis.BodyKey(prefix, u), 0, redis.PackedHeaderSize-1).Bytes()
					mustDo(t, err, "GETRANGE")
					if len(h) == redis.PackedHeaderSize && binary.BigEndian.Uint32(h) != 0 {
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
