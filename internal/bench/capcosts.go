package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/capacity"
	"github.com/feedd/feedd/redis"
)

// The per-operation costs of `feedd bench capacity`, measured on the Redis
// and PostgreSQL of the run with feedd's real code: the inbox and outbox
// stores for the bytes and Redis CPU of a delivery, the wired service and
// its HTTP handler (called in this process, no network) for the CPU of a
// page, a post and a fan-out, and PostgreSQL's statistics views for the
// rows and statements they cost.

// CostsOptions size the measurements.
type CostsOptions struct {
	// Keys is how many inboxes (and outboxes) are filled for the memory
	// curves (0: 1000).
	Keys int
	// Pages is how many feed pages are timed with and without pulled
	// authors (0: 3000).
	Pages int
}

// costPulls is the number of pull-mode authors the pulled pages merge.
const costPulls = 10

// MeasureCosts measures capacity.Costs on env, which needs Redis inboxes
// and PostgreSQL (a PostgresStore).
func MeasureCosts(ctx context.Context, env *Env, opt CostsOptions) (*capacity.Costs, error) {
	pg, ok := env.Store.(*PostgresStore)
	if env.Redis == nil || !ok || env.Metric == nil {
		return nil, fmt.Errorf("bench: measuring capacity costs needs --redis-url and --database-url (or --costs FILE)")
	}
	opt.Keys, opt.Pages = cmp.Or(max(opt.Keys, 0), 1000), cmp.Or(max(opt.Pages, 0), 3000)
	k := &capacity.Costs{Source: "measured in this run"}
	if err := measureBytes(ctx, env, opt.Keys, k); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if err := measureService(ctx, env, pg, opt.Pages, k); err != nil {
		return nil, err
	}
	return k, nil
}

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
	cap := feed.InboxCapOr(env.InboxCap)
	prefix := env.Prefix + "capmem:"
	defer DeleteKeys(context.WithoutCancel(ctx), env.Redis, prefix)
	ib := redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: prefix, Cap: cap, Layout: env.Layout})
	ob := redis.NewOutbox(env.Redis, redis.InboxOptions{Prefix: prefix + "out:", Cap: cap}, nil)
	users := make([]int64, keys)
	for i := range users {
		users[i] = int64(1_000_001 + i)
	}
	base := time.Now().UnixMilli() - 3_600_000
	entry := func(p int) feed.Entry { return feed.Entry{PostID: int64(2_000_000 + p), Score: base + int64(p)*1000} }

	for _, kind := range []string{"inbox", "unbuilt inbox", "outbox"} {
		// Every connection the fills use is open before the baseline: a
		// client's buffers are in used_memory too (~20 KB each).
		if err := parallel(ctx, 16, 64, func(ctx context.Context, _ int) error { return env.Redis.Ping(ctx).Err() }); err != nil {
			return err
		}
		before, err := keysMemory(ctx, env.Redis)
		if err != nil {
			return err
		}
		if kind == "inbox" {
			for _, u := range users { // built empty, as a first read builds it
				if err := ib.Restore(ctx, u, nil); err != nil {
					return err
				}
			}
		}
		deliver := func(from, to int) error {
			if kind != "outbox" {
				return parallel(ctx, 4, to-from, func(ctx context.Context, i int) error {
					return ib.Deliver(ctx, entry(from+i), users)
				})
			}
			return parallel(ctx, 16, len(users), func(ctx context.Context, i int) error {
				for p := from; p < to; p++ {
					if err := ob.Add(ctx, users[i], entry(p)); err != nil {
						return err
					}
				}
				return nil
			})
		}
		var pts []capacity.Point
		done := 0
		bar := newProgress(env.Progress, kind+" bytes by size", cap+cap/4)
		for _, n := range sizes(cap) {
			to := n
			if n == cap {
				to = cap + cap/4
				if err := deliver(done, cap); err != nil {
					return err
				}
				done = cap
			}
			cpu0 := redisCPU(ctx, env.Redis)
			if err := deliver(done, to); err != nil {
				return err
			}
			if n == cap && kind == "inbox" {
				k.RedisUsPerDelivery = round(float64((redisCPU(ctx, env.Redis)-cpu0).Microseconds())/float64((to-done)*keys), 3)
			}
			done = to
			bar.set(done)
			after, err := keysMemory(ctx, env.Redis)
			if err != nil {
				return err
			}
			pts = append(pts, capacity.Point{Entries: n, Bytes: round(float64(after-before)/float64(keys), 1)})
		}
		bar.finish()
		switch kind {
		case "inbox":
			k.InboxBytes = pts
		case "unbuilt inbox":
			k.InboxUnbuiltBytes = pts
		default:
			k.OutboxBytes = pts
		}
		// The next kind starts from no key, on the same key names, freed
		// before it starts (DEL, not UNLINK).
		if kind != "outbox" {
			if err := deleteSync(ctx, env.Redis, users, ib.HeadKey); err != nil {
				return err
			}
			if err := deleteSync(ctx, env.Redis, users, func(u int64) string { return redis.BodyKey(prefix, u) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// pgStats reads the rows written and the transactions committed in the
// benchmark's database so far. PostgreSQL's backends report their counts
// when idle for up to 10 s (PGSTAT_IDLE_INTERVAL): settle waits that out.
func pgStats(ctx context.Context, pg *PostgresStore, settle bool) (rows, xacts float64, err error) {
	if settle {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(11 * time.Second):
		}
	}
	err = pg.Pool.QueryRow(ctx, `SELECT (tup_inserted + tup_updated + tup_deleted)::float8, xact_commit::float8
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&rows, &xacts)
	return rows, xacts, err
}

// handlerCall serves one request with h in this process and decodes the
// envelope's data into out (if not nil).
func handlerCall(h http.Handler, method, path, token string, body any, out any) error {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(b))
	req.RemoteAddr = "127.0.0.1:1"
	if token != "" {
		req.Header.Set("authorization", token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var env struct {
		Success  bool            `json:"success"`
		ErrorMsg string          `json:"errorMsg"`
		Data     json.RawMessage `json:"data"`
	}
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %.200s", method, path, rec.Code, rec.Body.Bytes())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if !env.Success {
		return fmt.Errorf("%s %s: %s", method, path, env.ErrorMsg)
	}
	if out != nil && len(env.Data) > 0 && string(env.Data) != "null" {
		return json.Unmarshal(env.Data, out)
	}
	return nil
}

// session creates a session for user u and returns its token.
func session(ctx context.Context, env *Env, u int64) (string, error) {
	tok, err := feed.NewSessionToken(u, rand.Reader)
	if err != nil {
		return "", err
	}
	now := env.now()
	return tok, env.Service.Auth.CreateSession(ctx, feed.HashSecret(tok), u, now, now.Add(feed.SessionTTL))
}

// waitJobs waits until no fan-out job is left.
func waitJobs(ctx context.Context, env *Env) error {
	if env.Jobs == nil {
		return fmt.Errorf("bench: the job count is unknown")
	}
	return poll(ctx, 50*time.Millisecond, 10*time.Minute, func() (bool, error) {
		n, err := env.Jobs(ctx)
		return n == 0, err
	})
}

// measureService measures the CPU and PostgreSQL costs of posts, fan-out,
// follows and pages on the wired service. The world: 20,000 users; user 0
// followed by all others (two split ranges at the default --fanout-split);
// readers 1-200 following 10 push authors, readers 1-100 also 10 pull-mode
// authors; 500 users with no follower who post.
func measureService(ctx context.Context, env *Env, pg *PostgresStore, pages int, k *capacity.Costs) error {
	const users, readers, posters = 20_000, 200, 500
	bar := newProgress(env.Progress, "load users", users)
	first, err := env.Store.CreateUsers(ctx, "cap-", users, bar.set)
	bar.finish()
	if err != nil {
		return err
	}
	id := func(i int) int64 { return first + int64(i) }
	pushAuthors, pullAuthors, poster0 := 201, 211, 300
	var pairs [][2]int64
	for i := 1; i < users; i++ {
		pairs = append(pairs, [2]int64{id(i), id(0)})
	}
	for r := 1; r <= readers; r++ {
		for a := range costPulls {
			pairs = append(pairs, [2]int64{id(r), id(pushAuthors + a)})
			if r <= readers/2 {
				pairs = append(pairs, [2]int64{id(r), id(pullAuthors + a)})
			}
		}
	}
	if err := env.Store.Follow(ctx, pairs); err != nil {
		return err
	}
	if err := env.Store.FixCounts(ctx, id(0), id(users-1)); err != nil {
		return err
	}
	for a := range costPulls {
		if err := env.Service.Social.SetMode(ctx, id(pullAuthors+a), feed.PullMode); err != nil {
			return err
		}
	}
	h := env.Handler(nil)
	tokens := map[int]string{}
	token := func(i int) (string, error) {
		if t, ok := tokens[i]; ok {
			return t, nil
		}
		t, err := session(ctx, env, id(i))
		tokens[i] = t
		return t, err
	}
	post := func(i, n int) error {
		tok, err := token(i)
		if err != nil {
			return err
		}
		return handlerCall(h, http.MethodPost, "/blog", tok, map[string]string{"title": "capacity " + strconv.Itoa(n), "content": "a post of feedd bench capacity"}, nil)
	}
	if err := env.Start(ctx); err != nil {
		return err
	}
	// Ten posts by each author, so that every page is full.
	for n := range 10 {
		for a := range 2 * costPulls {
			if err := post(pushAuthors+a, n); err != nil {
				return err
			}
		}
	}
	if err := waitJobs(ctx, env); err != nil {
		return err
	}

	// Posts with their jobs: the API's CPU with the workers stopped, then
	// the workers' as they drain the jobs, then the rows of both.
	if err := env.Stop(ctx); err != nil {
		return err
	}
	rows0, _, err := pgStats(ctx, pg, true)
	if err != nil {
		return err
	}
	bar = newProgress(env.Progress, "posts", posters)
	cpu := ProcessCPU()
	for i := range posters {
		if err := post(poster0+i, i); err != nil {
			return err
		}
		bar.set(i + 1)
	}
	k.APIUsPerWrite = round(float64((ProcessCPU()-cpu).Microseconds())/posters, 1)
	bar.finish()
	cpu, rcpu := ProcessCPU(), redisCPU(ctx, env.Redis)
	if err := env.Start(ctx); err != nil {
		return err
	}
	if err := waitJobs(ctx, env); err != nil {
		return err
	}
	k.WorkerUsPerJob = round(float64((ProcessCPU()-cpu).Microseconds())/posters, 1)
	k.RedisUsPerPost = round(float64((redisCPU(ctx, env.Redis)-rcpu).Microseconds())/posters, 2)
	rows1, _, err := pgStats(ctx, pg, true)
	if err != nil {
		return err
	}
	k.PGRowsPerPost = round((rows1-rows0)/posters, 2)

	// Fan-out to user 0's audience: the workers' CPU per delivery, and the
	// rows of the batch jobs beyond the post's.
	const big = 5
	d0, err := env.Metric("feedd_fanout_deliveries_total")
	if err != nil {
		return err
	}
	cpu = ProcessCPU()
	bar = newProgress(env.Progress, "fan-outs", big)
	for n := range big {
		if err := post(0, n); err != nil {
			return err
		}
		if err := waitJobs(ctx, env); err != nil {
			return err
		}
		bar.set(n + 1)
	}
	bar.finish()
	d1, err := env.Metric("feedd_fanout_deliveries_total")
	if err != nil {
		return err
	}
	if d1-d0 < big*(users-1) {
		return fmt.Errorf("bench: %v deliveries for %d posts to %d followers", d1-d0, big, users-1)
	}
	k.WorkerUsPerDelivery = round(float64((ProcessCPU()-cpu).Microseconds())/(d1-d0), 3)
	rows2, _, err := pgStats(ctx, pg, true)
	if err != nil {
		return err
	}
	split := 10_000 // --fanout-split's default; the jobs counted below say otherwise
	batches := float64((users-1+split-1)/split - 1)
	if batches > 0 {
		k.PGRowsPerBatchJob = round(((rows2-rows1)/big-k.PGRowsPerPost)/batches, 2)
	}

	// Follows of a push author with posts (each copies them: a backfill).
	const follows = 300
	for i := range follows {
		tok, err := token(1000 + i)
		if err != nil {
			return err
		}
		if err := handlerCall(h, http.MethodPut, fmt.Sprintf("/follow/%d/true", id(pushAuthors)), tok, nil, nil); err != nil {
			return err
		}
	}
	if err := waitJobs(ctx, env); err != nil {
		return err
	}
	rows3, _, err := pgStats(ctx, pg, true)
	if err != nil {
		return err
	}
	k.PGRowsPerFollow = round((rows3-rows2)/follows, 2)

	// Pages, the workers stopped: readers 101-200 read their inbox alone,
	// readers 1-100 merge 10 outboxes too.
	if err := env.Stop(ctx); err != nil {
		return err
	}
	measure := func(from, label string, lo, hi int) (api, rds, queries float64, err error) {
		var toks []string
		for r := lo; r <= hi; r++ {
			tok, err := token(r)
			if err != nil {
				return 0, 0, 0, err
			}
			toks = append(toks, tok)
			if err := handlerCall(h, http.MethodGet, from, tok, nil, nil); err != nil { // warm
				return 0, 0, 0, err
			}
		}
		_, x0, err := pgStats(ctx, pg, true)
		if err != nil {
			return 0, 0, 0, err
		}
		bar := newProgress(env.Progress, label, pages)
		var n atomic.Int64
		cpu, rcpu := ProcessCPU(), redisCPU(ctx, env.Redis)
		for i := range pages {
			if err := handlerCall(h, http.MethodGet, from, toks[i%len(toks)], nil, nil); err != nil {
				return 0, 0, 0, err
			}
			bar.set(int(n.Add(1)))
		}
		api = float64((ProcessCPU() - cpu).Microseconds()) / float64(pages)
		rds = float64((redisCPU(ctx, env.Redis) - rcpu).Microseconds()) / float64(pages)
		bar.finish()
		_, x1, err := pgStats(ctx, pg, true)
		return api, rds, (x1 - x0 - 1) / float64(pages), err
	}
	from := "/blog/of/follow?lastId=" + strconv.FormatInt(env.now().UnixMilli()+60_000, 10)
	api0, redis0, q0, err := measure(from, "pages, inbox alone", readers/2+1, readers)
	if err != nil {
		return err
	}
	api1, redis1, _, err := measure(from, fmt.Sprintf("pages, %d outboxes merged", costPulls), 1, readers/2)
	if err != nil {
		return err
	}
	k.APIUsPerPage, k.RedisUsPerPage, k.PGQueriesPerPage = round(api0, 1), round(redis0, 2), round(q0, 2)
	k.APIUsPerPull = round(max(api1-api0, 0)/costPulls, 2)
	k.RedisUsPerPull = round(max(redis1-redis0, 0)/costPulls, 2)
	return nil
}
