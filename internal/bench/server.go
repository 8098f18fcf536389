package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// ServerOptions shape `feedd bench server`: the server API over HTTP on
// loopback, as an app's backend calls it.
type ServerOptions struct {
	Users       int `json:"users"`       // users upserted, in batches of 1,000
	Pairs       int `json:"pairs"`       // follow pairs of one batch call
	Publishes   int `json:"publishes"`   // distinct foreign ids published, each then retried once
	Retries     int `json:"retries"`     // concurrent publishes of one foreign id, at the end
	Concurrency int `json:"concurrency"` // publishes in flight at once
	Runs        int `json:"runs"`        // rounds of the follow batch (medians)
	// CPUProfile, when set, is the file of a CPU profile of the follow
	// batches.
	CPUProfile string `json:"-"`
}

// DefaultServerOptions is the run of BENCHMARKS.md.
func DefaultServerOptions() ServerOptions {
	return ServerOptions{Users: 10_000, Pairs: 10_000, Publishes: 2000, Retries: 50, Concurrency: 16, Runs: 3}
}

// ServerResult is the outcome of `feedd bench server`.
type ServerResult struct {
	Backend string        `json:"backend"`
	Options ServerOptions `json:"options"`
	// Upserts: users made per second through POST /v1/server/users, and
	// the p50 of one 1,000-user call.
	UpsertPerS  float64 `json:"upsert_users_per_s"`
	UpsertP50ms float64 `json:"upsert_batch_p50_ms"`
	// The follow batch: one POST /v1/server/follows of Pairs new pairs,
	// its seconds (median of the runs) and pairs per second.
	FollowSeconds float64   `json:"follow_batch_s"`
	FollowPerS    float64   `json:"follow_pairs_per_s"`
	FollowRuns    []float64 `json:"follow_batch_runs_s"`
	// Publishes under foreign ids, Concurrency at once: the first of each
	// (201) and its retry (200, the first post, nothing published).
	PublishPerS  float64 `json:"publish_per_s"`
	PublishP50ms float64 `json:"publish_p50_ms"`
	PublishP99ms float64 `json:"publish_p99_ms"`
	RetryP50ms   float64 `json:"retry_p50_ms"`
	RetryP99ms   float64 `json:"retry_p99_ms"`
	// Retries of one foreign id at once: how many made a post (1).
	RetriesCreated int `json:"retries_created"`
}

// Text is the human-readable result.
func (r *ServerResult) Text() string {
	return fmt.Sprintf("server API, %s, over HTTP on loopback\n"+
		"  upsert       %8.0f users/s     (batches of 1000: p50 %.1f ms)\n"+
		"  follows      %8.3f s for %d pairs in one call (median of %d; %.0f pairs/s)\n"+
		"  publish      %8.0f posts/s     p50 %.2f ms   p99 %.2f ms   (%d foreign ids, %d at once)\n"+
		"  retry        p50 %.2f ms   p99 %.2f ms   (the same foreign id again: the first post)\n"+
		"  %d concurrent retries of one foreign id made %d post\n",
		r.Backend, r.UpsertPerS, r.UpsertP50ms, r.FollowSeconds, r.Options.Pairs, len(r.FollowRuns), r.FollowPerS,
		r.PublishPerS, r.PublishP50ms, r.PublishP99ms, r.Options.Publishes, r.Options.Concurrency,
		r.RetryP50ms, r.RetryP99ms, r.Options.Retries, r.RetriesCreated)
}

// serverClient calls the server API with an API key.
type serverClient struct {
	base, key string
	http      *http.Client
}

// call POSTs (or sends method with) body as JSON and returns the status,
// decoding a 2xx answer into out.
func (c *serverClient) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// batchAnswer is a batch's answer: each item's result.
type batchAnswer struct {
	Results []struct {
		OK    *bool           `json:"ok"`
		ID    int64           `json:"id"`
		Error json.RawMessage `json:"error"`
	} `json:"results"`
}

// failed returns the first refused item's error, if any.
func (a *batchAnswer) failed() error {
	for i, r := range a.Results {
		if r.Error != nil {
			return fmt.Errorf("item %d refused: %s", i, r.Error)
		}
	}
	return nil
}

