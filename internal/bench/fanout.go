package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// FanoutOptions configure Fanout.
type FanoutOptions struct {
	Followers int           // N: the author's followers
	Runs      int           // measurements of each kind; the result holds medians
	Timeout   time.Duration // longest wait for one fan-out (0: from N)
	// CPUProfile, when set, is the file that receives a CPU profile of
	// this process during the last feedd run, from the publish to the
	// moment every inbox is written (not the check of every inbox that
	// follows it).
	CPUProfile string
}

// FanoutRun is one measurement of each kind, in deliveries per second.
type FanoutRun struct {
	SeedPerS, FeeddPerS, LimitPerS float64
	FeeddSeconds                   float64
	// RepostPerS and RepostSeconds are feedd's, for a repost by the same
	// author of another user's post, delivered to the same followers.
	RepostPerS, RepostSeconds float64
	// FirstFollower is how long after the publish call the first follower's
	// inbox held the post (Redis only): the queue's latency.
	FirstFollower time.Duration
	// FeeddRedisCPU and LimitRedisCPU are the share of one core the Redis
	// server used during the feedd and limit runs (Redis only).
	FeeddRedisCPU, LimitRedisCPU float64
}

// FanoutResult is the result of Fanout: medians over the runs.
type FanoutResult struct {
	Followers    int     `json:"followers"`
	SeedPerS     float64 `json:"seed_per_s"`
	FeeddPerS    float64 `json:"feedd_per_s"`
	LimitPerS    float64 `json:"limit_per_s"`
	FeeddSeconds float64 `json:"feedd_seconds"`
	// RepostPerS is feedd's deliveries per second of a repost (the same
	// fan-out, its entry the repost's); RepostRatio is RepostPerS over
	// FeeddPerS, run by run, the median.
	RepostPerS    float64 `json:"feedd_repost_per_s"`
	RepostSeconds float64 `json:"feedd_repost_seconds"`
	RepostRatio   float64 `json:"repost_over_post"`

	Backend string      `json:"-"`
	Runs    []FanoutRun `json:"-"`
}

// fanoutWorld is an author with N followers, loaded in bulk, and a user
// whose posts the author reposts.
type fanoutWorld struct {
	author int64
	first  int64 // first follower; followers are first .. first+n-1
	n      int
	source int64 // reposted by the author; no follower
}

// audience is the author and the followers: every inbox a post reaches.
func (w *fanoutWorld) audience() []int64 {
	ids := make([]int64, 0, w.n+1)
	ids = append(ids, w.author)
	for u := w.first; u < w.first+int64(w.n); u++ {
		ids = append(ids, u)
	}
	return ids
}

