package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/testenv"
)

// runBenchJSON runs `feedd bench args... --json` and returns its object.
// The sizes are tiny: these tests check that every benchmark runs end to
// end and reports what it must, not the figures (BENCHMARKS.md has those).
func runBenchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	var stderr lockedBuffer // the progress lines and the log write to it at once
	args = append(append([]string{"bench"}, args...), "--json", "--data", t.TempDir())
	if err := run(ctx, args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("feedd %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	return out
}

// lockedBuffer is a bytes.Buffer that several goroutines may write, as
// they may write a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func wantFields(t *testing.T, out map[string]any, fields ...string) {
	t.Helper()
	var got []string
	for k := range out {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Fatalf("fields %v, want %v", got, fields)
	}
	for _, f := range fields {
		if x, ok := out[f].(float64); !ok || x <= 0 {
			t.Errorf("%s = %v, want a positive number", f, out[f])
		}
	}
}

var (
	fanoutFields = []string{"followers", "seed_per_s", "feedd_per_s", "limit_per_s", "feedd_seconds", "feedd_repost_per_s", "feedd_repost_seconds", "repost_over_post"}
	readFields   = []string{"feedd_rps", "seed_rps", "feedd_p99_ms", "seed_p99_ms", "feedd_cpu_us_per_page", "seed_cpu_us_per_page"}
	// readRedisFields are readFields with the Redis server's CPU per page.
	readRedisFields = append(slices.Clone(readFields), "feedd_redis_cpu_us_per_page", "seed_redis_cpu_us_per_page")
)

// noKeysLeft checks that a benchmark deleted every key it wrote.
func noKeysLeft(t *testing.T, url, prefix string) {
	t.Helper()
	opt, _ := goredis.ParseURL(url)
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	keys, _, err := rdb.Scan(context.Background(), 0, prefix+"*", 100_000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("%d keys left under %s, e.g. %s", len(keys), prefix, keys[0])
	}
}

func TestBenchFanoutEmbedded(t *testing.T) {
	out := runBenchJSON(t, "fanout", "--followers", "1000", "--runs", "2")
	wantFields(t, out, fanoutFields...)
	if out["followers"] != 1000.0 {
		t.Errorf("followers = %v", out["followers"])
	}
}

func TestBenchFanoutRedis(t *testing.T) {
	url, prefix := testenv.RedisURL(t)
	out := runBenchJSON(t, "fanout", "--followers", "1000", "--redis-url", url, "--redis-prefix", prefix)
	wantFields(t, out, fanoutFields...)
	noKeysLeft(t, url, prefix)
}

func TestBenchFanoutPostgres(t *testing.T) {
	t.Parallel()
	out := runBenchJSON(t, "fanout", "--followers", "1000", "--database-url", testenv.PostgresURL(t))
	wantFields(t, out, fanoutFields...)
}

func TestBenchReadEmbedded(t *testing.T) {
	out := runBenchJSON(t, "read", "--users", "60", "--follows", "5", "--posts", "2", "--concurrency", "4", "--duration", "300ms")
	wantFields(t, out, readFields...)
}

// TestBenchReadReposts: with --repost-share, a second graph whose entries
// are that share reposts is read in the same runs, and its CPU a page is
// set against the plain graph's.
func TestBenchReadReposts(t *testing.T) {
	out := runBenchJSON(t, "read", "--users", "40", "--follows", "5", "--posts", "6", "--repost-share", "0.3", "--concurrency", "4", "--duration", "300ms")
	wantFields(t, out, append(slices.Clone(readFields), "feedd_reposts_rps", "feedd_reposts_p99_ms", "feedd_reposts_cpu_us_per_page", "reposts_over_none_cpu")...)
}

