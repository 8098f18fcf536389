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
	w, err := buildCostWorld(ctx, env, pg)
	if err != nil {
		return err
	}
	if err := w.measurePosts(ctx, k); err != nil {
		return err
	}
	if err := w.measureFanout(ctx, k); err != nil {
		return err
	}
	if err := w.measureFollows(ctx, k); err != nil {
		return err
	}
	return w.measurePages(ctx, pages, k)
}

// The world of measureService, by user index.
const (
	costUsers, costReaders, costPosters           = 20_000, 200, 500
	costPushAuthors, costPullAuthors, costPoster0 = 201, 211, 300
)

// costWorld is the world measureService builds, which its steps share.
type costWorld struct {
	env    *Env
	pg     *PostgresStore
	h      http.Handler
	first  int64          // user 0's id
	tokens map[int]string // the sessions made, by user index
	rows   float64        // the rows written in the database, as of the last step
}

// buildCostWorld loads the users and follows of measureService's world and
// ten posts by each author, so that every page is full.
func buildCostWorld(ctx context.Context, env *Env, pg *PostgresStore) (*costWorld, error) {
	bar := newProgress(env.Progress, "load users", costUsers)
	first, err := env.Store.CreateUsers(ctx, "cap-", costUsers, bar.set)
	bar.finish()
	if err != nil {
		return nil, err
	}
	w := &costWorld{env: env, pg: pg, first: first, tokens: map[int]string{}}
	var pairs [][2]int64
	for i := 1; i < costUsers; i++ {
		pairs = append(pairs, [2]int64{w.id(i), w.id(0)})
	}
	for r := 1; r <= costReaders; r++ {
		for a := range costPulls {
			pairs = append(pairs, [2]int64{w.id(r), w.id(costPushAuthors + a)})
			if r <= costReaders/2 {
				pairs = append(pairs, [2]int64{w.id(r), w.id(costPullAuthors + a)})
			}
		}
	}
	if err := env.Store.Follow(ctx, pairs); err != nil {
		return nil, err
	}
	if err := env.Store.FixCounts(ctx, w.id(0), w.id(costUsers-1)); err != nil {
		return nil, err
	}
	for a := range costPulls {
		if err := env.Service.Social.SetMode(ctx, w.id(costPullAuthors+a), feed.PullMode); err != nil {
			return nil, err
		}
	}
	w.h = env.Handler(nil)
	if err := env.Start(ctx); err != nil {
		return nil, err
	}
	for n := range 10 {
		for a := range 2 * costPulls {
			if err := w.post(ctx, costPushAuthors+a, n); err != nil {
				return nil, err
			}
		}
	}
	return w, waitJobs(ctx, env)
}

// id is the id of user i.
func (w *costWorld) id(i int) int64 { return w.first + int64(i) }

// token is a session of user i, made at its first use.
func (w *costWorld) token(ctx context.Context, i int) (string, error) {
	if t, ok := w.tokens[i]; ok {
		return t, nil
	}
	t, err := session(ctx, w.env, w.id(i))
	w.tokens[i] = t
	return t, err
}

// post publishes user i's post n through the handler.
func (w *costWorld) post(ctx context.Context, i, n int) error {
	tok, err := w.token(ctx, i)
	if err != nil {
		return err
	}
	return handlerCall(w.h, http.MethodPost, "/blog", tok, map[string]string{"title": "capacity " + strconv.Itoa(n), "content": "a post of feedd bench capacity"}, nil)
}

// settle reads the rows written so far, once the backends have reported.
func (w *costWorld) settle(ctx context.Context) error {
	rows, _, err := pgStats(ctx, w.pg, true)
	w.rows = rows
	return err
}

// measurePosts measures posts with their jobs: the API's CPU with the
// workers stopped, then the workers' as they drain the jobs, then the rows
// of both.
func (w *costWorld) measurePosts(ctx context.Context, k *capacity.Costs) error {
	env := w.env
	if err := env.Stop(ctx); err != nil {
		return err
	}
	if err := w.settle(ctx); err != nil {
		return err
	}
	rows0 := w.rows
	bar := newProgress(env.Progress, "posts", costPosters)
	cpu := ProcessCPU()
	for i := range costPosters {
		if err := w.post(ctx, costPoster0+i, i); err != nil {
			return err
		}
		bar.set(i + 1)
	}
	k.APIUsPerWrite = round(float64((ProcessCPU()-cpu).Microseconds())/costPosters, 1)
	bar.finish()
	cpu, rcpu := ProcessCPU(), redisCPU(ctx, env.Redis)
	if err := env.Start(ctx); err != nil {
		return err
	}
	if err := waitJobs(ctx, env); err != nil {
		return err
	}
	k.WorkerUsPerJob = round(float64((ProcessCPU()-cpu).Microseconds())/costPosters, 1)
	k.RedisUsPerPost = round(float64((redisCPU(ctx, env.Redis)-rcpu).Microseconds())/costPosters, 2)
	if err := w.settle(ctx); err != nil {
		return err
	}
	k.PGRowsPerPost = round((w.rows-rows0)/costPosters, 2)
	return nil
}

