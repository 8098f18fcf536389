package bench

import (
	"context"
	"fmt"
	"time"
)

// PublishOptions configure Publish.
type PublishOptions struct {
	Followers int           // N: followers of the large author
	Publishes int           // posts each author publishes
	Interval  time.Duration // pause between two publishes
}

// PublishResult is publish latency (Service.Publish: the post and its
// fan-out job committed) for an author with 10 followers and one with N.
type PublishResult struct {
	Followers  int     `json:"followers"`
	Publishes  int     `json:"publishes"`
	IdleP50ms  float64 `json:"idle_p50_ms"`
	IdleP99ms  float64 `json:"idle_p99_ms"`
	SmallP50ms float64 `json:"small_p50_ms"`
	SmallP99ms float64 `json:"small_p99_ms"`
	LargeP50ms float64 `json:"large_p50_ms"`
	LargeP99ms float64 `json:"large_p99_ms"`
	P99Ratio   float64 `json:"p99_ratio"`

	Backend string `json:"-"`
}

// Text renders r for people.
func (r *PublishResult) Text() string {
	return fmt.Sprintf("publish latency, %d posts per author, inboxes in %s\n"+
		"  10 followers, idle system         p50 %7.2f ms   p99 %7.2f ms\n"+
		"  10 followers, during the fan-outs p50 %7.2f ms   p99 %7.2f ms\n"+
		"  %d followers                 p50 %7.2f ms   p99 %7.2f ms\n"+
		"  p99 ratio (N / 10, same run) %.2f; N / idle %.2f\n",
		r.Publishes, r.Backend, r.IdleP50ms, r.IdleP99ms, r.SmallP50ms, r.SmallP99ms, r.Followers, r.LargeP50ms, r.LargeP99ms,
		r.P99Ratio, r.LargeP99ms/r.IdleP99ms)
}

// Publish measures how long a publish takes for an author with 10 followers
// and for one with N, with this process's workers running. First the small
// author publishes on an idle system (the baseline); then the two publish in
// turn, so both are measured under the same load: the fan-outs of the large
// author's posts, which run meanwhile in the same process and database. A
// publish whose cost grew with the audience would show in the ratio of the
// two; the load itself shows against the baseline.
func Publish(ctx context.Context, env *Env, opt PublishOptions) (*PublishResult, error) {
	if opt.Followers < 10 || opt.Publishes < 1 {
		return nil, fmt.Errorf("bench: --followers must be at least 10 and --publishes at least 1")
	}
	n := opt.Followers
	bar := newProgress(env.Progress, "load users", n+2)
	first, err := env.Store.CreateUsers(ctx, "publish-", n+2, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	small, large, followers := first, first+1, first+2
	bar = newProgress(env.Progress, "load follows", n)
	err = env.Store.FollowRange(ctx, large, followers, n, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load follows: %w", err)
	}
	if err := env.Store.FollowRange(ctx, small, followers, 10, func(int) {}); err != nil {
		return nil, err
	}
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	// One untimed publish first: River's queue and every pool warm.
	if _, err := env.Service.Publish(ctx, small, benchPost(0)); err != nil {
		return nil, err
	}
	publish := func(author int64, i int) (time.Duration, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(opt.Interval):
		}
		start := time.Now()
		if _, err := env.Service.Publish(ctx, author, benchPost(i)); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	var idle, sl, ll Latencies
	bar = newProgress(env.Progress, "publish: idle", opt.Publishes)
	for i := range opt.Publishes {
		d, err := publish(small, i+1)
		if err != nil {
			return nil, err
		}
		idle = append(idle, d)
		bar.set(i + 1)
	}
	bar.finish()
	bar = newProgress(env.Progress, "publish: 10 and N in turn", 2*opt.Publishes)
	for i := range opt.Publishes {
		d, err := publish(large, i+1)
		if err != nil {
			return nil, err
		}
		ll = append(ll, d)
		if d, err = publish(small, opt.Publishes+i+1); err != nil {
			return nil, err
		}
		sl = append(sl, d)
		bar.set(2 * (i + 1))
	}
	bar.finish()
	r := &PublishResult{
		Followers: n, Publishes: opt.Publishes, Backend: env.Backend(),
		IdleP50ms: round(ms(idle.Quantile(0.5)), 3), IdleP99ms: round(ms(idle.Quantile(0.99)), 3),
		SmallP50ms: round(ms(sl.Quantile(0.5)), 3), SmallP99ms: round(ms(sl.Quantile(0.99)), 3),
		LargeP50ms: round(ms(ll.Quantile(0.5)), 3), LargeP99ms: round(ms(ll.Quantile(0.99)), 3),
	}
	r.P99Ratio = round(r.LargeP99ms/r.SmallP99ms, 2)
	return r, nil
}
