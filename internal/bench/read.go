package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
	goredis "github.com/redis/go-redis/v9"
)

// ReadOptions configure Read.
type ReadOptions struct {
	Users       int           // users of the synthetic graph
	Follows     int           // users each user follows
	Posts       int           // posts each user publishes
	Concurrency int           // concurrent clients (closed loop)
	Duration    time.Duration // measurement of each path, per run
	Runs        int
	PageSize    int // the service's default page size (reported only)
	// CPUProfile, when set, is the file that receives a CPU profile of
	// this process (server and clients) during the last feedd run (with
	// RepostShare: the last run on the graph with reposts).
	CPUProfile string
	// RepostShare, when above 0, adds a second graph of the same shape in
	// which that share of each user's Posts are reposts (of random posts
	// of the graph), and measures feedd's path on it too, in the same runs.
	RepostShare float64
}

// ReadRun is one measurement of one path.
type ReadRun struct {
	Requests int
	RPS      float64
	P50, P99 time.Duration
	// CPU is this process's CPU time per page (server and load generator:
	// getrusage), RedisCPU the Redis server's (INFO cpu; 0 without Redis).
	CPU, RedisCPU time.Duration
}

// ReadResult is the result of Read: medians over the runs.
type ReadResult struct {
	FeeddRPS   float64 `json:"feedd_rps"`
	SeedRPS    float64 `json:"seed_rps"`
	FeeddP99ms float64 `json:"feedd_p99_ms"`
	SeedP99ms  float64 `json:"seed_p99_ms"`
	// CPU per page, µs: this process (feedd's server and the load
	// generator, which both paths share) and the Redis server.
	FeeddCPUus      float64 `json:"feedd_cpu_us_per_page"`
	SeedCPUus       float64 `json:"seed_cpu_us_per_page"`
	FeeddRedisCPUus float64 `json:"feedd_redis_cpu_us_per_page,omitempty"`
	SeedRedisCPUus  float64 `json:"seed_redis_cpu_us_per_page,omitempty"`
	// With RepostShare: feedd's path on the graph with reposts, and its
	// CPU per page over the plain graph's, run by run, the median.
	RepostsRPS       float64 `json:"feedd_reposts_rps,omitempty"`
	RepostsP99ms     float64 `json:"feedd_reposts_p99_ms,omitempty"`
	RepostsCPUus     float64 `json:"feedd_reposts_cpu_us_per_page,omitempty"`
	RepostsCPURatio  float64 `json:"reposts_over_none_cpu,omitempty"`
	RepostsRedisCPUs float64 `json:"feedd_reposts_redis_cpu_us_per_page,omitempty"`

	FeeddP50ms, SeedP50ms float64       `json:"-"`
	Feedd, Seed, Reposts  []ReadRun     `json:"-"`
	Options               ReadOptions   `json:"-"`
	Backend               string        `json:"-"`
	Entries               int64         `json:"-"`
	Likes                 int64         `json:"-"`
	Setup                 time.Duration `json:"-"`
}

// Text renders r for people.
func (r *ReadResult) Text() string {
	o := r.Options
	reposts := ""
	if o.RepostShare > 0 {
		reposts = fmt.Sprintf("  with reposts (%.0f%% of each user's entries): feedd %9.0f req/s   p99 %7.2f ms   CPU per page %.0f µs (Redis %.0f µs): %.3f of the plain graph's\n",
			100*o.RepostShare, r.RepostsRPS, r.RepostsP99ms, r.RepostsCPUus, r.RepostsRedisCPUs, r.RepostsCPURatio)
	}
	return reposts + fmt.Sprintf("GET /blog/of/follow, %d users following %d each, %d posts each (%d inbox entries), inboxes in %s;\n"+
		"%d clients, closed loop, %s per path per run (median of %d runs)\n"+
		"  feedd  %9.0f req/s   p50 %7.2f ms   p99 %7.2f ms\n"+
		"  seed   %9.0f req/s   p50 %7.2f ms   p99 %7.2f ms\n"+
		"  feedd/seed %.1fx req/s, p99 %.2fx\n"+
		"  CPU per page: feedd %.0f µs, seed %.0f µs (this process, load generator included); Redis %.0f / %.0f µs\n",
		o.Users, o.Follows, o.Posts, r.Entries, r.Backend, o.Concurrency, o.Duration, len(r.Feedd),
		r.FeeddRPS, r.FeeddP50ms, r.FeeddP99ms, r.SeedRPS, r.SeedP50ms, r.SeedP99ms,
		r.FeeddRPS/r.SeedRPS, r.FeeddP99ms/r.SeedP99ms,
		r.FeeddCPUus, r.SeedCPUus, r.FeeddRedisCPUus, r.SeedRedisCPUus)
}