// loadFanoutWorld creates the author and n followers.
func loadFanoutWorld(ctx context.Context, env *Env, tag string, n int) (*fanoutWorld, error) {
	bar := newProgress(env.Progress, "load users", n+2)
	first, err := env.Store.CreateUsers(ctx, tag, n+2, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	w := &fanoutWorld{author: first, first: first + 1, n: n, source: first + int64(n) + 1}
	bar = newProgress(env.Progress, "load follows", n)
	err = env.Store.FollowRange(ctx, w.author, w.first, n, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load follows: %w", err)
	}
	return w, nil
}

// Fanout measures fan-out of one post to N followers three ways on the same
// inbox store (see FanoutResult): seed, the tutorial's loop; feedd, a publish
// through the service and the fan-out by this process's workers, until every
// inbox holds the post (checked in the store, not assumed); and limit, the
// same writes with no application logic.
func Fanout(ctx context.Context, env *Env, opt FanoutOptions) (*FanoutResult, error) {
	if opt.Followers < 1 {
		return nil, fmt.Errorf("bench: --followers must be at least 1")
	}
	opt.Runs = max(opt.Runs, 1)
	if opt.Timeout == 0 {
		opt.Timeout = 2*time.Minute + time.Duration(opt.Followers)*50*time.Microsecond
	}
	w, err := loadFanoutWorld(ctx, env, "fanout-", opt.Followers)
	if err != nil {
		return nil, err
	}
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	// Warm up: one untimed post of the author through every code path
	// (River's queue running, scripts loaded into Redis, the author's
	// outbox created, the follower list in the page cache), so that each
	// timed run creates exactly the N+1 inbox keys it waits for.
	if _, err := feeddFanout(ctx, env, w, 0, FanoutOptions{Timeout: opt.Timeout}, true, nil); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	res := &FanoutResult{Followers: opt.Followers, Backend: env.Backend()}
	for run := 1; run <= opt.Runs; run++ {
		var r FanoutRun
		d, err := seedFanout(ctx, env, w, run)
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		r.SeedPerS = float64(w.n) / d.Seconds()
		profile := ""
		if run == opt.Runs {
			profile = opt.CPUProfile
		}
		post := func() error {
			d, err := feeddFanout(ctx, env, w, run, FanoutOptions{Timeout: opt.Timeout, CPUProfile: profile}, true, &r)
			if err != nil {
				return fmt.Errorf("feedd: %w", err)
			}
			r.FeeddPerS, r.FeeddSeconds = float64(w.n)/d.Seconds(), d.Seconds()
			return nil
		}
		repost := func() error {
			d, err := feeddRepostFanout(ctx, env, w, run, opt.Timeout)
			if err != nil {
				return fmt.Errorf("feedd repost: %w", err)
			}
			r.RepostPerS, r.RepostSeconds = float64(w.n)/d.Seconds(), d.Seconds()
			return nil
		}
		// The post first in odd runs, the repost first in even ones: each
		// delivery grows the inboxes the next one writes into, so neither
		// kind always meets the bigger ones.
		first, second := post, repost
		if run%2 == 0 {
			first, second = repost, post
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
		if d, err = limitFanout(ctx, env, w, run, &r); err != nil {
			return nil, fmt.Errorf("limit: %w", err)
		}
		r.LimitPerS = float64(w.n) / d.Seconds()
		if env.Redis != nil {
			env.logf("run %d/%d (%s, %d followers): seed %.0f/s, feedd %.0f/s (%.3f s, first follower after %.0f ms, Redis CPU %.0f%%), repost %.0f/s (%.3f s), limit %.0f/s (Redis CPU %.0f%%)",
				run, opt.Runs, res.Backend, w.n, r.SeedPerS, r.FeeddPerS, r.FeeddSeconds, ms(r.FirstFollower), 100*r.FeeddRedisCPU,
				r.RepostPerS, r.RepostSeconds, r.LimitPerS, 100*r.LimitRedisCPU)
		} else {
			env.logf("run %d/%d (%s, %d followers): seed %.0f/s, feedd %.0f/s (%.3f s), repost %.0f/s (%.3f s), limit %.0f/s",
				run, opt.Runs, res.Backend, w.n, r.SeedPerS, r.FeeddPerS, r.FeeddSeconds, r.RepostPerS, r.RepostSeconds, r.LimitPerS)
		}
		res.Runs = append(res.Runs, r)
	}
	pick := func(f func(FanoutRun) float64) float64 {
		xs := make([]float64, len(res.Runs))
		for i, r := range res.Runs {
			xs[i] = f(r)
		}
		return Median(xs)
	}
	res.SeedPerS = round(pick(func(r FanoutRun) float64 { return r.SeedPerS }), 0)
	res.FeeddPerS = round(pick(func(r FanoutRun) float64 { return r.FeeddPerS }), 0)
	res.LimitPerS = round(pick(func(r FanoutRun) float64 { return r.LimitPerS }), 0)
	res.FeeddSeconds = round(pick(func(r FanoutRun) float64 { return r.FeeddSeconds }), 3)
	res.RepostPerS = round(pick(func(r FanoutRun) float64 { return r.RepostPerS }), 0)
	res.RepostSeconds = round(pick(func(r FanoutRun) float64 { return r.RepostSeconds }), 3)
	res.RepostRatio = round(pick(func(r FanoutRun) float64 { return r.RepostPerS / r.FeeddPerS }), 3)
	return res, nil
}

// fakePost is the post id the seed and limit runs write: never a real post
// (those are positive), distinct per run and kind.
func fakePost(run int, kind int64) int64 { return -(int64(run)*10 + kind) }

// seedFanout times the tutorial's publish: the query of every follower, then
// one inbox write per follower, each waiting for its reply.
func seedFanout(ctx context.Context, env *Env, w *fanoutWorld, run int) (time.Duration, error) {
	e := feed.Entry{PostID: fakePost(run, 1), Score: env.now().UnixMilli()}
	bar := newProgress(env.Progress, fmt.Sprintf("run %d: seed", run), w.n)
	start := time.Now()
	followers, err := env.Service.Follows.FollowersAfter(ctx, w.author, 0, w.n)
	if err != nil {
		return 0, err
	}
	if env.Redis != nil {
		err = seedDeliverRedis(ctx, env.Redis, env.Prefix, e, followers, bar.set)
	} else {
		for i, u := range followers {
			if err = env.Store.InboxInsertOne(ctx, e, u); err != nil {
				break
			}
			if i%4096 == 0 {
				bar.set(i)
			}
		}
	}
	d := time.Since(start)
	bar.set(w.n)
	if err != nil {
		return 0, err
	}
	if len(followers) != w.n {
		return 0, fmt.Errorf("%d followers, want %d", len(followers), w.n)
	}
	if env.Redis != nil {
		err = unlinkKeys(ctx, env.Redis, w.first, w.n, func(u int64) string { return seedKey(env.Prefix, u) })
	} else {
		err = env.Store.InboxDelete(ctx, e, w.first, w.first+int64(w.n)-1)
	}
	return d, err
}

// feeddFanout publishes a post of the author through the service and
// returns the time until the inboxes of the author and every follower hold
// it. Run 0 is the warm-up.
func feeddFanout(ctx context.Context, env *Env, w *fanoutWorld, run int, opt FanoutOptions, show bool, r *FanoutRun) (time.Duration, error) {
	label := fmt.Sprintf("run %d: feedd", run)
	if run == 0 {
		label = "warm-up: feedd"
	}
	return feeddDeliver(ctx, env, w, label, opt, show, r, func() (feed.Entry, error) {
		p, err := env.Service.Publish(ctx, w.author, benchPost(run))
		if err != nil {
			return feed.Entry{}, err
		}
		return p.Entry(), nil
	})
}

// feeddRepostFanout has the author repost a post of the source user (made
// beforehand, untimed) through the service, and returns the time until the
// inboxes of the author and every follower hold the repost's entry: a
// repost's fan-out, against feeddFanout's post's.
func feeddRepostFanout(ctx context.Context, env *Env, w *fanoutWorld, run int, timeout time.Duration) (time.Duration, error) {
	p, err := env.Service.Publish(ctx, w.source, benchPost(run))
	if err != nil {
		return 0, err
	}
	// Its own delivery (the source's inbox and outbox) done before the
	// timed one starts, whose Redis keys the wait counts.
	err = poll(ctx, 5*time.Millisecond, timeout, func() (bool, error) {
		page, err := env.Service.Timeline(ctx, w.source, nil, 1)
		return err == nil && len(page.List) == 1 && page.List[0].ID == p.ID, err
	})
	if err != nil {
		return 0, fmt.Errorf("the reposted post's delivery: %w", err)
	}
	return feeddDeliver(ctx, env, w, fmt.Sprintf("run %d: feedd repost", run), FanoutOptions{Timeout: timeout}, true, nil, func() (feed.Entry, error) {
		if err := env.Service.Repost(ctx, w.author, p.ID, true); err != nil {
			return feed.Entry{}, err
		}
		// The author's own repost is the first its Sharers name.
		sh, err := env.Service.Reposts.Sharers(ctx, w.author, []int64{p.ID})
		if err != nil {
			return feed.Entry{}, err
		}
		if sh[p.ID] == nil {
			return feed.Entry{}, fmt.Errorf("the author's repost of post %d is not found", p.ID)
		}
		return sh[p.ID].First.Entry(), nil
	})
}

// feeddDeliver runs deliver (a publish or a repost by the author through
// the service, returning the entry it makes) and returns the time from its
// start until the inboxes of the author and every follower hold that
// entry.
func feeddDeliver(ctx context.Context, env *Env, w *fanoutWorld, label string, opt FanoutOptions, show bool, r *FanoutRun, deliver func() (feed.Entry, error)) (time.Duration, error) {
	ids := w.audience()
	author := w.author
	var bar *progress
	if show {
		bar = newProgress(env.Progress, label, len(ids))
	}
	defer bar.finish()
	var base int64
	var ib *redis.Inbox
	if env.Redis != nil {
		ib = redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: env.Prefix, Layout: env.Layout})
		// Each run starts from absent inboxes, so each delivery creates a key.
		if err := unlinkKeys(ctx, env.Redis, author, 1, ib.HeadKey); err != nil {
			return 0, err
		}
		if err := unlinkKeys(ctx, env.Redis, w.first, w.n, ib.HeadKey); err != nil {
			return 0, err
		}
		n, err := env.Redis.DBSize(ctx).Result()
		if err != nil {
			return 0, err
		}
		base = n
	}
	var ws waitStats
	if opt.CPUProfile != "" {
		stop, err := startCPUProfile(opt.CPUProfile)
		if err != nil {
			return 0, err
		}
		ws.reached = sync.OnceFunc(stop)
		defer ws.reached()
	}
	cpu0 := env.redisCPU(ctx)
	start := time.Now()
	e, err := deliver()
	if err != nil {
		return 0, err
	}
	var done time.Time
	if env.Redis != nil {
		done, err = waitDelivered(ctx, env.Redis, ib, e, ids, base, opt.Timeout, bar.set, &ws)
	} else {
		done, err = waitDeliveredDB(ctx, env, e, ids, opt.Timeout, bar.set)
	}
	if err != nil {
		return 0, err
	}
	d := done.Sub(start)
	if r != nil && env.Redis != nil {
		r.FirstFollower = ws.first.Sub(start)
		r.FeeddRedisCPU = (ws.cpu - cpu0).Seconds() / ws.done.Sub(start).Seconds()
	}
	return d, nil
}

