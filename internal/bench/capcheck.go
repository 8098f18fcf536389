package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/capacity"
	"github.com/feedd/feedd/redis"
)

// CheckResult sets the simulation's counts beside the real server's for
// the same graph, starting state and visits.
type CheckResult struct {
	Users     int            `json:"users"`
	Edges     int            `json:"edges"`
	Visits    int            `json:"visits"`
	Requests  int            `json:"requests"`
	Seconds   float64        `json:"seconds"` // of the replay, until every job was done
	Load      string         `json:"load"`
	Simulated CheckFigures   `json:"simulated"`
	Real      CheckFigures   `json:"real"`
	Diff      map[string]any `json:"diff_percent"` // (real - simulated) / simulated
}

// CheckFigures are the compared figures.
type CheckFigures struct {
	Deliveries       float64 `json:"deliveries"`
	Pages            float64 `json:"pages"`
	PullReadsPerPage float64 `json:"pull_reads_per_page"`
	// RedisBytes is the bytes of the inbox and outbox keys (MEMORY USAGE
	// of each, summed).
	RedisBytes float64 `json:"redis_bytes"`
	Rebuilds   float64 `json:"rebuilds"`
	// Not compared. RedisBytesCurve, simulated: its inboxes and outboxes
	// priced by the costs' curves of bytes by entries, as a plan prices
	// them (the curves are of inboxes filled from empty by deliveries
	// alone, rebuilds not written at once). UsedMemoryGrowth, real: INFO
	// used_memory's growth over the replay, less the clients' buffers;
	// beside the keys it holds the key space's tables and allocations
	// that vary from run to run by a tenth at this size.
	RedisBytesCurve  float64 `json:"redis_bytes_curve,omitempty"`
	UsedMemoryGrowth float64 `json:"used_memory_growth,omitempty"`
}

