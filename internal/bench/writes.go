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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// WritesOptions configure Writes.
type WritesOptions struct {
	Users       int           // users set up through the API in each run
	Clients     int           // concurrent clients, closed loop
	Duration    time.Duration // how long likes and follows are each measured, per run
	Runs        int           // runs; medians are reported
	Synchronous string        // the database's synchronous level, for the report
	CPUProfile  string        // file for a CPU profile (pprof) of the whole process over the runs
}

// WritesRun is one run of Writes.
type WritesRun struct {
	SetupSeconds float64 `json:"setup_s"`
	// FanoutSeconds is how long after the setup its follows' fan-out jobs
	// (each new follower's backfill) were all done.
	FanoutSeconds float64 `json:"fanout_after_setup_s"`
	LikesPerS     float64 `json:"likes_per_s"`
	LikesP50ms    float64 `json:"likes_p50_ms"`
	LikesP99ms    float64 `json:"likes_p99_ms"`
	FollowsPerS   float64 `json:"follows_per_s"`
	FollowsP50ms  float64 `json:"follows_p50_ms"`
	FollowsP99ms  float64 `json:"follows_p99_ms"`
	Shed          int64   `json:"shed"` // requests refused with 503 or 429 (retried in the setup)
}

// WritesResult is the medians of the runs of Writes.
type WritesResult struct {
	Backend     string      `json:"backend"`
	Synchronous string      `json:"synchronous,omitempty"`
	Users       int         `json:"users"`
	Clients     int         `json:"clients"`
	WritesRun               // medians
	Runs        []WritesRun `json:"runs"`
}

// Text renders r for people.
func (r *WritesResult) Text() string {
	sync := ""
	if r.Synchronous != "" {
		sync = ", synchronous=" + r.Synchronous
	}
	return fmt.Sprintf("small writes through the HTTP API, %s%s, %d clients (median of %d runs)\n"+
		"  setup of %d users (code, login, /user/me, two follows each)  %7.2f s  (%.0f users/s)\n"+
		"  its follows' fan-out done                                    %7.2f s later\n"+
		"  likes    %8.0f /s   p50 %7.2f ms   p99 %7.2f ms\n"+
		"  follows  %8.0f /s   p50 %7.2f ms   p99 %7.2f ms\n"+
		"  refused under load (503/429): %d\n",
		r.Backend, sync, r.Clients, len(r.Runs), r.Users, r.SetupSeconds, float64(r.Users)/r.SetupSeconds, r.FanoutSeconds,
		r.LikesPerS, r.LikesP50ms, r.LikesP99ms, r.FollowsPerS, r.FollowsP50ms, r.FollowsP99ms, r.Shed)
}

// writesPosts is the number of posts each of a run's two authors publishes:
// what the likes go to.
const writesPosts = 10