// SeedPath is where Read mounts the seed read path beside feedd's API.
const SeedPath = "/bench/seed/blog/of/follow"

// Read builds a synthetic follow graph, publishes every post through the
// service and lets the real fan-out fill the inboxes, then drives closed-loop
// clients that scroll their follow feed over HTTP, against feedd's handler
// (GET /blog/of/follow) and against the seed read path (SeedHandler) mounted
// on the same server, one after the other, for opt.Duration each.
func Read(ctx context.Context, env *Env, opt ReadOptions) (*ReadResult, error) {
	switch {
	case opt.Users < 2 || opt.Follows < 1 || opt.Follows >= opt.Users:
		return nil, errors.New("bench: need --users of at least 2 and --follows from 1 to users-1")
	case opt.Posts < 1 || opt.Concurrency < 1 || opt.Duration <= 0:
		return nil, errors.New("bench: --posts, --concurrency and --duration must be positive")
	case opt.Posts*(opt.Follows+1) > env.InboxCap:
		return nil, fmt.Errorf("bench: %d posts from %d followees overflow the inbox cap %d", opt.Posts, opt.Follows+1, env.InboxCap)
	}
	if opt.RepostShare < 0 || opt.RepostShare >= 1 {
		return nil, errors.New("bench: --repost-share must be from 0 to below 1")
	}
	opt.Runs = max(opt.Runs, 1)
	setup := time.Now()
	w, err := loadReadWorld(ctx, env, opt, "read-", 0, true)
	if err != nil {
		return nil, err
	}
	var wr *readWorld // the graph with reposts
	if opt.RepostShare > 0 {
		if wr, err = loadReadWorld(ctx, env, opt, "readr-", opt.RepostShare, false); err != nil {
			return nil, err
		}
	}
	res := &ReadResult{Options: opt, Backend: env.Backend(), Entries: w.entries, Likes: w.likes}

	srv := &http.Server{Handler: env.Handler(map[string]http.Handler{
		"GET " + SeedPath: SeedHandler(env.Service, env.Redis, env.Prefix),
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	lg := newLoadGen(base, w.tokens, opt.Concurrency)
	defer lg.client.CloseIdleConnections()
	var lgr *loadGen
	if wr != nil {
		lgr = newLoadGen(base, wr.tokens, opt.Concurrency)
		defer lgr.client.CloseIdleConnections()
		if err := lgr.warm(ctx, "/blog/of/follow"); err != nil {
			return nil, fmt.Errorf("warm-up of the graph with reposts: %w", err)
		}
	}

	// Warm up: every viewer's first page on both paths. feedd rebuilds each
	// Redis inbox on its first read (fan-out wrote entries but not the
	// marker that tells a built inbox from a lost one); that cost is not
	// the steady state.
	// The seed design reads a plain sorted set of its own (seedKey): each
	// viewer's inbox, once feedd has built it, is copied there, whatever
	// layout feedd keeps its inboxes in (packed, by default).
	for _, path := range []string{"/blog/of/follow", SeedPath} {
		if path == SeedPath && env.Redis != nil {
			if err := seedInboxes(ctx, env, w.viewers); err != nil {
				return nil, fmt.Errorf("copy the inboxes for the seed path: %w", err)
			}
		}
		if err := lg.warm(ctx, path); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", path, err)
		}
	}
	res.Setup = time.Since(setup)
	env.logf("setup %.1fs: %d users, %d follows each, %d posts, %d inbox entries, %d likes",
		res.Setup.Seconds(), opt.Users, opt.Follows, opt.Users*opt.Posts, w.entries, w.likes)

	const repostsPath = "reposts" // feedd's path on the graph with reposts
	profiled := "/blog/of/follow"
	if lgr != nil {
		profiled = repostsPath
	}
	for run := 1; run <= opt.Runs; run++ {
		order := []string{"/blog/of/follow", SeedPath}
		if lgr != nil {
			order = append(order, repostsPath)
		}
		for range (run - 1) % len(order) { // rotate, so drift cancels
			order = append(order[1:], order[0])
		}
		for _, path := range order {
			var stop func()
			if opt.CPUProfile != "" && run == opt.Runs && path == profiled {
				if stop, err = startCPUProfile(opt.CPUProfile); err != nil {
					return nil, err
				}
			}
			g, label := lg, map[string]string{SeedPath: "seed", "/blog/of/follow": "feedd", repostsPath: "feedd, reposts"}[path]
			if path == repostsPath {
				g, path = lgr, "/blog/of/follow"
			}
			cpu0, rcpu0 := ProcessCPU(), env.redisCPU(ctx)
			r, err := g.run(ctx, path, opt.Duration, fmt.Sprintf("run %d: %s", run, label), env.Progress)
			cpu, rcpu := ProcessCPU()-cpu0, env.redisCPU(ctx)-rcpu0
			if stop != nil {
				stop()
			}
			if err != nil {
				return nil, err
			}
			if r.Requests > 0 {
				r.CPU, r.RedisCPU = cpu/time.Duration(r.Requests), rcpu/time.Duration(r.Requests)
			}
			switch {
			case g == lgr:
				res.Reposts = append(res.Reposts, r)
			case path == SeedPath:
				res.Seed = append(res.Seed, r)
			default:
				res.Feedd = append(res.Feedd, r)
			}
		}
		f, s := res.Feedd[run-1], res.Seed[run-1]
		env.logf("run %d/%d: feedd %.0f req/s p50 %.2f ms p99 %.2f ms; seed %.0f req/s p50 %.2f ms p99 %.2f ms",
			run, opt.Runs, f.RPS, ms(f.P50), ms(f.P99), s.RPS, ms(s.P50), ms(s.P99))
		if lgr != nil {
			rr := res.Reposts[run-1]
			env.logf("run %d/%d: feedd with reposts %.0f req/s p99 %.2f ms, CPU a page %.0f µs against %.0f µs",
				run, opt.Runs, rr.RPS, ms(rr.P99), float64(rr.CPU.Nanoseconds())/1e3, float64(f.CPU.Nanoseconds())/1e3)
		}
	}
	med := func(runs []ReadRun, f func(ReadRun) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return Median(xs)
	}
	rps := func(r ReadRun) float64 { return r.RPS }
	p50 := func(r ReadRun) float64 { return ms(r.P50) }
	p99 := func(r ReadRun) float64 { return ms(r.P99) }
	res.FeeddRPS, res.SeedRPS = round(med(res.Feedd, rps), 0), round(med(res.Seed, rps), 0)
	res.FeeddP50ms, res.SeedP50ms = round(med(res.Feedd, p50), 3), round(med(res.Seed, p50), 3)
	res.FeeddP99ms, res.SeedP99ms = round(med(res.Feedd, p99), 3), round(med(res.Seed, p99), 3)
	cpu := func(r ReadRun) float64 { return float64(r.CPU.Nanoseconds()) / 1e3 }
	rcpu := func(r ReadRun) float64 { return float64(r.RedisCPU.Nanoseconds()) / 1e3 }
	res.FeeddCPUus, res.SeedCPUus = round(med(res.Feedd, cpu), 1), round(med(res.Seed, cpu), 1)
	res.FeeddRedisCPUus, res.SeedRedisCPUus = round(med(res.Feedd, rcpu), 1), round(med(res.Seed, rcpu), 1)
	if len(res.Reposts) > 0 {
		res.RepostsRPS, res.RepostsP99ms = round(med(res.Reposts, rps), 0), round(med(res.Reposts, p99), 3)
		res.RepostsCPUus, res.RepostsRedisCPUs = round(med(res.Reposts, cpu), 1), round(med(res.Reposts, rcpu), 1)
		ratios := make([]float64, len(res.Reposts))
		for i := range res.Reposts {
			ratios[i] = cpu(res.Reposts[i]) / cpu(res.Feedd[i])
		}
		res.RepostsCPURatio = round(Median(ratios), 3)
	}
	return res, nil
}

// readWorld is the synthetic graph of Read.
type readWorld struct {
	first, last int64
	tokens      []string // session tokens of the viewers
	viewers     []int64  // their user ids
	entries     int64
	likes       int64
}

// loadReadWorld loads a graph of opt's shape whose users' phones start
// with tag, starting the workers first when start is set. Of each user's
// opt.Posts entries, the share reposts are reposts of random posts of the
// graph, the others posts.
func loadReadWorld(ctx context.Context, env *Env, opt ReadOptions, tag string, reposts float64, start bool) (*readWorld, error) {
	bar := newProgress(env.Progress, "load users", opt.Users)
	first, err := env.Store.CreateUsers(ctx, tag, opt.Users, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	w := &readWorld{first: first, last: first + int64(opt.Users) - 1}
	// Each user follows opt.Follows others, drawn at random (fixed seed).
	rng := mrand.New(mrand.NewPCG(1, 2))
	pairs := make([][2]int64, 0, opt.Users*opt.Follows)
	for i := range opt.Users {
		picked := map[int]bool{i: true}
		for len(picked) <= opt.Follows {
			j := rng.IntN(opt.Users)
			if !picked[j] {
				picked[j] = true
				pairs = append(pairs, [2]int64{first + int64(i), first + int64(j)})
			}
		}
	}
	if err := env.Store.Follow(ctx, pairs); err != nil {
		return nil, fmt.Errorf("load follows: %w", err)
	}
	if err := env.Store.FixCounts(ctx, w.first, w.last); err != nil {
		return nil, err
	}
	if start {
		if err := env.Start(ctx); err != nil {
			return nil, fmt.Errorf("start workers: %w", err)
		}
	}
	// Every post and repost through the service, the workers fanning them
	// out meanwhile, in rounds: in each, every user publishes a post or, in
	// the rounds drawn for their reposts (never the first), reposts a
	// random post of an earlier round by someone else (fixed seed). So
	// reposts and posts are mixed in every inbox, as they would be.
	total := opt.Users * opt.Posts
	shares := int(float64(opt.Posts)*reposts + 0.5)
	reposting := make([]map[int]bool, opt.Users) // user -> their repost rounds
	for u := range reposting {
		reposting[u] = map[int]bool{}
		for _, r := range rng.Perm(opt.Posts - 1)[:min(shares, opt.Posts-1)] {
			reposting[u][r+1] = true
		}
	}
	bar = newProgress(env.Progress, "publish posts", total)
	var published atomic.Int64
	var posts, authors []int64 // the posts of the rounds before, and their authors
	// reposted: user -> the posts they reposted.
	reposted := make([]map[int64]bool, opt.Users)
	for round := range opt.Posts {
		targets := make([]int64, opt.Users)
		for u := range targets {
			// Never a post u reposted already: a repost again is a no-op,
			// and the inboxes would never hold the entries waited for.
			for reposting[u][round] && targets[u] == 0 {
				if i := rng.IntN(len(posts)); authors[i] != first+int64(u) && !reposted[u][posts[i]] {
					targets[u] = posts[i]
					if reposted[u] == nil {
						reposted[u] = map[int64]bool{}
					}
					reposted[u][posts[i]] = true
				}
			}
		}
		made := make([]int64, opt.Users)
		err = parallel(ctx, 4, opt.Users, func(ctx context.Context, u int) error {
			defer func() { bar.set(int(published.Add(1))) }()
			if targets[u] != 0 {
				return env.Service.Repost(ctx, first+int64(u), targets[u], true)
			}
			p, err := env.Service.Publish(ctx, first+int64(u), benchPost(round*opt.Users+u))
			if err == nil {
				made[u] = p.ID
			}
			return err
		})
		if err != nil {
			bar.finish()
			return nil, fmt.Errorf("publish: %w", err)
		}
		for u, id := range made {
			if id != 0 {
				posts, authors = append(posts, id), append(authors, first+int64(u))
			}
		}
	}
	bar.finish()
	// Wait until the fan-out has filled every inbox: each user's inbox gets
	// their own posts and those of the users they follow.
	want := int64(opt.Users) * int64(opt.Posts) * int64(opt.Follows+1)
	bar = newProgress(env.Progress, "fan-out", int(want))
	err = poll(ctx, 100*time.Millisecond, 10*time.Minute, func() (bool, error) {
		n, err := inboxEntries(ctx, env, w.first, w.last)
		bar.set(int(n))
		w.entries = n
		return n >= want, err
	})
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("waiting for the fan-out (%d of %d entries): %w", w.entries, want, err)
	}
	if w.likes, err = env.Store.LikeShare(ctx, w.first, w.last, 3); err != nil {
		return nil, fmt.Errorf("load likes: %w", err)
	}
	// Viewers: up to 1024 users spread over the graph, each with a session.
	v := min(opt.Users, 1024)
	for i := range v {
		u := first + int64(i*opt.Users/v)
		tok, err := feed.NewSessionToken(u, rand.Reader)
		if err != nil {
			return nil, err
		}
		if err := env.Service.Auth.CreateSession(ctx, feed.HashSecret(tok), u, env.now(), env.now().Add(feed.SessionTTL)); err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		w.tokens = append(w.tokens, tok)
		w.viewers = append(w.viewers, u)
	}
	return w, nil
}

// seedInboxes copies the Redis inboxes of users, as feedd's Inbox reads
// them, into the seed design's sorted sets (seedKey), one pipeline each.
func seedInboxes(ctx context.Context, env *Env, users []int64) error {
	ib := redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: env.Prefix, Layout: env.Layout, Cap: env.InboxCap})
	for _, u := range users {
		es, err := ib.Page(ctx, u, feed.Top(), 0, env.InboxCap)
		if err != nil {
			return fmt.Errorf("inbox of user %d: %w", u, err)
		}
		key := seedKey(env.Prefix, u)
		zs := make([]goredis.Z, len(es))
		for i, e := range es {
			zs[i] = goredis.Z{Score: float64(e.Score), Member: strconv.FormatInt(e.PostID, 10)}
		}
		if _, err := env.Redis.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Del(ctx, key)
			if len(zs) > 0 {
				p.ZAdd(ctx, key, zs...)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// inboxEntries counts the entries of the inboxes of users first..last.
func inboxEntries(ctx context.Context, env *Env, first, last int64) (int64, error) {
	if env.Redis == nil {
		return env.Store.InboxEntries(ctx, first, last)
	}
	// Only counts: no delivery goes through it, so no connections of its own.
	ib := redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: env.Prefix, Layout: env.Layout})
	var n int64
	for lo := first; lo <= last; lo += 10_000 {
		ids := make([]int64, 0, min(10_000, last-lo+1))
		for u := lo; u <= min(lo+9_999, last); u++ {
			ids = append(ids, u)
		}
		lens, err := ib.Lens(ctx, ids)
		if err != nil {
			return 0, err
		}
		for _, l := range lens {
			n += int64(l)
		}
	}
	return n, nil
}

// ---- load generator

// loadGen is a closed-loop HTTP client: each of its workers scrolls the feed
// of one viewer at a time, up to maxPages pages or to the end, then moves
// on to another viewer.
type loadGen struct {
	base        string
	tokens      []string
	concurrency int
	client      *http.Client
}

const maxPages = 5

func newLoadGen(base string, tokens []string, concurrency int) *loadGen {
	tr := &http.Transport{
		MaxIdleConns:        concurrency,
		MaxIdleConnsPerHost: concurrency,
		MaxConnsPerHost:     concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &loadGen{base: base, tokens: tokens, concurrency: concurrency, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

type feedPage struct {
	Success  bool   `json:"success"`
	ErrorMsg string `json:"errorMsg"`
	Data     *struct {
		List    []json.RawMessage `json:"list"`
		MinTime int64             `json:"minTime"`
		Offset  int               `json:"offset"`
	} `json:"data"`
}

// get fetches one page; it returns nil data at the end of the feed.
func (g *loadGen) get(ctx context.Context, path, token string, lastID int64, offset int) (*feedPage, error) {
	u := g.base + path + "?lastId=" + strconv.FormatInt(lastID, 10)
	if offset > 0 {
		u += "&offset=" + strconv.Itoa(offset)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("authorization", token)
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var p feedPage
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if !p.Success {
		return nil, fmt.Errorf("GET %s: %s", path, p.ErrorMsg)
	}
	if p.Data != nil && len(p.Data.List) == 0 && p.Data.MinTime == 0 {
		return nil, fmt.Errorf("GET %s: an empty page", path)
	}
	return &p, nil
}

// warm reads every viewer's first page once.
func (g *loadGen) warm(ctx context.Context, path string) error {
	now := time.Now().UnixMilli() + 1
	return parallel(ctx, g.concurrency, len(g.tokens), func(ctx context.Context, i int) error {
		p, err := g.get(ctx, path, g.tokens[i], now, 0)
		if err == nil && p.Data == nil {
			err = fmt.Errorf("viewer %d has an empty feed", i)
		}
		return err
	})
}

// run drives the path for d with g.concurrency workers.
func (g *loadGen) run(ctx context.Context, path string, d time.Duration, label string, progressW io.Writer) (ReadRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(d)
	lats := make([]Latencies, g.concurrency)
	var firstErr error
	var errOnce sync.Once
	var count atomic.Int64
	bar := newProgress(progressW, label, int(d/time.Second))
	var wg sync.WaitGroup
	start := time.Now()
	for j := range g.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make(Latencies, 0, 4096)
			for v := j; time.Now().Before(deadline); v += g.concurrency {
				tok := g.tokens[v%len(g.tokens)]
				lastID, offset := time.Now().UnixMilli()+1, 0
				for range maxPages {
					if !time.Now().Before(deadline) {
						break
					}
					t0 := time.Now()
					p, err := g.get(ctx, path, tok, lastID, offset)
					if err != nil {
						if ctx.Err() == nil {
							errOnce.Do(func() { firstErr = err; cancel() })
						}
						lats[j] = lat
						return
					}
					lat = append(lat, time.Since(t0))
					if n := count.Add(1); n%1000 == 0 {
						bar.set(int(time.Since(start) / time.Second))
					}
					if p.Data == nil {
						break
					}
					lastID, offset = p.Data.MinTime, p.Data.Offset
				}
			}
			lats[j] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.set(int(d / time.Second))
	bar.finish()
	if firstErr != nil {
		return ReadRun{}, firstErr
	}
	var all Latencies
	for _, l := range lats {
		all = append(all, l...)
	}
	return ReadRun{Requests: len(all), RPS: float64(len(all)) / elapsed.Seconds(), P50: all.Quantile(0.5), P99: all.Quantile(0.99)}, nil
}

// ProcessCPU is the CPU time this process has used (user and system): on
// a shared machine it measures a benchmark better than the time it took.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