// TestBenchReadNoShedding: the read benchmark's default concurrency (64)
// is twice the serve default --max-reads (32), and a GET that finds no
// slot is shed at once here (--shed-wait 1ns): the benchmark's server must
// not shed its load, or the warm-up fails with 503.
func TestBenchReadNoShedding(t *testing.T) {
	out := runBenchJSON(t, "read", "--users", "60", "--follows", "5", "--posts", "2", "--duration", "300ms", "--shed-wait", "1ns")
	wantFields(t, out, readFields...)
}

// TestBenchReadRedis fills inboxes of 48 entries, past a packed head
// (the default layout), so the seed path reads what Read copied for it.
func TestBenchReadRedis(t *testing.T) {
	url, prefix := testenv.RedisURL(t)
	out := runBenchJSON(t, "read", "--users", "60", "--follows", "5", "--posts", "8", "--concurrency", "4", "--duration", "300ms",
		"--redis-url", url, "--redis-prefix", prefix)
	wantFields(t, out, readRedisFields...)
	noKeysLeft(t, url, prefix)
}

func TestBenchPublish(t *testing.T) {
	t.Parallel()
	out := runBenchJSON(t, "publish", "--followers", "500", "--publishes", "5", "--interval", "1ms")
	wantFields(t, out, "followers", "publishes", "idle_p50_ms", "idle_p99_ms", "small_p50_ms", "small_p99_ms",
		"large_p50_ms", "large_p99_ms", "p99_ratio")
}

// TestBenchMemory runs on a redis-server of its own: it changes the
// server's encoding settings (and restores them).
func TestBenchMemory(t *testing.T) {
	r := startOwnRedis(t)
	out := runBenchJSON(t, "memory", "--redis-url", r.url(), "--inboxes", "200", "--inbox-cap", "200")
	def, _ := out["default"].(map[string]any)
	rec, _ := out["listpack"].(map[string]any)
	fd, _ := out["feedd"].(map[string]any)
	if def["encoding"] != "skiplist" || rec["encoding"] != "listpack" || fd["encoding"] != "packed+listpack" {
		t.Errorf("encodings %v, %v and %v, want skiplist, listpack and packed+listpack", def["encoding"], rec["encoding"], fd["encoding"])
	}
	if d, r := def["bytes_per_entry"].(float64), rec["bytes_per_entry"].(float64); !(r > 0 && r < d) {
		t.Errorf("bytes per entry: default %v, listpack %v", d, r)
	}
	if d, f := def["bytes_per_entry"].(float64), fd["bytes_per_entry"].(float64); !(f > 0 && f < d) {
		t.Errorf("bytes per entry: default %v, feedd %v", d, f)
	}
	for _, s := range []map[string]any{def, rec, fd} {
		if v, _ := s["deliveries_per_s_at_cap"].(float64); v <= 0 {
			t.Errorf("deliveries_per_s_at_cap %v", s["deliveries_per_s_at_cap"])
		}
		if v, _ := s["redis_cpu_us_per_delivery_at_cap"].(float64); v <= 0 {
			t.Errorf("redis_cpu_us_per_delivery_at_cap %v", s["redis_cpu_us_per_delivery_at_cap"])
		}
	}
	c := goredis.NewClient(&goredis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(r.url(), "redis://"), "/0")})
	defer c.Close()
	if v := c.ConfigGet(context.Background(), "zset-max-listpack-entries").Val()["zset-max-listpack-entries"]; v != "128" {
		t.Errorf("zset-max-listpack-entries left at %s", v)
	}
}

func TestBenchBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "nosuch"},
		{"bench", "memory"}, // needs --redis-url
		{"bench", "fanout", "--redis-cluster", "127.0.0.1:1"},
		{"bench", "fanout", "--followers", "0"},
		{"bench", "writes", "--sqlite-synchronous", "off"},
		{"bench", "writes", "--users", "3", "--concurrency", "4"},
		{"bench", "capacity", "--users", "100"},                                                       // costs: neither measured nor given
		{"bench", "capacity", "--users", "100", "--costs", "testdata/capacity-costs.json", "--check"}, // the check needs the servers
		{"bench", "capacity", "--users", "100", "--costs", "testdata/capacity-costs.json", "--days", "0"},
		{"bench", "capacity", "--users", "100", "--costs", "testdata/capacity-costs.json", "--graph", "ring"},
		{"bench", "capacity", "--users", "100", "--costs", "testdata/capacity-costs.json", "--sweep", "x"},
		{"bench", "capacity", "--users", "100", "--costs", "testdata/nosuch.json"},
	} {
		var out bytes.Buffer
		if err := run(t.Context(), args, func(string) string { return "" }, &out, &out); err == nil {
			t.Errorf("feedd %s: no error", strings.Join(args, " "))
		}
	}
}

// checkMixed checks a feedd bench mixed run of a light load: every probe
// reached its followers, nothing failed, every operation of the mix ran.
func checkMixed(t *testing.T, out map[string]any) {
	t.Helper()
	for _, f := range []string{"rps", "accepted", "accepted_p99_ms", "probes", "fresh_p50_ms", "fresh_p99_ms", "fresh_max_ms", "backlog_max"} {
		if x, ok := out[f].(float64); !ok || x <= 0 {
			t.Errorf("%s = %v, want a positive number", f, out[f])
		}
	}
	for _, f := range []string{"errors", "probes_lost", "unsent"} {
		if out[f] != 0.0 {
			t.Errorf("%s = %v, want 0 (first error: %v)", f, out[f], out["first_error"])
		}
	}
	ops, _ := out["ops"].(map[string]any)
	for _, op := range []string{"feed", "like", "publish", "follow", "post"} {
		o, _ := ops[op].(map[string]any)
		if n, _ := o["n"].(float64); n <= 0 {
			t.Errorf("ops[%s] = %v, want accepted requests", op, ops[op])
		}
	}
}

// The smoke runs do not shed (--max-reads 0 --max-writes 0): on a busy
// machine under -race even a light load may shed every probe publish, and
// these check the benchmark, not feedd's limits (http/shed_test.go does).
func TestBenchMixedEmbedded(t *testing.T) {
	checkMixed(t, runBenchJSON(t, "mixed", "--users", "30", "--follows", "5", "--rate", "100", "--duration", "2s", "--publish-share", "0.1",
		"--max-reads", "0", "--max-writes", "0"))
}

// TestBenchMixedPostgresApart is also a short soak: its samples carry the
// gauges that BENCHMARKS.md's soak table is made of.
func TestBenchMixedPostgresApart(t *testing.T) {
	url, prefix := testenv.RedisURL(t)
	out := runBenchJSON(t, "mixed", "--users", "30", "--follows", "5", "--rate", "100", "--duration", "2s", "--publish-share", "0.1",
		"--max-reads", "0", "--max-writes", "0", "--database-url", testenv.PostgresURL(t), "--redis-url", url, "--redis-prefix", prefix, "--apart",
		"--sample-every", "1s")
	checkMixed(t, out)
	noKeysLeft(t, url, prefix)
	samples, _ := out["samples"].([]any)
	if len(samples) < 2 {
		t.Fatalf("%d samples, want at least 2 (at the start and every second)", len(samples))
	}
	sample, _ := samples[len(samples)-1].(map[string]any)
	last, _ := sample["gauges"].(map[string]any)
	for _, g := range []string{"process_rss_mb", "process_heap_live_mb", "process_goroutines", "process_open_fds", "pgx_pool_api_total", "pgx_pool_worker_total",
		"redis_pool_worker_total", "river_job_rows", "table_mb_river_job", "table_mb_posts", "rows_sessions", "bench_latencies_mb"} {
		if _, ok := last[g].(float64); !ok {
			t.Errorf("gauges[%s] = %v, want a number", g, last[g])
		}
	}
	if x, _ := last["bench_latencies_mb"].(float64); x <= 0 {
		t.Errorf("bench_latencies_mb = %v after 200 requests, want > 0", last["bench_latencies_mb"])
	}
}