// Writes measures concurrent small writes through feedd's HTTP API, each
// acknowledged only once durable: the setup of opt.Users new users, each
// asking for a login code, logging in, reading /user/me and following the
// run's two authors, opt.Clients at a time; then opt.Clients clients toggling
// likes of the authors' posts, then toggling follows between the run's
// users, for opt.Duration each. Before the likes and after the follows it
// waits, untimed, for the fan-out jobs of the follows. Login codes are taken from the service's
// code sender, which Writes replaces.
func Writes(ctx context.Context, env *Env, opt WritesOptions) (*WritesResult, error) {
	switch {
	case opt.Users < opt.Clients || opt.Clients < 1:
		return nil, errors.New("bench: need --concurrency of at least 1 and --users of at least --concurrency")
	case opt.Duration <= 0 || opt.Runs < 1:
		return nil, errors.New("bench: --duration and --runs must be positive")
	}
	codes := &codeBook{}
	env.Service.Codes = codes
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	srv := &http.Server{Handler: env.Handler(nil)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: opt.Clients + 8, MaxIdleConnsPerHost: opt.Clients + 8, IdleConnTimeout: time.Minute, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &apiClient{base: "http://" + ln.Addr().String(), http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, codes: codes}

	if opt.CPUProfile != "" {
		stop, err := startCPUProfile(opt.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	res := &WritesResult{Backend: env.Backend(), Synchronous: opt.Synchronous, Users: opt.Users, Clients: opt.Clients}
	for k := range opt.Runs {
		r, err := writesRun(ctx, env, c, opt, 13_000_000_000+int64(k)*int64(opt.Users+2))
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", k+1, err)
		}
		res.Runs = append(res.Runs, *r)
	}
	med := func(f func(r WritesRun) float64) float64 {
		var xs []float64
		for _, r := range res.Runs {
			xs = append(xs, f(r))
		}
		return round(Median(xs), 3)
	}
	res.WritesRun = WritesRun{
		SetupSeconds:  med(func(r WritesRun) float64 { return r.SetupSeconds }),
		FanoutSeconds: med(func(r WritesRun) float64 { return r.FanoutSeconds }),
		LikesPerS:     med(func(r WritesRun) float64 { return r.LikesPerS }),
		LikesP50ms:    med(func(r WritesRun) float64 { return r.LikesP50ms }),
		LikesP99ms:    med(func(r WritesRun) float64 { return r.LikesP99ms }),
		FollowsPerS:   med(func(r WritesRun) float64 { return r.FollowsPerS }),
		FollowsP50ms:  med(func(r WritesRun) float64 { return r.FollowsP50ms }),
		FollowsP99ms:  med(func(r WritesRun) float64 { return r.FollowsP99ms }),
	}
	for _, r := range res.Runs {
		res.Shed += r.Shed
	}
	return res, nil
}

// writesRun is one run of Writes; its users' phones are phone0 onwards.
func writesRun(ctx context.Context, env *Env, c *apiClient, opt WritesOptions, phone0 int64) (*WritesRun, error) {
	run := &WritesRun{}
	// The two authors, with their posts.
	var authors [2]*apiUser
	var posts []int64
	for i := range authors {
		u, err := c.signUp(ctx, strconv.FormatInt(phone0+int64(i), 10))
		if err != nil {
			return nil, err
		}
		authors[i] = u
		for j := range writesPosts {
			b, _ := json.Marshal(map[string]string{"title": fmt.Sprintf("writes %d", j), "content": "A post liked by feedd bench writes."})
			var id int64
			if err := c.call(ctx, http.MethodPost, "/blog", u.token, b, &id); err != nil {
				return nil, err
			}
			posts = append(posts, id)
		}
	}

	// The setup: every user signs up and follows both authors.
	users := make([]*apiUser, opt.Users)
	bar := newProgress(env.Progress, "set up users", opt.Users)
	var done atomic.Int64
	start := time.Now()
	err := parallel(ctx, opt.Clients, opt.Users, func(ctx context.Context, i int) error {
		u, err := c.signUp(ctx, strconv.FormatInt(phone0+2+int64(i), 10))
		if err != nil {
			return err
		}
		for _, a := range authors {
			if err := c.call(ctx, http.MethodPut, fmt.Sprintf("/follow/%d/true", a.id), u.token, nil, nil); err != nil {
				return err
			}
		}
		users[i] = u
		bar.set(int(done.Add(1)))
		return nil
	})
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("set up users: %w", err)
	}
	run.SetupSeconds = round(time.Since(start).Seconds(), 3)
	start = time.Now()
	if err := drainJobs(ctx, env); err != nil {
		return nil, err
	}
	run.FanoutSeconds = round(time.Since(start).Seconds(), 3)

	// Likes: each client toggles its user's like of a random post.
	perS, lat, err := c.closedLoop(ctx, opt, "likes", env, func(ctx context.Context, j int, rng *rand.Rand) error {
		return c.call(ctx, http.MethodPut, fmt.Sprintf("/blog/like/%d", posts[rng.IntN(len(posts))]), users[j].token, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	run.LikesPerS, run.LikesP50ms, run.LikesP99ms = round(perS, 1), round(ms(lat.Quantile(0.5)), 3), round(ms(lat.Quantile(0.99)), 3)

	// Follows: each client toggles its user's follow of a random user of the
	// run (each call a change: the client knows whom its user follows).
	following := make([]map[int64]bool, opt.Clients)
	for j := range following {
		following[j] = map[int64]bool{}
	}
	perS, lat, err = c.closedLoop(ctx, opt, "follows", env, func(ctx context.Context, j int, rng *rand.Rand) error {
		t := users[j].id
		for t == users[j].id {
			t = users[rng.IntN(len(users))].id
		}
		f := !following[j][t]
		if err := c.call(ctx, http.MethodPut, fmt.Sprintf("/follow/%d/%t", t, f), users[j].token, nil, nil); err != nil {
			return err
		}
		following[j][t] = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	run.FollowsPerS, run.FollowsP50ms, run.FollowsP99ms = round(perS, 1), round(ms(lat.Quantile(0.5)), 3), round(ms(lat.Quantile(0.99)), 3)
	run.Shed = c.shed.Swap(0)
	return run, drainJobs(ctx, env)
}

// drainJobs waits, untimed, for the fan-out jobs of the follows made so far
// to be worked, so that the next measurement does not start behind them
// (the API sheds while fan-out lags: --max-lag).
func drainJobs(ctx context.Context, env *Env) error {
	if env.Jobs == nil {
		return nil
	}
	var n int64
	err := poll(ctx, 50*time.Millisecond, 10*time.Minute, func() (bool, error) {
		var err error
		n, err = env.Jobs(ctx)
		return n == 0, err
	})
	if err != nil {
		return fmt.Errorf("waiting for the fan-out jobs (%d left): %w", n, err)
	}
	return nil
}

// closedLoop runs opt.Clients clients calling op (client j, its own random
// source) back to back for opt.Duration, and returns the calls per second
// and their latencies.
func (c *apiClient) closedLoop(ctx context.Context, opt WritesOptions, label string, env *Env, op func(ctx context.Context, j int, rng *rand.Rand) error) (float64, Latencies, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		lat   Latencies
		first error
		wg    sync.WaitGroup
	)
	env.logf("%s: %d clients for %s", label, opt.Clients, opt.Duration)
	start := time.Now()
	deadline := start.Add(opt.Duration)
	for j := range opt.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(j), uint64(start.UnixNano())))
			var mine Latencies
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				if err := op(ctx, j, rng); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", label, err)
						cancel()
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, nil, first
	}
	return float64(len(lat)) / time.Since(start).Seconds(), lat, nil
}

// codeBook is a feed.CodeSender that keeps the last code of each phone.
type codeBook struct{ m sync.Map } // phone -> code

func (b *codeBook) SendCode(_ context.Context, phone, code string, _ time.Time) error {
	b.m.Store(phone, code)
	return nil
}

var _ feed.CodeSender = (*codeBook)(nil)

// apiClient calls feedd's compatible API as an application would.
type apiClient struct {
	base  string
	http  *http.Client
	codes *codeBook
	shed  atomic.Int64 // calls refused with 503 or 429 and retried
}

type apiUser struct {
	id    int64
	token string
}

// signUp asks for a login code for phone, logs in with it and reads
// /user/me: a new user's first three calls.
func (c *apiClient) signUp(ctx context.Context, phone string) (*apiUser, error) {
	if err := c.call(ctx, http.MethodPost, "/user/code?phone="+phone, "", nil, nil); err != nil {
		return nil, err
	}
	code, ok := c.codes.m.LoadAndDelete(phone)
	if !ok {
		return nil, fmt.Errorf("no login code was sent to %s", phone)
	}
	b, _ := json.Marshal(map[string]string{"phone": phone, "code": code.(string)})
	u := &apiUser{}
	if err := c.call(ctx, http.MethodPost, "/user/login", "", b, &u.token); err != nil {
		return nil, err
	}
	var me struct {
		ID int64 `json:"id"`
	}
	if err := c.call(ctx, http.MethodGet, "/user/me", u.token, nil, &me); err != nil {
		return nil, err
	}
	u.id = me.ID
	return u, nil
}

// call sends one request and decodes the envelope's data into out (if not
// nil). A refusal under load (503, or 429, with Retry-After) is counted and
// sent again after a short pause; any other failure is an error.
func (c *apiClient) call(ctx context.Context, method, path, token string, body []byte, out any) error {
	for {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("authorization", token)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) && resp.Header.Get("Retry-After") != "" {
			c.shed.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		var env struct {
			Success  bool            `json:"success"`
			ErrorMsg string          `json:"errorMsg"`
			Data     json.RawMessage `json:"data"`
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: status %d: %.200s", method, path, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, &env); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		if !env.Success {
			return fmt.Errorf("%s %s: %s", method, path, env.ErrorMsg)
		}
		if out != nil && len(env.Data) > 0 && string(env.Data) != "null" { // no data: out stays as it is
			if err := json.Unmarshal(env.Data, out); err != nil {
				return fmt.Errorf("%s %s: data %.200s: %w", method, path, env.Data, err)
			}
		}
		return nil
	}
}