// CheckCapacity replays the counted visits of a simulation over g through
// the real server of env (PostgreSQL and Redis) and compares the counts.
// The graph is loaded in bulk with each user's activity time and mode as
// the simulation starts them (no warm-up: both start with empty inboxes),
// then every visit is sent in order over loopback HTTP: its pages
// (scrolling on), its posts, its follows. Simulated time maps to the
// clock: each user's activity before the start is set that long before
// the replay starts, and the replay runs the visits as fast as they go.
// Deliveries and pull reads are the server's own counts
// (feedd_fanout_deliveries_total, feedd_feed_page_pull_authors). Redis
// bytes are those of the server's inbox and outbox keys after the replay,
// against those of the simulation's inboxes and outboxes at its end, built
// in the same Redis at the sizes it ends with (measureEnd).
func CheckCapacity(ctx context.Context, env *Env, g *capacity.Graph, o capacity.Options, costs *capacity.Costs) (*CheckResult, error) {
	pg, ok := env.Store.(*PostgresStore)
	if env.Redis == nil || !ok || env.Metric == nil {
		return nil, fmt.Errorf("bench: the capacity check needs --redis-url and --database-url")
	}
	o.WarmupDays = 0
	var lastActive []int32
	var modes []feed.Mode
	var visits []capacity.Visit
	o.OnStart = func(la []int32, m []feed.Mode) {
		lastActive, modes = append([]int32(nil), la...), append([]feed.Mode(nil), m...)
	}
	o.OnVisit = func(v capacity.Visit) {
		v.Follows = append([]uint32(nil), v.Follows...)
		visits = append(visits, v)
	}
	var end capacity.End
	o.OnEnd = func(e capacity.End) { end = e }
	res, err := capacity.Run(g, o)
	if err != nil {
		return nil, err
	}
	sum := costs.Summarize(res, g.Users, o.Settings.PullThreshold)
	r := &CheckResult{Users: g.Users, Edges: g.Edges(), Visits: len(visits)}
	r.Simulated = CheckFigures{
		Deliveries: float64(sum.Totals.Deliveries), Pages: float64(sum.Totals.Pages),
		PullReadsPerPage: sum.Day.PullReadsPerPage, RedisBytesCurve: sum.RedisBytes, Rebuilds: float64(sum.Totals.Rebuilds),
	}

	// The graph, the activity times and the modes.
	bar := newProgress(env.Progress, "load users", g.Users)
	first, err := env.Store.CreateUsers(ctx, "capcheck-", g.Users, bar.set)
	bar.finish()
	if err != nil {
		return nil, err
	}
	id := func(u uint32) int64 { return first + int64(u) }
	bar = newProgress(env.Progress, "load follows", g.Edges())
	var pairs [][2]int64
	done := 0
	for u := range uint32(g.Users) {
		for _, v := range g.Followees(u) {
			pairs = append(pairs, [2]int64{id(u), id(v)})
		}
		if len(pairs) >= 100_000 || int(u) == g.Users-1 {
			if err := env.Store.Follow(ctx, pairs); err != nil {
				return nil, err
			}
			done += len(pairs)
			bar.set(done)
			pairs = pairs[:0]
		}
	}
	bar.finish()
	if err := env.Store.FixCounts(ctx, first, id(uint32(g.Users-1))); err != nil {
		return nil, err
	}
	start := time.Now()
	ids, at := make([]int64, g.Users), make([]int64, g.Users)
	for u := range g.Users {
		ids[u], at[u] = id(uint32(u)), start.UnixMilli()+int64(lastActive[u])*1000
	}
	if err := pg.SetActive(ctx, ids, at); err != nil {
		return nil, err
	}
	for u, m := range modes {
		if m != feed.PushMode {
			if err := env.Service.Social.SetMode(ctx, id(uint32(u)), m); err != nil {
				return nil, err
			}
		}
	}
	tokens := map[uint32]string{}
	for _, v := range visits {
		if _, ok := tokens[v.User]; !ok {
			if tokens[v.User], err = session(ctx, env, id(v.User)); err != nil {
				return nil, err
			}
		}
	}

	// The replay, over loopback HTTP.
	srv := httptest.NewServer(env.Handler(nil))
	defer srv.Close()
	c := &apiClient{base: srv.URL, http: srv.Client()}
	metric := func(name string) float64 {
		v, merr := env.Metric(name)
		err = cmpErr(err, merr)
		return v
	}
	mem0, err := keysMemory(ctx, env.Redis)
	if err != nil {
		return nil, err
	}
	d0, p0, n0, b0 := metric("feedd_fanout_deliveries_total"), metric("feedd_feed_page_pull_authors"), metric("feedd_feed_page_pull_authors_count"), metric("feedd_inbox_rebuilds_total")
	if err != nil {
		return nil, err
	}
	if err := env.Start(ctx); err != nil {
		return nil, err
	}
	bar = newProgress(env.Progress, "replay visits", len(visits))
	replay := time.Now()
	for i, v := range visits {
		if err := replayVisit(ctx, c, tokens[v.User], v, id); err != nil {
			return nil, fmt.Errorf("visit %d of user %d: %w", i, id(v.User), err)
		}
		r.Requests += v.Pages + v.Posts + len(v.Follows)
		bar.set(i + 1)
	}
	bar.finish()
	if err := waitJobs(ctx, env); err != nil {
		return nil, err
	}
	r.Seconds = round(time.Since(replay).Seconds(), 1)
	r.Load = loadavg()
	mem1, err := keysMemory(ctx, env.Redis)
	if err != nil {
		return nil, err
	}
	d1, p1, n1, b1 := metric("feedd_fanout_deliveries_total"), metric("feedd_feed_page_pull_authors"), metric("feedd_feed_page_pull_authors_count"), metric("feedd_inbox_rebuilds_total")
	if err != nil {
		return nil, err
	}
	r.Real = CheckFigures{Deliveries: d1 - d0, Pages: n1 - n0, Rebuilds: b1 - b0, UsedMemoryGrowth: float64(mem1 - mem0)}
	if r.Real.RedisBytes, err = inboxBytes(ctx, env.Redis, env.Prefix, env.Prefix); err != nil {
		return nil, fmt.Errorf("the server's keys: %w", err)
	}
	if r.Simulated.RedisBytes, err = measureEnd(ctx, env, end); err != nil {
		return nil, fmt.Errorf("the simulation's keys: %w", err)
	}
	if n1 > n0 {
		r.Real.PullReadsPerPage = round((p1-p0)/(n1-n0), 3)
	}
	r.Simulated.PullReadsPerPage = round(r.Simulated.PullReadsPerPage, 3)
	pct := func(real, sim float64) float64 {
		if sim == 0 {
			return math.NaN()
		}
		return round(100*(real-sim)/sim, 2)
	}
	r.Diff = map[string]any{
		"deliveries":          pct(r.Real.Deliveries, r.Simulated.Deliveries),
		"pages":               pct(r.Real.Pages, r.Simulated.Pages),
		"pull_reads_per_page": pct(r.Real.PullReadsPerPage, r.Simulated.PullReadsPerPage),
		"redis_bytes":         pct(r.Real.RedisBytes, r.Simulated.RedisBytes),
		"rebuilds":            pct(r.Real.Rebuilds, r.Simulated.Rebuilds),
	}
	for k, v := range r.Diff {
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			r.Diff[k] = nil
		}
	}
	return r, nil
}

