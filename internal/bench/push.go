package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/pushtest"
)

// PushOptions shape `feedd bench push`.
type PushOptions struct {
	Groups        int `json:"groups"`        // notification groups opened per run (a like of a new post each)
	Subscriptions int `json:"subscriptions"` // push subscriptions of the author: pushes per group
	Runs          int `json:"runs"`
	// Server is the push service on loopback that the service's sender
	// may post to (--push-endpoint-allow); required.
	Server *pushtest.Server `json:"-"`
}

// PushResult is the outcome of `feedd bench push`.
type PushResult struct {
	Backend string      `json:"backend"`
	Options PushOptions `json:"options"`
	// PushesPerS is Groups × Subscriptions pushes over the time from the
	// start of the workers, with them all queued, to the last one's arrival
	// (median of the runs): reading the group, encrypting, signing and the
	// HTTP exchange, by 4 workers per --workers (the posts' own fan-out
	// jobs, to the author's inbox, run meanwhile).
	PushesPerS float64   `json:"pushes_per_s"`
	Runs       []float64 `json:"runs_pushes_per_s"`
	// Checked is how many pushes (those of the first run) were decrypted
	// and their VAPID JWT checked, as a browser and its push service would.
	Checked int `json:"checked"`
}

// Text is the human-readable result.
func (r *PushResult) Text() string {
	return fmt.Sprintf("web push, %s, %d groups × %d subscriptions per run to a push service on loopback (median of %d runs)\n"+
		"  %8.0f pushes/s   (%d checked: decrypted, VAPID verified)\n",
		r.Backend, r.Options.Groups, r.Options.Subscriptions, r.Options.Runs, r.PushesPerS, r.Checked)
}

// Push measures the push jobs' throughput: an author with Subscriptions
// push subscriptions at a push service on loopback gets Groups new
// notification groups (one like each of a new post) while no worker runs;
// the workers are started and timed until every push has arrived.
// The first run's pushes are decrypted and checked; every push must
// arrive once.
func Push(ctx context.Context, env *Env, opt PushOptions) (*PushResult, error) {
	// A user keeps feed.DefaultNotifyKeep groups: more, queued at once,
	// would drop the oldest before their pushes ran.
	if opt.Groups < 1 || opt.Groups > feed.DefaultNotifyKeep || opt.Subscriptions < 1 || opt.Subscriptions > feed.MaxPushSubscriptions || opt.Runs < 1 || opt.Server == nil {
		return nil, fmt.Errorf("push: groups from 1 to %d (the groups a user keeps), runs at least 1, subscriptions from 1 to %d", feed.DefaultNotifyKeep, feed.MaxPushSubscriptions)
	}
	svc, srv := env.Service, opt.Server
	res := &PushResult{Backend: env.Backend(), Options: opt}
	now := time.Now()
	author, err := svc.Users.FindOrCreateUser(ctx, "19800000000", "push_author", now)
	if err != nil {
		return nil, err
	}
	key, err := svc.PushKey(ctx)
	if err != nil {
		return nil, err
	}
	srv.VAPIDKey = key
	for i := range opt.Subscriptions {
		if _, err := svc.SubscribePush(ctx, author.ID, feed.PushInput{
			Endpoint: fmt.Sprintf("%s/%d", srv.Endpoint(), i), P256dh: srv.Browser.P256dh(), Auth: srv.Browser.AuthSecret(),
		}); err != nil {
			return nil, err
		}
	}
	likers := make([]int64, opt.Groups)
	for i := range likers {
		u, err := svc.Users.FindOrCreateUser(ctx, fmt.Sprintf("198%08d", i+1), fmt.Sprintf("liker_%d", i+1), now)
		if err != nil {
			return nil, err
		}
		likers[i] = u.ID
	}
	want := 0
	for run := range opt.Runs {
		// The jobs of the run are queued while no worker runs.
		if run > 0 {
			if err := env.Stop(ctx); err != nil {
				return nil, err
			}
		}
		srv.SetDecrypt(run == 0)
		// The groups: a post each, liked once, 8 at a time.
		var wg sync.WaitGroup
		errs := make(chan error, opt.Groups)
		sem := make(chan struct{}, 8)
		for _, u := range likers {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				p, err := svc.Publish(ctx, author.ID, feed.PostInput{Title: fmt.Sprintf("run %d", run+1), Content: "pushed"})
				if err == nil {
					err = svc.SetLike(ctx, u, p.ID, true)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
		if n := srv.Count(); n != want {
			return nil, fmt.Errorf("run %d: %d pushes arrived while no worker ran", run+1, n-want)
		}
		want += opt.Groups * opt.Subscriptions
		start := time.Now()
		if err := env.Start(ctx); err != nil {
			return nil, err
		}
		for srv.Count() < want {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("run %d: %d pushes of %d arrived: %w", run+1, srv.Count()-(want-opt.Groups*opt.Subscriptions), opt.Groups*opt.Subscriptions, ctx.Err())
			}
			srv.Wait(want, 100*time.Millisecond)
		}
		ms := srv.Messages()
		last := ms[len(ms)-1].At
		res.Runs = append(res.Runs, float64(opt.Groups*opt.Subscriptions)/last.Sub(start).Seconds())
		env.logf("run %d: %.0f pushes/s", run+1, res.Runs[run])
	}
	for _, m := range srv.Messages() {
		if m.Err != nil {
			return nil, fmt.Errorf("a push was refused by the push service: %v", m.Err)
		}
		if m.Payload != nil {
			res.Checked++
		}
	}
	if n := srv.Count(); n != want {
		return nil, fmt.Errorf("%d pushes arrived, want %d", n, want)
	}
	res.PushesPerS = round(Median(slices.Clone(res.Runs)), 1)
	return res, nil
}