// TestBenchWrites runs the small-writes benchmark end to end: every call
// of it must succeed (the benchmark fails on any other answer, such as
// the per-user write limits' refusal of a client's 61st follow in a
// minute), with the lowered synchronous level named in the report.
func TestBenchWrites(t *testing.T) {
	t.Parallel()
	out := runBenchJSON(t, "writes", "--users", "40", "--concurrency", "4", "--duration", "1s", "--runs", "2", "--sqlite-synchronous", "normal")
	for _, f := range []string{"setup_s", "likes_per_s", "likes_p50_ms", "likes_p99_ms", "follows_per_s", "follows_p50_ms", "follows_p99_ms"} {
		if x, ok := out[f].(float64); !ok || x <= 0 {
			t.Errorf("%s = %v, want a positive number", f, out[f])
		}
	}
	if out["users"] != 40.0 || out["clients"] != 4.0 || out["synchronous"] != "NORMAL" {
		t.Errorf("users %v, clients %v, synchronous %v; want 40, 4, NORMAL", out["users"], out["clients"], out["synchronous"])
	}
	if runs, _ := out["runs"].([]any); len(runs) != 2 {
		t.Errorf("runs %v, want 2", out["runs"])
	}
	if perClient, _ := out["follows_per_s"].(float64); perClient/4 <= 60 {
		t.Logf("%.0f follows a second: under the default per-user follow limit, which this run did not reach", perClient)
	}
}

func TestBenchTimeoutDefault(t *testing.T) {
	for _, c := range []struct {
		sub      string
		duration time.Duration
		runs     int
		want     time.Duration
	}{
		{"mixed", 30 * time.Minute, 1, 40 * time.Minute}, // the soak
		{"mixed", time.Minute, 1, 20 * time.Minute},
		{"read", 10 * time.Minute, 3, 70 * time.Minute},
		{"writes", 10 * time.Second, 3, 20 * time.Minute},
		{"fanout", time.Hour, 1, 70 * time.Minute},
	} {
		if got := defaultBenchTimeout(c.sub, 20*time.Minute, c.duration, c.runs); got != c.want {
			t.Errorf("%s --duration %v --runs %d: timeout %v, want %v", c.sub, c.duration, c.runs, got, c.want)
		}
	}
}

// TestBenchImport: feedd bench import makes a synthetic tutorial database
// on the MySQL server, imports it, reports each phase's rate, and removes
// the database and the likes' keys.
func TestBenchImport(t *testing.T) {
	t.Parallel()
	dsn := testenv.MySQLDSN(t) // the server's; the benchmark makes a database of its own
	redisURL, _ := testenv.RedisURL(t)
	out := runBenchJSON(t, "import", "--users", "300", "--mysql", dsn, "--hmdp-redis", redisURL)
	data, _ := out["data"].(map[string]any)
	if data["users"] != 300.0 || data["follows"].(float64) < 3000 || data["likes"].(float64) < 1000 || data["comments"].(float64) < 1000 {
		t.Errorf("data: %v", data)
	}
	phases := map[string]float64{}
	for _, p := range out["phases"].([]any) {
		p := p.(map[string]any)
		phases[p["name"].(string)] = p["rows_per_s"].(float64)
	}
	for _, name := range []string{"tb_user", "tb_blog", "tb_follow", "blog:liked", "tb_blog_comments", "inboxes"} {
		if phases[name] <= 0 {
			t.Errorf("phase %s: rows/s %v", name, phases[name])
		}
	}
	if out["skipped"] != 0.0 {
		t.Errorf("%v rows skipped from clean synthetic data", out["skipped"])
	}
	noKeysLeft(t, redisURL, "feeddbench:")
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'feedd_bench_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d benchmark databases left (%v)", n, err)
	}
}

