package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// MixedOptions configure Mixed.
type MixedOptions struct {
	Users        int           // users of the synthetic graph (100)
	Follows      int           // users each user follows (20)
	Rate         float64       // arrivals per second, whatever the server does
	Duration     time.Duration // how long arrivals are scheduled
	PublishShare float64       // share of publishes in the mix (0.06); feed reads give up the difference
	// MaxInFlight is the most requests the generator has outstanding; an
	// arrival that finds this many waiting is not sent and counted unsent.
	MaxInFlight int
	// FreshTimeout is how long a probe may take to reach its followers
	// before it counts as lost.
	FreshTimeout time.Duration
	// CPUProfile, when set, is the file that receives a CPU profile of the
	// whole process (server, workers and generator) while arrivals run.
	CPUProfile string
	// SampleEvery, when positive, samples Env.Gauges and each operation's
	// p99 this often (MixedResult.Samples); SoakWindow is how long the first
	// and the last windows compared in MixedResult.Soak are (none when the
	// run is shorter than two of them).
	SampleEvery time.Duration
	SoakWindow  time.Duration
}

// The mix of Mixed: shares of the arrivals, feed reads taking what the
// publish share leaves (80% with the default 6% publishes).
const (
	mixLikes    = 0.08
	mixFollows  = 0.04
	mixPostRead = 0.02
	// probeEvery is the probe author's publish interval; probeFollowers
	// follow the probe author only, so their first page shows its posts.
	probeEvery     = 500 * time.Millisecond
	probeFollowers = 3
)

// Operations of the mix, as reported.
const (
	opFeed    = "feed"
	opLike    = "like"
	opPublish = "publish"
	opFollow  = "follow"
	opPost    = "post"
)

// OpStats are the answers to one operation of the mix.
type OpStats struct {
	N     int     `json:"n"`      // accepted and answered
	P50ms float64 `json:"p50_ms"` // from the scheduled arrival
	P99ms float64 `json:"p99_ms"`
	Shed  int     `json:"shed"`
}

// MixedResult is the result of Mixed. Latencies run from each request's
// scheduled arrival, so time spent queued in the generator or the server
// counts.
type MixedResult struct {
	Rate        float64            `json:"rate"`
	DurationS   float64            `json:"duration_s"`
	RPS         float64            `json:"rps"`      // requests answered per second (accepted or shed)
	Accepted    int                `json:"accepted"` // answered with success
	Errors      int                `json:"errors"`   // neither success nor a refusal under load
	Shed        int                `json:"shed"`     // refused under load (503/429 with Retry-After)
	Unsent      int                `json:"unsent"`   // arrivals that found MaxInFlight requests waiting
	AcceptedP99 float64            `json:"accepted_p99_ms"`
	ShedP99ms   float64            `json:"shed_p99_ms"`
	Ops         map[string]OpStats `json:"ops"`
	// Freshness: from the probe's publish answer until all its followers'
	// first feed page shows it.
	Probes     int     `json:"probes"`      // probe posts accepted
	ProbesLost int     `json:"probes_lost"` // not in every follower's feed within FreshTimeout
	ProbesShed int     `json:"probes_shed"` // probe publishes refused under load
	FreshP50ms float64 `json:"fresh_p50_ms"`
	FreshP99ms float64 `json:"fresh_p99_ms"`
	FreshMaxms float64 `json:"fresh_max_ms"`
	// BacklogMax is the most requests outstanding at once.
	BacklogMax int64  `json:"backlog_max"`
	FirstError string `json:"first_error,omitempty"`
	// Samples and Soak: with MixedOptions.SampleEvery (soak.go).
	Samples []MixedSample `json:"samples,omitempty"`
	Soak    *SoakCompare  `json:"soak,omitempty"`

	Options MixedOptions `json:"-"`
	Backend string       `json:"-"`
}