// waitDeliveredDB waits until the database inboxes of ids (the author, then
// consecutive followers) all hold e. Fan-out writes a batch of
// env.FanoutBatch consecutive followers in one statement, so probing every
// (batch/2)th follower sees every statement commit: when all probes hold e,
// the fan-out is complete. A count over the whole range confirms it.
func waitDeliveredDB(ctx context.Context, env *Env, e feed.Entry, ids []int64, timeout time.Duration, progress func(int)) (time.Time, error) {
	stride := max(1, min(env.FanoutBatch, 1000)/2)
	var probes []int64
	for i := 0; i < len(ids); i += stride {
		probes = append(probes, ids[i])
	}
	if (len(ids)-1)%stride != 0 {
		probes = append(probes, ids[len(ids)-1])
	}
	total := len(probes)
	var done time.Time
	err := poll(ctx, 5*time.Millisecond, timeout, func() (bool, error) {
		var left []int64
		for lo := 0; lo < len(probes); lo += 500 {
			part := probes[lo:min(lo+500, len(probes))]
			n, err := env.Store.InboxHolding(ctx, e, part)
			if err != nil {
				return false, err
			}
			if n < len(part) {
				left = append(left, part...)
			}
		}
		probes = left
		progress(len(ids) * (total - len(probes)) / total)
		if len(probes) == 0 {
			done = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return done, fmt.Errorf("bench: waiting for the fan-out: %w", err)
	}
	first, last := ids[1], ids[len(ids)-1] // ids[0] is the author
	check := func() (bool, error) {
		n, err := env.Store.InboxHoldingRange(ctx, e, first, last)
		if err != nil {
			return false, err
		}
		m, err := env.Store.InboxHolding(ctx, e, ids[:1])
		return n+m == len(ids), err
	}
	if ok, err := check(); ok || err != nil {
		return done, err
	}
	err = poll(ctx, 20*time.Millisecond, timeout, check)
	return time.Now(), err
}

// limitFanout times the same N inbox writes with no application logic.
func limitFanout(ctx context.Context, env *Env, w *fanoutWorld, run int, r *FanoutRun) (time.Duration, error) {
	e := feed.Entry{PostID: fakePost(run, 2), Score: env.now().UnixMilli()}
	cpu0 := env.redisCPU(ctx)
	start := time.Now()
	var err error
	if env.Redis != nil {
		err = limitDeliverRedis(ctx, env.Redis, env.Prefix, e, w.first, w.n)
	} else {
		err = env.Store.InboxInsertRange(ctx, e, w.first, w.n)
	}
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if env.Redis != nil {
		r.LimitRedisCPU = (env.redisCPU(ctx) - cpu0).Seconds() / d.Seconds()
	}
	// Check the limit run's writes, then remove them.
	if env.Redis != nil {
		key := func(u int64) string { return limitKey(env.Prefix, u) }
		missing, err := redisMissing(ctx, env.Redis, key, strconv.FormatInt(e.PostID, 10), e, []int64{w.first, w.first + int64(w.n) - 1})
		if err != nil || len(missing) > 0 {
			return 0, fmt.Errorf("limit writes missing (%v)", err)
		}
		if err := unlinkKeys(ctx, env.Redis, w.first, w.n, key); err != nil {
			return 0, fmt.Errorf("limit: remove the writes: %w", err)
		}
		return d, nil
	}
	if n, err := env.Store.InboxHoldingRange(ctx, e, w.first, w.first+int64(w.n)-1); err != nil || n != w.n {
		return 0, fmt.Errorf("limit writes: %d of %d (%v)", n, w.n, err)
	}
	if err := env.Store.InboxDelete(ctx, e, w.first, w.first+int64(w.n)-1); err != nil {
		return 0, fmt.Errorf("limit: remove the writes: %w", err)
	}
	return d, nil
}