// measureEnd builds in Redis, under a prefix of its own, the inboxes and
// outboxes that a simulation ends with, as the server builds them: each
// built inbox restored with the entries of its last rebuild, then
// delivered the rest one entry at a time to every inbox that gets it; the
// inboxes never built delivered to only; the outboxes added to a post at a
// time. It returns their bytes (inboxBytes) and deletes them.
func measureEnd(ctx context.Context, env *Env, end capacity.End) (float64, error) {
	cap := feed.InboxCapOr(env.InboxCap)
	prefix := env.Prefix + "capend:"
	defer DeleteKeys(context.WithoutCancel(ctx), env.Redis, prefix)
	ib := redis.NewInbox(env.Redis, redis.InboxOptions{Prefix: prefix, Cap: cap, Layout: env.Layout})
	ob := redis.NewOutbox(env.Redis, redis.InboxOptions{Prefix: prefix + "out:", Cap: cap}, nil)
	base := time.Now().UnixMilli() - 3_600_000
	entry := func(p int) feed.Entry { return feed.Entry{PostID: int64(2_000_000 + p), Score: base + int64(p)*1000} }
	id := func(u int) int64 { return int64(1_000_001 + u) }
	delivered := make([]int, len(end.Inbox))
	most := 0
	for u, n := range end.Inbox {
		if n > 0 {
			delivered[u] = int(n)
			if end.Built[u] {
				delivered[u] -= int(end.Restored[u])
			}
			most = max(most, delivered[u])
		}
	}
	bar := newProgress(env.Progress, "the simulation's keys", len(end.Inbox)+most)
	err := parallel(ctx, 16, len(end.Inbox), func(ctx context.Context, u int) error {
		if end.Inbox[u] < 0 || !end.Built[u] {
			return nil
		}
		entries := make([]feed.Entry, end.Restored[u])
		for i := range entries {
			entries[i] = entry(len(entries) - 1 - i) // newest first, as a rebuild reads them
		}
		return ib.Restore(ctx, id(u), entries)
	})
	if err != nil {
		return 0, err
	}
	bar.set(len(end.Inbox))
	// The delivered entries are newer than every restored one.
	err = parallel(ctx, 4, most, func(ctx context.Context, p int) error {
		var to []int64
		for u, d := range delivered {
			if d > p {
				to = append(to, id(u))
			}
		}
		return ib.Deliver(ctx, entry(cap+p), to)
	})
	if err != nil {
		return 0, err
	}
	err = parallel(ctx, 16, len(end.Outbox), func(ctx context.Context, u int) error {
		for p := range int(end.Outbox[u]) {
			if err := ob.Add(ctx, id(u), entry(p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	bar.finish()
	return inboxBytes(ctx, env.Redis, prefix, prefix+"out:")
}

// inboxBytes sums MEMORY USAGE over the inbox keys under prefix and the
// outbox keys under outPrefix: what the keys take, their names and the
// key space's entries for them included, whatever else the server holds.
func inboxBytes(ctx context.Context, rdb *goredis.Client, prefix, outPrefix string) (float64, error) {
	var total int64
	for _, match := range []string{redis.InboxKey(prefix, 0), redis.OutboxKey(outPrefix, 0)} {
		match = strings.TrimSuffix(match, "0}") + "*"
		iter := rdb.Scan(ctx, 0, match, 1000).Iterator()
		var keys []string
		flush := func() error {
			cmds, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, k := range keys {
					p.MemoryUsage(ctx, k, 0)
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, c := range cmds {
				total += c.(*goredis.IntCmd).Val()
			}
			keys = keys[:0]
			return nil
		}
		for iter.Next(ctx) {
			if keys = append(keys, iter.Val()); len(keys) == 1000 {
				if err := flush(); err != nil {
					return 0, err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return 0, err
		}
		if err := flush(); err != nil {
			return 0, err
		}
	}
	return float64(total), nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// replayVisit sends one visit: its pages, scrolling on from the newest
// (from the top again when the feed ends), then its posts and follows.
func replayVisit(ctx context.Context, c *apiClient, token string, v capacity.Visit, id func(uint32) int64) error {
	var minTime int64
	offset := 0
	for range v.Pages {
		if minTime == 0 {
			minTime, offset = time.Now().UnixMilli()+1, 0
		}
		var page struct {
			MinTime int64 `json:"minTime"`
			Offset  int   `json:"offset"`
		}
		path := "/blog/of/follow?lastId=" + strconv.FormatInt(minTime, 10)
		if offset > 0 {
			path += "&offset=" + strconv.Itoa(offset)
		}
		if err := c.call(ctx, http.MethodGet, path, token, nil, &page); err != nil {
			return err
		}
		minTime, offset = page.MinTime, page.Offset
	}
	for i := range v.Posts {
		b := fmt.Appendf(nil, `{"title":"capacity check %d","content":"a post of the capacity check"}`, i)
		if err := c.call(ctx, http.MethodPost, "/blog", token, b, nil); err != nil {
			return err
		}
	}
	for _, f := range v.Follows {
		if id(f) == id(v.User) {
			continue
		}
		if err := c.call(ctx, http.MethodPut, fmt.Sprintf("/follow/%d/true", id(f)), token, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// Text is the check as a table.
func (r *CheckResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "check: %d users, %d follows, %d visits (%d requests) through the real server in %.0f s (load %s)\n", r.Users, r.Edges, r.Visits, r.Requests, r.Seconds, r.Load)
	fmt.Fprintf(&b, "%-22s %14s %14s %9s\n", "", "simulated", "real", "diff %")
	line := func(name, key string, sim, real float64) {
		d := "-"
		if v, ok := r.Diff[key].(float64); ok {
			d = fmt.Sprintf("%+.2f", v)
		}
		fmt.Fprintf(&b, "%-22s %14.4g %14.4g %9s\n", name, sim, real, d)
	}
	line("deliveries", "deliveries", r.Simulated.Deliveries, r.Real.Deliveries)
	line("pages", "pages", r.Simulated.Pages, r.Real.Pages)
	line("pull reads per page", "pull_reads_per_page", r.Simulated.PullReadsPerPage, r.Real.PullReadsPerPage)
	line("Redis bytes", "redis_bytes", r.Simulated.RedisBytes, r.Real.RedisBytes)
	fmt.Fprintf(&b, "%-22s %14.4g %14.4g %9s\n", "  (curves; used_memory)", r.Simulated.RedisBytesCurve, r.Real.UsedMemoryGrowth, "")
	line("inbox rebuilds", "rebuilds", r.Simulated.Rebuilds, r.Real.Rebuilds)
	return b.String()
}

// loadavg is the first field of /proc/loadavg ("?" elsewhere).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
