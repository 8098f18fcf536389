package redis_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// roundTrips counts the commands and pipelines a client sends: one round
// trip each.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// unfollowInbox fills userID's inbox to cap 800: 600 posts of others and
// 200 of one followee, interleaved in time, most compacted into a packed
// inbox's body; it returns the followee's entries and the others'.
func unfollowInbox(t testing.TB, ib *redis.Inbox, userID int64) (followee, others []feed.Entry) {
	t.Helper()
	var all []feed.Entry
	for i := range 800 {
		e := feed.Entry{PostID: int64(5_000_000 + i), Score: s0 + int64(i)*1000}
		if i%4 == 1 {
			followee = append(followee, e)
		} else {
			others = append(others, e)
		}
		all = append(all, e)
	}
	mustDo(t, ib.Restore(context.Background(), userID, all), "Restore")
	return followee, others
}

// TestRemoveEntries: an unfollow takes a followee's 200 posts out of an
// inbox of 800 (and ignores absent entries and, on a packed inbox, one it
// cannot hold) in one round trip, on every layout, and the inbox then
// reads as the other 600.
func TestRemoveEntries(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, 800))
		// The script's first call on a server (the node of the inbox's
		// slot) loads it, NOSCRIPT then EVAL: a round trip more, once.
		mustDo(t, ib.RemoveEntries(ctx, 1, []feed.Entry{{PostID: 1, Score: s0}}), "RemoveEntries (script loaded)")
		followee, others := unfollowInbox(t, ib, 1)
		// A delivery after the backfill: in a packed inbox's head.
		late := feed.Entry{PostID: 9_000_000, Score: s0 + 900_000}
		mustDo(t, ib.Deliver(ctx, late, []int64{1}), "Deliver")
		remove := append(slices.Clone(followee), late,
			feed.Entry{PostID: 8_000_000, Score: s0},      // absent
			feed.Entry{PostID: 8_000_001, Score: 1 << 50}) // outside the packed range
		counter := &roundTrips{}
		rdb.AddHook(counter)
		mustDo(t, ib.RemoveEntries(ctx, 1, remove), "RemoveEntries")
		if n := counter.n.Load(); n != 1 {
			t.Errorf("RemoveEntries took %d round trips, want 1", n)
		}
		want := slices.Clone(others)
		slices.SortFunc(want, feed.CompareEntries)
		wantEntries(t, "inbox after the unfollow", pageAll(t, ib, 1), want)
		mustDo(t, ib.RemoveEntries(ctx, 1, others), "RemoveEntries of the rest")
		wantEntries(t, "inbox emptied", pageAll(t, ib, 1), nil)
	})
}

// BenchmarkUnfollowPacked is an unfollow on a packed inbox of 800 entries
// whose body holds the followee's 200: a Remove of each entry (one round
// trip and one rewrite of the body each) against one RemoveEntries. It
// reports the round trips of one unfollow.
//
//	FEED_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench Unfollow -count 6 ./redis
func BenchmarkUnfollowPacked(b *testing.B) {
	for _, c := range []struct {
		name string
		each bool
	}{{"RemoveEach", true}, {"RemoveEntries", false}} {
		b.Run(c.name, func(b *testing.B) {
			rdb, prefix := openRedis(b)
			ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: 800})
			counter := &roundTrips{}
			rdb.AddHook(counter)
			ctx := context.Background()
			trips := int64(0)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				followee, _ := unfollowInbox(b, ib, 1)
				n0 := counter.n.Load()
				b.StartTimer()
				if c.each {
					for _, e := range followee {
						mustDo(b, ib.Remove(ctx, e, []int64{1}), "Remove")
					}
				} else {
					mustDo(b, ib.RemoveEntries(ctx, 1, followee), "RemoveEntries")
				}
				b.StopTimer()
				trips += counter.n.Load() - n0
				if n, err := ib.Len(ctx, 1); err != nil || n != 600 {
					b.Fatalf("inbox of %d entries after the unfollow (%v), want 600", n, err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(trips)/float64(b.N), "round-trips/op")
		})
	}
}