// Server measures the server API (docs/integrating.md, "The server API"):
// batch upserts of users, one batch call of Pairs follows (Runs times, on
// fresh pairs), and idempotent publishes under foreign ids, each retried
// once, then Retries concurrent publishes of one foreign id, which must
// make one post. The fan-out workers run meanwhile, as in production: the
// follows' backfills and the posts' deliveries share the machine.
func Server(ctx context.Context, env *Env, opt ServerOptions) (*ServerResult, error) {
	switch {
	case opt.Users < 2 || opt.Pairs < 1 || opt.Publishes < 1 || opt.Retries < 1 || opt.Concurrency < 1 || opt.Runs < 1:
		return nil, errors.New("bench: server needs positive --server-users (at least 2), --server-pairs, --server-publishes, --server-retries, --concurrency and --runs")
	case opt.Pairs*opt.Runs > opt.Users*(opt.Users-1):
		return nil, errors.New("bench: --server-pairs times --runs exceeds the pairs of --server-users users")
	}
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	key, _, err := env.Service.CreateAPIKey(ctx, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: env.Handler(nil)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: opt.Concurrency + 8, MaxIdleConnsPerHost: opt.Concurrency + 8, IdleConnTimeout: time.Minute, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &serverClient{base: "http://" + ln.Addr().String(), key: key, http: &http.Client{Transport: tr, Timeout: 5 * time.Minute}}
	res := &ServerResult{Backend: env.Backend(), Options: opt}

	// Upserts, 1,000 users a call.
	ref := func(i int) string { return fmt.Sprintf("bench-user-%d", i) }
	var upserts Latencies
	start := time.Now()
	for from := 0; from < opt.Users; from += 1000 {
		users := make([]map[string]string, 0, 1000)
		for i := from; i < min(from+1000, opt.Users); i++ {
			users = append(users, map[string]string{"ref": ref(i), "name": fmt.Sprintf("User %d", i)})
		}
		var a batchAnswer
		t0 := time.Now()
		if _, err := c.call(ctx, http.MethodPost, "/v1/server/users", map[string]any{"users": users}, &a); err != nil {
			return nil, err
		}
		upserts = append(upserts, time.Since(t0))
		if err := a.failed(); err != nil {
			return nil, fmt.Errorf("upsert: %w", err)
		}
	}
	res.UpsertPerS = round(float64(opt.Users)/time.Since(start).Seconds(), 0)
	res.UpsertP50ms = round(ms(upserts.Quantile(0.5)), 3)
	env.logf("upserted %d users: %.0f users/s", opt.Users, res.UpsertPerS)

	// Follow batches: each run's pairs are new (a follower's followees are
	// the users after it, run after run).
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[[2]int]bool{}
	stopProfile := func() {}
	if opt.CPUProfile != "" {
		if stopProfile, err = startCPUProfile(opt.CPUProfile); err != nil {
			return nil, err
		}
	}
	for run := range opt.Runs {
		pairs := make([]map[string]string, 0, opt.Pairs)
		for len(pairs) < opt.Pairs {
			a, b := rng.IntN(opt.Users), rng.IntN(opt.Users)
			if a == b || seen[[2]int{a, b}] {
				continue
			}
			seen[[2]int{a, b}] = true
			pairs = append(pairs, map[string]string{"follower": ref(a), "followee": ref(b)})
		}
		var a batchAnswer
		t0 := time.Now()
		if _, err := c.call(ctx, http.MethodPost, "/v1/server/follows", map[string]any{"pairs": pairs}, &a); err != nil {
			return nil, err
		}
		d := time.Since(t0).Seconds()
		if err := a.failed(); err != nil {
			return nil, fmt.Errorf("follows: %w", err)
		}
		res.FollowRuns = append(res.FollowRuns, round(d, 3))
		env.logf("run %d/%d: %d follows in one call: %.3f s", run+1, opt.Runs, opt.Pairs, d)
	}
	stopProfile()
	res.FollowSeconds = round(Median(res.FollowRuns), 3)
	res.FollowPerS = round(float64(opt.Pairs)/res.FollowSeconds, 0)

	// Publishes, each retried once.
	var mu sync.Mutex
	var first, again Latencies
	start = time.Now()
	err = parallel(ctx, opt.Concurrency, opt.Publishes, func(ctx context.Context, i int) error {
		post := map[string]any{"user": ref(i % opt.Users), "foreign_id": fmt.Sprintf("bench-post-%d", i), "title": fmt.Sprintf("Post %d", i),
			"content": "Published by feedd bench server under a foreign id."}
		var p, q struct{ ID int64 }
		t0 := time.Now()
		st, err := c.call(ctx, http.MethodPost, "/v1/server/posts", post, &p)
		d1 := time.Since(t0)
		if err != nil {
			return err
		} else if st != http.StatusCreated {
			return fmt.Errorf("publish of a new foreign id answered %d", st)
		}
		t0 = time.Now()
		st, err = c.call(ctx, http.MethodPost, "/v1/server/posts", post, &q)
		d2 := time.Since(t0)
		if err != nil {
			return err
		} else if st != http.StatusOK || q.ID != p.ID {
			return fmt.Errorf("retry of a foreign id answered %d, post %d (first %d)", st, q.ID, p.ID)
		}
		mu.Lock()
		first, again = append(first, d1), append(again, d2)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publishes: %w", err)
	}
	res.PublishPerS = round(float64(opt.Publishes)/time.Since(start).Seconds(), 0) // each with its retry
	res.PublishP50ms, res.PublishP99ms = round(ms(first.Quantile(0.5)), 3), round(ms(first.Quantile(0.99)), 3)
	res.RetryP50ms, res.RetryP99ms = round(ms(again.Quantile(0.5)), 3), round(ms(again.Quantile(0.99)), 3)

	// Concurrent retries of one foreign id.
	var created int
	err = parallel(ctx, opt.Retries, opt.Retries, func(ctx context.Context, i int) error {
		post := map[string]any{"user": ref(0), "foreign_id": "bench-retried", "title": "Retried", "content": "Published once."}
		st, err := c.call(ctx, http.MethodPost, "/v1/server/posts", post, nil)
		if err != nil {
			return err
		}
		if st == http.StatusCreated {
			mu.Lock()
			created++
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("concurrent retries: %w", err)
	}
	res.RetriesCreated = created
	if created != 1 {
		return res, fmt.Errorf("bench: %d concurrent publishes of one foreign id made %d posts, want 1", opt.Retries, created)
	}
	return res, nil
}