// measureFanout measures fan-out to user 0's audience: the workers' CPU
// per delivery, and the rows of the batch jobs beyond the post's.
func (w *costWorld) measureFanout(ctx context.Context, k *capacity.Costs) error {
	const big = 5
	env, rows1 := w.env, w.rows
	d0, err := env.Metric("feedd_fanout_deliveries_total")
	if err != nil {
		return err
	}
	cpu := ProcessCPU()
	bar := newProgress(env.Progress, "fan-outs", big)
	for n := range big {
		if err := w.post(ctx, 0, n); err != nil {
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
	if d1-d0 < big*(costUsers-1) {
		return fmt.Errorf("bench: %v deliveries for %d posts to %d followers", d1-d0, big, costUsers-1)
	}
	k.WorkerUsPerDelivery = round(float64((ProcessCPU()-cpu).Microseconds())/(d1-d0), 3)
	if err := w.settle(ctx); err != nil {
		return err
	}
	split := 10_000 // --fanout-split's default; the jobs counted below say otherwise
	batches := float64((costUsers-1+split-1)/split - 1)
	if batches > 0 {
		k.PGRowsPerBatchJob = round(((w.rows-rows1)/big-k.PGRowsPerPost)/batches, 2)
	}
	return nil
}

// measureFollows measures follows of a push author with posts (each
// copies them: a backfill).
func (w *costWorld) measureFollows(ctx context.Context, k *capacity.Costs) error {
	const follows = 300
	rows2 := w.rows
	for i := range follows {
		tok, err := w.token(ctx, 1000+i)
		if err != nil {
			return err
		}
		if err := handlerCall(w.h, http.MethodPut, fmt.Sprintf("/follow/%d/true", w.id(costPushAuthors)), tok, nil, nil); err != nil {
			return err
		}
	}
	if err := waitJobs(ctx, w.env); err != nil {
		return err
	}
	if err := w.settle(ctx); err != nil {
		return err
	}
	k.PGRowsPerFollow = round((w.rows-rows2)/follows, 2)
	return nil
}

// measurePages measures pages, the workers stopped: readers 101-200 read
// their inbox alone, readers 1-100 merge 10 outboxes too.
func (w *costWorld) measurePages(ctx context.Context, pages int, k *capacity.Costs) error {
	if err := w.env.Stop(ctx); err != nil {
		return err
	}
	from := "/blog/of/follow?lastId=" + strconv.FormatInt(w.env.now().UnixMilli()+60_000, 10)
	api0, redis0, q0, err := w.pageCosts(ctx, from, "pages, inbox alone", costReaders/2+1, costReaders, pages)
	if err != nil {
		return err
	}
	api1, redis1, _, err := w.pageCosts(ctx, from, fmt.Sprintf("pages, %d outboxes merged", costPulls), 1, costReaders/2, pages)
	if err != nil {
		return err
	}
	k.APIUsPerPage, k.RedisUsPerPage, k.PGQueriesPerPage = round(api0, 1), round(redis0, 2), round(q0, 2)
	k.APIUsPerPull = round(max(api1-api0, 0)/costPulls, 2)
	k.RedisUsPerPull = round(max(redis1-redis0, 0)/costPulls, 2)
	return nil
}

// pageCosts reads pages pages of from, round robin as readers lo to hi
// (each warmed by a read first), and returns the API's and Redis's CPU
// microseconds and the PostgreSQL transactions of a page.
func (w *costWorld) pageCosts(ctx context.Context, from, label string, lo, hi, pages int) (api, rds, queries float64, err error) {
	env := w.env
	var toks []string
	for r := lo; r <= hi; r++ {
		tok, err := w.token(ctx, r)
		if err != nil {
			return 0, 0, 0, err
		}
		toks = append(toks, tok)
		if err := handlerCall(w.h, http.MethodGet, from, tok, nil, nil); err != nil { // warm
			return 0, 0, 0, err
		}
	}
	_, x0, err := pgStats(ctx, w.pg, true)
	if err != nil {
		return 0, 0, 0, err
	}
	bar := newProgress(env.Progress, label, pages)
	var n atomic.Int64
	cpu, rcpu := ProcessCPU(), redisCPU(ctx, env.Redis)
	for i := range pages {
		if err := handlerCall(w.h, http.MethodGet, from, toks[i%len(toks)], nil, nil); err != nil {
			return 0, 0, 0, err
		}
		bar.set(int(n.Add(1)))
	}
	api = float64((ProcessCPU() - cpu).Microseconds()) / float64(pages)
	rds = float64((redisCPU(ctx, env.Redis) - rcpu).Microseconds()) / float64(pages)
	bar.finish()
	_, x1, err := pgStats(ctx, w.pg, true)
	return api, rds, (x1 - x0 - 1) / float64(pages), err
}
