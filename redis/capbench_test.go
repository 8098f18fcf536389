package redis

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
)

// BenchmarkCapSchemes compares ways of keeping inboxes at their cap during
// fan-out, on a real Redis: each op delivers one new post to 1000 inboxes that
// already hold feed.DefaultInboxCap entries (the steady state of an active user), in one
// pipeline. The scheme Deliver uses is the last one.
//
//	FEED_TEST_REDIS_URL=redis://127.0.0.1:56379/0 go test -run '^$' -bench CapSchemes -benchtime 2000x ./redis
//
// The report of each scheme gives deliveries/s (wall clock: the client shares
// the machine), the CPU time the Redis server spent per delivery (its main
// thread, from INFO cpu: the resource fan-out exhausts first), and the
// largest inbox left.
func BenchmarkCapSchemes(b *testing.B) {
	url, prefix := testenv.RedisURL(b)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	const users, cap = 1000, feed.DefaultInboxCap

	type scheme struct {
		name    string
		deliver func(ib *Inbox, e feed.Entry, ids []int64) error
		layout  Layout // "": LayoutSortedSet
	}
	rankTrim := func(p goredis.Pipeliner, key string) {
		p.ZRemRangeByRank(ctx, key, 1, -(cap + 1)) // rank 0 is the sentinel
	}
	schemes := []scheme{
		{"zadd-uncapped", func(ib *Inbox, e feed.Entry, ids []int64) error {
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, u := range ids {
					p.ZAdd(ctx, ib.key(u), goredis.Z{Score: float64(e.Score), Member: member(e.PostID)})
				}
				return nil
			})
			return err
		}, ""},
		{"zadd+rank-trim-always", func(ib *Inbox, e feed.Entry, ids []int64) error {
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, u := range ids {
					p.ZAdd(ctx, ib.key(u), goredis.Z{Score: float64(e.Score), Member: member(e.PostID)})
					rankTrim(p, ib.key(u))
				}
				return nil
			})
			return err
		}, ""},
		{"zadd+rank-trim-id%16", func(ib *Inbox, e feed.Entry, ids []int64) error {
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, u := range ids {
					p.ZAdd(ctx, ib.key(u), goredis.Z{Score: float64(e.Score), Member: member(e.PostID)})
					if e.PostID%16 == 0 {
						rankTrim(p, ib.key(u))
					}
				}
				return nil
			})
			return err
		}, ""},
		{"zadd+exact-trim-id%16", func(ib *Inbox, e feed.Entry, ids []int64) error {
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, u := range ids {
					p.ZAdd(ctx, ib.key(u), goredis.Z{Score: float64(e.Score), Member: member(e.PostID)})
					if e.PostID%16 == 0 {
						trimScript.EvalSha(ctx, p, []string{ib.key(u)}, cap)
					}
				}
				return nil
			})
			return err
		}, ""},
		{"zadd+zcard,trim-over-cap+64", func(ib *Inbox, e feed.Entry, ids []int64) error {
			cards := make([]*goredis.IntCmd, len(ids))
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, u := range ids {
					p.ZAdd(ctx, ib.key(u), goredis.Z{Score: float64(e.Score), Member: member(e.PostID)})
					cards[i] = p.ZCard(ctx, ib.key(u))
				}
				return nil
			})
			if err != nil {
				return err
			}
			_, err = rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, u := range ids {
					if cards[i].Val() > cap+64 {
						trimScript.EvalSha(ctx, p, []string{ib.key(u)}, cap)
					}
				}
				return nil
			})
			return err
		}, ""},
		{"lua-zadd-then-trim-over-cap+64", func(ib *Inbox, e feed.Entry, ids []int64) error {
			calls := make([]scriptCall, len(ids))
			_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, u := range ids {
					calls[i] = scriptCall{keys: []string{ib.key(u)}, args: []any{cap, cap + 64, e.Score, member(e.PostID)}}
					addScript.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
				}
				return nil
			})
			return err
		}, ""},
		{"Deliver:zadd+exact-trim-hash%16", func(ib *Inbox, e feed.Entry, ids []int64) error {
			return ib.Deliver(ctx, e, ids)
		}, ""},
		{"Deliver:packed", func(ib *Inbox, e feed.Entry, ids []int64) error {
			return ib.Deliver(ctx, e, ids)
		}, LayoutPacked},
	}
	for _, s := range []*goredis.Script{trimScript, addScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]int64, users)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	for si, s := range schemes {
		b.Run(s.name, func(b *testing.B) {
			ib := NewInbox(rdb, InboxOptions{Prefix: prefix + strconv.Itoa(si) + ":", Cap: cap, Layout: cmp.Or(s.layout, LayoutSortedSet)})
			defer func() {
				keys := make([]string, 0, 2*len(ids))
				for _, u := range ids {
					keys = append(keys, ib.key(u), BodyKey(ib.prefix, u))
				}
				for i := 0; i < len(keys); i += 100 {
					rdb.Unlink(ctx, keys[i:min(i+100, len(keys))]...)
				}
			}()
			// Fill every inbox to the cap: 7-digit ids, scores around 1.8e12.
			const s0 = 1_800_000_000_000
			fill := make([]feed.Entry, cap)
			for i := range fill {
				fill[i] = feed.Entry{PostID: 1_000_000 + int64(i), Score: s0 + int64(i)}
			}
			for _, u := range ids {
				if err := ib.Restore(ctx, u, fill); err != nil {
					b.Fatal(err)
				}
			}
			cpu0 := redisCPU(b, rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := feed.Entry{PostID: 2_000_000 + int64(i), Score: s0 + cap + int64(i)}
				if err := s.deliver(ib, e, ids); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)*users/b.Elapsed().Seconds(), "deliveries/s")
			b.ReportMetric((redisCPU(b, rdb)-cpu0)*1e6/float64(b.N*users), "redis-µs/delivery")
			var biggest int64
			for _, u := range ids[:100] {
				n, err := ib.Len(ctx, u)
				if err != nil {
					b.Fatal(err)
				}
				biggest = max(biggest, int64(n))
			}
			b.ReportMetric(float64(biggest), "max-entries")
		})
	}
}

// redisCPU returns the CPU seconds the server's main thread has used.
func redisCPU(b *testing.B, rdb *goredis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys_main_thread" || k == "used_cpu_user_main_thread") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += f
		}
	}
	return total
}

// TestTrimsOn checks that about one delivery in trimEvery trims, for every
// user, whatever stride the post ids follow.
func TestTrimsOn(t *testing.T) {
	for _, stride := range []int64{1, 2, 16, 64, 1000, 1 << 20} {
		for u := int64(1); u <= 50; u++ {
			n := 0
			const posts = 4000
			for i := int64(1); i <= posts; i++ {
				if trimsOn(i*stride+7, u) {
					n++
				}
			}
			if n < posts/trimEvery*2/3 || n > posts/trimEvery*4/3 {
				t.Errorf("stride %d, user %d: %d trims in %d deliveries, want about %d", stride, u, n, posts, posts/trimEvery)
			}
		}
	}
}