// TestBenchCapacity: the simulation at two sizes with costs from a file
// (no server), the growth planned at two more, and a threshold sweep at
// two read ratios with the cheapest threshold of each.
func TestBenchCapacity(t *testing.T) {
	t.Parallel()
	out := runBenchJSON(t, "capacity", "--sizes", "2000,4000", "--plan", "100000,1000000", "--warmup-days", "3", "--days", "0.5",
		"--costs", "testdata/capacity-costs.json", "--sweep", "0,50,500", "--sweep-reads", "0.5,2")
	runs, _ := out["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("runs: %v", out["runs"])
	}
	for i, r := range runs {
		run := r.(map[string]any)
		if run["users"] != []float64{2000, 4000}[i] {
			t.Errorf("run %d: users %v", i, run["users"])
		}
		for _, fig := range []string{"day", "peak_hour"} {
			f := run[fig].(map[string]any)
			for _, k := range []string{"deliveries_per_s", "pages_per_s", "redis_cores", "api_cores", "worker_cores", "pg_writes_per_s", "pg_reads_per_s"} {
				if x, _ := f[k].(float64); x <= 0 {
					t.Errorf("run %d: %s.%s = %v", i, fig, k, f[k])
				}
			}
		}
		if x, _ := run["redis_bytes"].(float64); x <= 0 {
			t.Errorf("run %d: redis_bytes %v", i, run["redis_bytes"])
		}
	}
	growth, _ := out["growth"].([]any)
	if len(growth) == 0 {
		t.Fatal("no growth")
	}
	for _, g := range growth {
		if p, _ := g.(map[string]any)["planned"].([]any); len(p) != 2 {
			t.Errorf("growth %v: want two planned sizes", g)
		}
	}
	sweep, _ := out["sweep"].([]any)
	best, _ := out["best"].(map[string]any)
	if len(sweep) != 6 || len(best) != 2 || best["0.5"] == nil || best["2"] == nil {
		t.Fatalf("sweep %d rows, best %v", len(sweep), best)
	}
	// Threshold 0 is push for everyone: no pull reads; 50 puts the most
	// followed in pull mode.
	off, low := sweep[0].(map[string]any), sweep[1].(map[string]any)
	if off["pull_authors"] != 0.0 || low["pull_authors"].(float64) <= 0 {
		t.Errorf("pull authors: threshold 0 %v, 50 %v", off["pull_authors"], low["pull_authors"])
	}
}

// TestBenchCapacityCheck: the simulation's visits replayed through the real
// server on PostgreSQL and Redis agree with what it counted: the same
// pages, and deliveries, pull reads per page and the bytes of the inboxes
// and outboxes within 5%.
func TestBenchCapacityCheck(t *testing.T) {
	url, prefix := testenv.RedisURL(t)
	out := runBenchJSON(t, "capacity", "--check", "--users", "1500", "--follows-mean", "20", "--days", "0.3", "--warmup-days", "0",
		"--pull-threshold", "150", "--costs", "testdata/capacity-costs.json",
		"--database-url", testenv.PostgresURL(t), "--redis-url", url, "--redis-prefix", prefix)
	check, _ := out["check"].(map[string]any)
	diff, _ := check["diff_percent"].(map[string]any)
	sim, _ := check["simulated"].(map[string]any)
	if diff == nil || sim["pull_reads_per_page"].(float64) <= 0 || sim["deliveries"].(float64) <= 0 {
		t.Fatalf("check: %v", check)
	}
	if diff["pages"] != 0.0 {
		t.Errorf("pages: simulated %v, real %v", sim["pages"], check["real"])
	}
	for _, k := range []string{"deliveries", "pull_reads_per_page", "redis_bytes"} {
		if d, ok := diff[k].(float64); !ok || d < -5 || d > 5 {
			t.Errorf("%s: %v%% apart (simulated %v, real %v)", k, diff[k], sim, check["real"])
		}
	}
	noKeysLeft(t, url, prefix)
}