// Text renders r for people.
func (r *MixedResult) Text() string {
	s := fmt.Sprintf("open-loop mixed traffic at %.0f req/s for %s, %d users following %d each, inboxes in %s\n"+
		"  answered %.0f req/s: %d accepted (p99 %.1f ms), %d shed (p99 %.1f ms), %d errors, %d unsent; backlog max %d\n",
		r.Rate, r.Options.Duration, r.Options.Users, r.Options.Follows, r.Backend,
		r.RPS, r.Accepted, r.AcceptedP99, r.Shed, r.ShedP99ms, r.Errors, r.Unsent, r.BacklogMax)
	for _, op := range []string{opFeed, opLike, opPublish, opFollow, opPost} {
		o := r.Ops[op]
		s += fmt.Sprintf("  %-8s %7d accepted  p50 %8.2f ms  p99 %8.2f ms  %6d shed\n", op, o.N, o.P50ms, o.P99ms, o.Shed)
	}
	s += fmt.Sprintf("  freshness of %d probes: p50 %.1f ms  p99 %.1f ms  max %.1f ms; %d lost, %d probe publishes shed\n",
		r.Probes, r.FreshP50ms, r.FreshP99ms, r.FreshMaxms, r.ProbesLost, r.ProbesShed)
	if r.FirstError != "" {
		s += "  first error: " + r.FirstError + "\n"
	}
	if r.Soak != nil {
		s += r.Soak.Text()
	}
	return s
}

