package bench

import (
	"context"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/capacity"
	"github.com/feedd/feedd/redis"
)

// sizes are the entry counts at which key bytes are measured: powers of two
// below the cap, then the cap.
func sizes(cap int) []int {
	out := []int{0}
	for n := 1; n < cap; n *= 2 {
		out = append(out, n)
	}
	return append(out, cap)
}

// measureBytes fills keys inboxes (built empty, as a first read builds
// them, then delivered to post by post as fan-out does), keys inboxes never
// built (delivered to only) and keys outboxes (a post at a time), reading
// INFO used_memory at each size. An inbox
// "at the cap" is measured after a quarter cap more deliveries, at its
// steady state between trims; the Redis CPU of those deliveries is the
// cost of a delivery into a full inbox.
func measureBytes(ctx context.Context, env *Env, keys int, k *capacity.Costs) error {
	f := newKeyFill(env, keys)
	defer DeleteKeys(context.WithoutCancel(ctx), env.Redis, f.prefix)
	var err error
	if k.InboxBytes, k.RedisUsPerDelivery, err = f.curve(ctx, "inbox"); err != nil {
		return err
	}
	// The next kind starts from no key, on the same key names.
	if err := f.clear(ctx); err != nil {
		return err
	}
	if k.InboxUnbuiltBytes, _, err = f.curve(ctx, "unbuilt inbox"); err != nil {
		return err
	}
	if err := f.clear(ctx); err != nil {
		return err
	}
	k.OutboxBytes, _, err = f.curve(ctx, "outbox")
	return err
}

// keyFill is the keys measureBytes fills: an inbox and an outbox for each
// of its users, under a prefix of their own.
type keyFill struct {
	env    *Env
	prefix string
	cap    int
	ib     *redis.Inbox
	ob     *redis.Outbox
	users  []int64
	base   int64 // the score of the first post
}

func newKeyFill(env *Env, keys int) *keyFill {
	cap := feed.InboxCapOr(env.InboxCap)
	prefix := env.Prefix + "capmem:"
	f := &keyFill{
		env: env, prefix: prefix, cap: cap,
		ib:    redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: prefix, Cap: cap, Layout: env.Layout}),
		ob:    redis.NewOutbox(env.Redis, redis.InboxOptions{Prefix: prefix + "out:", Cap: cap}, nil),
		users: make([]int64, keys),
		base:  time.Now().UnixMilli() - 3_600_000,
	}
	for i := range f.users {
		f.users[i] = int64(1_000_001 + i)
	}
	return f
}

// entry is the p-th post delivered.
func (f *keyFill) entry(p int) feed.Entry {
	return feed.Entry{PostID: int64(2_000_000 + p), Score: f.base + int64(p)*1000}
}

// deliver adds posts from to to to every key of kind.
func (f *keyFill) deliver(ctx context.Context, kind string, from, to int) error {
	if kind != "outbox" {
		return parallel(ctx, 4, to-from, func(ctx context.Context, i int) error {
			return f.ib.Deliver(ctx, f.entry(from+i), f.users)
		})
	}
	return parallel(ctx, 16, len(f.users), func(ctx context.Context, i int) error {
		for p := from; p < to; p++ {
			if err := f.ob.Add(ctx, f.users[i], f.entry(p)); err != nil {
				return err
			}
		}
		return nil
	})
}

// curve fills the keys of kind ("inbox", "unbuilt inbox" or "outbox") from
// none, returning their bytes per key at each size and, for inboxes, the
// Redis CPU of a delivery into a full one.
func (f *keyFill) curve(ctx context.Context, kind string) (pts []capacity.Point, usPerDelivery float64, err error) {
	env, cap, keys := f.env, f.cap, len(f.users)
	// Every connection the fills use is open before the baseline: a
	// client's buffers are in used_memory too (~20 KB each).
	if err := parallel(ctx, 16, 64, func(ctx context.Context, _ int) error { return env.Redis.Ping(ctx).Err() }); err != nil {
		return nil, 0, err
	}
	before, err := keysMemory(ctx, env.Redis)
	if err != nil {
		return nil, 0, err
	}
	if kind == "inbox" {
		for _, u := range f.users { // built empty, as a first read builds it
			if err := f.ib.Restore(ctx, u, nil); err != nil {
				return nil, 0, err
			}
		}
	}
	done := 0
	bar := newProgress(env.Progress, kind+" bytes by size", cap+cap/4)
	for _, n := range sizes(cap) {
		to := n
		if n == cap {
			to = cap + cap/4
			if err := f.deliver(ctx, kind, done, cap); err != nil {
				return nil, 0, err
			}
			done = cap
		}
		cpu0 := redisCPU(ctx, env.Redis)
		if err := f.deliver(ctx, kind, done, to); err != nil {
			return nil, 0, err
		}
		if n == cap && kind == "inbox" {
			usPerDelivery = round(float64((redisCPU(ctx, env.Redis)-cpu0).Microseconds())/float64((to-done)*keys), 3)
		}
		done = to
		bar.set(done)
		after, err := keysMemory(ctx, env.Redis)
		if err != nil {
			return nil, 0, err
		}
		pts = append(pts, capacity.Point{Entries: n, Bytes: round(float64(after-before)/float64(keys), 1)})
	}
	bar.finish()
	return pts, usPerDelivery, nil
}

// clear deletes the inboxes, freed before it returns (DEL, not UNLINK).
func (f *keyFill) clear(ctx context.Context) error {
	if err := deleteSync(ctx, f.env.Redis, f.users, f.ib.HeadKey); err != nil {
		return err
	}
	return deleteSync(ctx, f.env.Redis, f.users, func(u int64) string { return redis.BodyKey(f.prefix, u) })
}