// Mixed drives feedd's HTTP API with an open-loop load of mixed traffic:
// arrivals at opt.Rate per second for opt.Duration whatever the server
// does, each a feed read, like, publish, follow change or post read of a
// random user of a synthetic graph. Meanwhile a probe author with three
// followers publishes twice a second, and each follower's first feed page
// is polled until it shows the probe: that time is the freshness.
func Mixed(ctx context.Context, env *Env, opt MixedOptions) (*MixedResult, error) {
	switch {
	case opt.Users < 2 || opt.Follows < 1 || opt.Follows >= opt.Users:
		return nil, errors.New("bench: need --users of at least 2 and --follows from 1 to users-1")
	case opt.Rate <= 0 || opt.Duration <= 0:
		return nil, errors.New("bench: --rate and --duration must be positive")
	case opt.PublishShare < 0 || opt.PublishShare+mixLikes+mixFollows+mixPostRead > 1:
		return nil, fmt.Errorf("bench: --publish-share must be from 0 to %.2f", 1-mixLikes-mixFollows-mixPostRead)
	}
	opt.MaxInFlight = max(opt.MaxInFlight, 1)
	if opt.FreshTimeout <= 0 {
		opt.FreshTimeout = time.Minute
	}
	w, err := loadMixedWorld(ctx, env, opt)
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
	tr := &http.Transport{
		MaxIdleConns: opt.MaxInFlight + 16, MaxIdleConnsPerHost: opt.MaxInFlight + 16,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	c := &mixClient{base: "http://" + ln.Addr().String(), http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}

	res := &MixedResult{Rate: opt.Rate, Options: opt, Backend: env.Backend(), Ops: map[string]OpStats{}}
	var (
		mu        sync.Mutex
		lat       = map[string]Latencies{}
		shedLat   Latencies
		inFlight  atomic.Int64
		backlog   atomic.Int64
		wg        sync.WaitGroup
		errorSeen = func(err error) {
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
			res.Errors++
		}
	)
	record := func(op string, scheduled time.Time, out outcome, err error) {
		d := time.Since(scheduled)
		mu.Lock()
		defer mu.Unlock()
		o := res.Ops[op]
		switch {
		case err != nil:
			errorSeen(fmt.Errorf("%s: %w", op, err))
		case out == shed:
			res.Shed++
			o.Shed++
			shedLat = append(shedLat, d)
		default:
			res.Accepted++
			lat[op] = append(lat[op], d)
		}
		res.Ops[op] = o
	}

	probes := newProbeTracker(c, w)
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	probeDone := make(chan struct{})
	go func() { defer close(probeDone); probes.run(pctx, opt.Duration, env.Progress) }()

	rng := mrand.New(mrand.NewPCG(3, 4))
	bar := newProgress(env.Progress, fmt.Sprintf("mixed %.0f req/s", opt.Rate), int(opt.Duration/time.Second))
	if opt.CPUProfile != "" {
		stop, err := startCPUProfile(opt.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	start := time.Now()
	var smp *sampler
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	sampled := make(chan struct{})
	if opt.SampleEvery > 0 {
		smp = &sampler{env: env, every: opt.SampleEvery, lengths: func() map[string]int {
			n := map[string]int{}
			mu.Lock()
			for op, l := range lat {
				n[op] = len(l)
			}
			mu.Unlock()
			n["fresh"] = probes.freshLen()
			return n
		}, held: func() int64 {
			mu.Lock()
			defer mu.Unlock()
			n := cap(shedLat)
			for _, l := range lat {
				n += cap(l)
			}
			return int64(n) * 8 // a time.Duration is an int64
		}}
		go func() { defer close(sampled); smp.run(sctx, start) }()
	} else {
		close(sampled)
	}
	interval := time.Duration(float64(time.Second) / opt.Rate)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= opt.Duration || ctx.Err() != nil {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		if i%int(max(opt.Rate, 1)) == 0 {
			bar.set(int(time.Since(start) / time.Second))
		}
		if inFlight.Load() >= int64(opt.MaxInFlight) {
			mu.Lock()
			res.Unsent++
			mu.Unlock()
			continue
		}
		n := inFlight.Add(1)
		for b := backlog.Load(); n > b && !backlog.CompareAndSwap(b, n); b = backlog.Load() {
		}
		op, req := w.pick(rng, opt.PublishShare)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			out, err := c.do(ctx, req)
			if err == nil && op == opPublish && out == accepted {
				w.addPost(req.result)
			}
			record(op, at, out, err)
		}()
	}
	elapsed := time.Since(start)
	scancel()
	<-sampled
	if smp != nil {
		smp.take(ctx, start) // the end of the arrivals
	}
	wg.Wait()
	bar.set(int(opt.Duration / time.Second))
	bar.finish()
	answered := time.Since(start)
	// The probes still on their way get FreshTimeout after the last was sent.
	probes.stopPublishing()
	pdeadline, pdcancel := context.WithTimeout(ctx, opt.FreshTimeout)
	probes.wait(pdeadline)
	pdcancel()
	pcancel()
	<-probeDone

	res.DurationS = round(elapsed.Seconds(), 3)
	res.RPS = round(float64(res.Accepted+res.Shed)/answered.Seconds(), 0)
	var all Latencies
	for op, l := range lat {
		o := res.Ops[op]
		o.N, o.P50ms, o.P99ms = len(l), round(ms(l.Quantile(0.5)), 3), round(ms(l.Quantile(0.99)), 3)
		res.Ops[op] = o
		all = append(all, l...)
	}
	res.AcceptedP99 = round(ms(all.Quantile(0.99)), 3)
	res.ShedP99ms = round(ms(shedLat.Quantile(0.99)), 3)
	res.BacklogMax = backlog.Load()
	f := probes.result()
	res.Probes, res.ProbesLost, res.ProbesShed = f.accepted, f.lost, f.shed
	res.FreshP50ms = round(ms(f.fresh.Quantile(0.5)), 3)
	res.FreshP99ms = round(ms(f.fresh.Quantile(0.99)), 3)
	res.FreshMaxms = round(ms(f.fresh.Quantile(1)), 3)
	if f.err != nil && res.FirstError == "" {
		res.FirstError = "probe: " + f.err.Error()
	}
	res.Errors += f.errors
	if smp != nil {
		mu.Lock()
		lists := maps.Clone(lat)
		mu.Unlock()
		lists["fresh"] = f.fresh
		res.Samples, res.Soak = smp.finish(lists, opt.SoakWindow)
	}
	return res, nil
}

// ---- the world

type mixedWorld struct {
	first       int64
	users       int
	tokens      []string // tokens[i] is user first+i's session
	probeAuthor string   // its token
	probeFans   []string

	mu    sync.Mutex
	posts []int64 // ids of posts, for likes and post reads
}

func loadMixedWorld(ctx context.Context, env *Env, opt MixedOptions) (*mixedWorld, error) {
	n := opt.Users + 1 + probeFollowers
	first, err := env.Store.CreateUsers(ctx, "mixed-", n, func(int) {})
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	w := &mixedWorld{first: first, users: opt.Users}
	rng := mrand.New(mrand.NewPCG(1, 2))
	var pairs [][2]int64
	for i := range opt.Users {
		picked := map[int]bool{i: true}
		for len(picked) <= opt.Follows {
			if j := rng.IntN(opt.Users); !picked[j] {
				picked[j] = true
				pairs = append(pairs, [2]int64{first + int64(i), first + int64(j)})
			}
		}
	}
	probe := first + int64(opt.Users)
	for k := range probeFollowers {
		pairs = append(pairs, [2]int64{probe + 1 + int64(k), probe})
	}
	if err := env.Store.Follow(ctx, pairs); err != nil {
		return nil, fmt.Errorf("load follows: %w", err)
	}
	if err := env.Store.FixCounts(ctx, first, first+int64(n)-1); err != nil {
		return nil, err
	}
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	for i := range n {
		raw := make([]byte, 24)
		rand.Read(raw)
		tok := base64.RawURLEncoding.EncodeToString(raw)
		if err := env.Service.Auth.CreateSession(ctx, feed.HashSecret(tok), first+int64(i), env.now(), env.now().Add(feed.SessionTTL)); err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		switch {
		case i < opt.Users:
			w.tokens = append(w.tokens, tok)
		case i == opt.Users:
			w.probeAuthor = tok
		default:
			w.probeFans = append(w.probeFans, tok)
		}
	}
	// Two posts per user, so that feeds, likes and post reads have data.
	err = parallel(ctx, 4, 2*opt.Users, func(ctx context.Context, i int) error {
		p, err := env.Service.Publish(ctx, first+int64(i%opt.Users), benchPost(i))
		if err == nil {
			w.addPost(p.ID)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	want := int64(2 * opt.Users * (opt.Follows + 1))
	var got int64
	err = poll(ctx, 50*time.Millisecond, 2*time.Minute, func() (bool, error) {
		got, err = inboxEntries(ctx, env, first, first+int64(opt.Users)-1)
		return got >= want, err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the fan-out (%d of %d entries): %w", got, want, err)
	}
	return w, nil
}

func (w *mixedWorld) addPost(id int64) {
	w.mu.Lock()
	w.posts = append(w.posts, id)
	w.mu.Unlock()
}

func (w *mixedWorld) randomPost(rng *mrand.Rand) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.posts[rng.IntN(len(w.posts))]
}

// pick draws the next arrival of the mix.
func (w *mixedWorld) pick(rng *mrand.Rand, publishShare float64) (string, *mixReq) {
	u := rng.IntN(w.users)
	req := &mixReq{token: w.tokens[u]}
	x := rng.Float64()
	switch {
	case x < mixLikes:
		req.method, req.path = http.MethodPut, "/blog/like/"+strconv.FormatInt(w.randomPost(rng), 10)
		return opLike, req
	case x < mixLikes+publishShare:
		req.method, req.path = http.MethodPost, "/blog"
		req.body = []byte(`{"title":"mixed","content":"A post of feedd bench mixed."}`)
		return opPublish, req
	case x < mixLikes+publishShare+mixFollows:
		v := (u + 1 + rng.IntN(w.users-1)) % w.users // anyone but u
		req.method = http.MethodPut
		req.path = "/follow/" + strconv.FormatInt(w.first+int64(v), 10) + "/" + strconv.FormatBool(rng.IntN(2) == 0)
		return opFollow, req
	case x < mixLikes+publishShare+mixFollows+mixPostRead:
		req.method, req.path = http.MethodGet, "/blog/"+strconv.FormatInt(w.randomPost(rng), 10)
		return opPost, req
	}
	req.method, req.path = http.MethodGet, "/blog/of/follow?lastId="+strconv.FormatInt(time.Now().UnixMilli()+1, 10)
	return opFeed, req
}

// ---- the client

type outcome int

const (
	accepted outcome = iota
	shed
)

type mixReq struct {
	method, path, token string
	body                []byte
	result              int64 // a publish's post id
}

type mixClient struct {
	base string
	http *http.Client
}

// do sends req. A refusal under load (503 or 429 with Retry-After) is shed;
// anything but success or a refusal is an error.
func (c *mixClient) do(ctx context.Context, req *mixReq) (outcome, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, body)
	if err != nil {
		return 0, err
	}
	hr.Header.Set("authorization", req.token)
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		if resp.Header.Get("Retry-After") == "" {
			return 0, fmt.Errorf("%s %s: status %d without Retry-After", req.method, req.path, resp.StatusCode)
		}
		return shed, nil
	}
	var env struct {
		Success  bool            `json:"success"`
		ErrorMsg string          `json:"errorMsg"`
		Data     json.RawMessage `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s %s: status %d: %.200s", req.method, req.path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return 0, fmt.Errorf("%s %s: %w", req.method, req.path, err)
	}
	if !env.Success {
		return 0, fmt.Errorf("%s %s: %s", req.method, req.path, env.ErrorMsg)
	}
	if req.method == http.MethodPost {
		if err := json.Unmarshal(env.Data, &req.result); err != nil {
			return 0, fmt.Errorf("%s %s: data %s: %w", req.method, req.path, env.Data, err)
		}
	}
	req.body = b // the answer, for callers that read it
	return accepted, nil
}
