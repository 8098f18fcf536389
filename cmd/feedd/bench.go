package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/internal/bench"
	"github.com/feedd/feedd/internal/pushtest"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

const benchUsage = `feedd bench: measure feedd against the tutorial design and the hardware.

Usage:
  feedd bench fanout  [flags]   one post to --followers inboxes: seed loop, feedd, limit
  feedd bench read    [flags]   closed-loop GET /blog/of/follow: feedd against the seed read path
  feedd bench publish [flags]   publish latency of an author with 10 followers and one with --followers
  feedd bench memory  [flags]   Redis bytes per inbox entry at the cap, default and recommended settings
  feedd bench stream  [flags]   live stream: event latency after publish, memory of --streams idle streams
  feedd bench mixed   [flags]   open-loop mixed traffic at --rate: latency, shedding and feed freshness
  feedd bench rank    [flags]   NDCG@10 of the ranked timeline against the chronological one, and page latency
  feedd bench writes  [flags]   small writes over HTTP: setup of --users users (code, login, /user/me, two
                                follows each), likes/s and follows/s, --concurrency clients, closed loop
  feedd bench notify  [flags]   likes with notifications on and off, and the page read with a 100,000-actor group
  feedd bench push    [flags]   Web Push: pushes/s of the push jobs to a push service on loopback
  feedd bench comments [flags]  comments/s on one post, the first page of a 100,000-comment post against a
                                10-comment one (both orders), and the delete of the big post
  feedd bench server  [flags]   the server API over HTTP: batch upserts of users, one call of --server-pairs
                                follows, publishes under foreign ids each retried, concurrent retries of one
  feedd bench capacity [flags]  simulate --users users over a synthetic follow graph with feedd's own
                                delivery rules, priced with costs measured on --redis-url and
                                --database-url (or --costs FILE): the plan of docs/scaling.md
  feedd bench import  [flags]   feedd import hmdp of a synthetic tutorial database of --users users (power-law
                                follows) made on the MySQL server of --mysql: rows/s per table
  feedd bench media   [flags]   uploads/s and p99 of a --media-photo-mp photo, --media-concurrency at once; peak
                                memory while --media-big-clients upload a --media-big-mp image at once; previews
                                read/s, --media-read-concurrency at once, from feedd and from nginx on the same files

Every run wires feedd as 'feedd serve' does, with the serve flags below
(--redis-url, --database-url, --workers, --fanout-batch ...). Without
--database-url it uses a temporary SQLite database, removed afterwards; with
it, a temporary database created on that server (CREATEDB needed) and dropped
afterwards. Without --redis-url the inboxes are in the database. Redis keys
go under a prefix of the run's own, deleted afterwards. The benchmarks
measure push fan-out: --pull-threshold is 0 unless given. Their server does
not shed load (--max-reads, --max-writes and --max-lag are 0 unless given),
except in mixed, which counts the requests shed. The per-user write limits
(--post-limit-user, --follow-limit-user, --like-limit-user,
--comment-limit-user, --repost-limit-user) are off unless
given. 'writes' turns the login limits (--code-limit-*,
--login-fail-limit-client) off unless given, and
measures the SQLite durability of --sqlite-synchronous. Results go to stdout
(one JSON object with --json), progress to stderr. BENCHMARKS.md has the
figures of the development machine and the commands that made them.

Flags:
`

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		fs, _, _ := newBenchFlagSet("", &config{cmd: "serve"}, &benchFlags{}, getenv, stderr) // help shows even with a malformed FEED_* value
		fmt.Fprint(stdout, benchUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		if len(args) == 0 {
			return errors.New("feedd bench needs a benchmark: " + benchNames())
		}
		return nil
	}
	sub := args[0]
	if sub == streamClientsCmd {
		return holdStreamClients(ctx, os.Stdin, stdout)
	}
	step, ok := findBenchStep(sub)
	if !ok {
		return fmt.Errorf("unknown benchmark %q (%s)", sub, benchNames())
	}
	c, bf := &config{cmd: "serve"}, &benchFlags{}
	fs, explicit, envErr := newBenchFlagSet(sub, c, bf, getenv, stderr)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if envErr != nil {
		return envErr
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := explicit(fs)
	if err := benchSettings(sub, c, bf, set); err != nil {
		return err
	}
	r := &benchRun{c: c, bf: bf, set: set, stdout: stdout, stderr: stderr}
	if step.prepare != nil {
		if done, err := step.prepare(ctx, r); done || err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, bf.timeout)
	defer cancel()

	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	r.tag = randomTag()

	var rdb *goredis.Client
	if c.redisNode != nil {
		opts := *c.redisNode
		opts.PoolSize = 16
		rdb = goredis.NewClient(&opts)
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		// Everything the run writes goes under a prefix of its own.
		c.redisPrefix += "feeddbench:" + r.tag + ":"
		defer func() {
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer ccancel()
			if n, err := bench.DeleteKeys(cctx, rdb, c.redisPrefix); err != nil {
				fmt.Fprintf(stderr, "feedd bench: deleting keys %s*: %v\n", c.redisPrefix, err)
			} else if n > 0 {
				fmt.Fprintf(stderr, "deleted %d Redis keys under %s\n", n, c.redisPrefix)
			}
		}()
	}

	r.env = &bench.Env{Redis: rdb, Prefix: c.redisPrefix, FanoutBatch: c.fanoutBatch, InboxCap: c.inboxCap, Layout: redis.Layout(c.inboxLayout), Progress: stderr}
	defer r.close()
	if !step.redisOnly {
		if err := wireBench(ctx, r, step, log); err != nil {
			return err
		}
	}

	// The machine's load, for the record: figures taken while other work
	// ran on the same cores are not comparable.
	fmt.Fprintf(stderr, "load average at start: %s\n", loadAverage())
	defer func() { fmt.Fprintf(stderr, "load average at end: %s\n", loadAverage()) }()

	out, text, err := step.run(ctx, r)
	if err != nil || out == nil {
		return err
	}
	if bf.json {
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, text)
	}
	return nil
}

// wireBench wires feedd for r as 'feedd serve' does, on a database of the
// run's own, and fills r.env with it; r.close undoes it all.
func wireBench(ctx context.Context, r *benchRun, step benchStep, log *slog.Logger) error {
	c, bf, env := r.c, r.bf, r.env
	cleanup, err := benchDatabase(ctx, c, r.tag, r.set["data"])
	if err != nil {
		return err
	}
	r.atClose(cleanup)
	c.noEvents = !bf.events
	if step.pushService {
		// The push service on loopback that the pushes go to.
		srv, err := pushtest.NewServer()
		if err != nil {
			return err
		}
		r.atClose(srv.Close)
		bf.push.Server = srv
		c.push.on, c.push.allow = true, strings.TrimPrefix(srv.URL, "http://")
	}
	api := *c
	if bf.workersApart {
		api.workers = 0 // feedd serve --workers 0; the workers are wired below as feedd worker
	}
	a, err := openApp(ctx, &api, log)
	if err != nil {
		return err
	}
	r.atClose(a.close)
	if step.subscribe && bf.events {
		// Every event reaches this process, as it reaches every API
		// process: the broker's delivery and the local dispatch count.
		s, err := a.events.Subscribe(ctx, 0, nil)
		if err != nil {
			return err
		}
		r.atClose(func() { s.Close() })
	}
	env.Service = a.service
	if c.media.s3URL == "" {
		env.MediaDir = c.mediaDir()
	}
	if a.jobCounts != nil {
		jobCounts := a.jobCounts
		env.Jobs = func(ctx context.Context) (int64, error) {
			counts, err := jobCounts(ctx)
			var n int64
			for _, c := range counts {
				if c.State != "discarded" && c.State != "cancelled" {
					n += c.Jobs
				}
			}
			return n, err
		}
	}
	apiMetrics := a.metrics
	env.Start = a.start
	env.Stop = a.stop
	health := a.health
	apiApp := a // the API process's wiring; a becomes the workers' when apart
	var workersApp *app
	if bf.workersApart {
		wc := *c
		wc.cmd = "worker"
		wa, err := openApp(ctx, &wc, log)
		if err != nil {
			return err
		}
		r.atClose(wa.close)
		env.Start, env.Stop = wa.start, wa.stop
		a, workersApp = wa, wa // stopped below
	}
	r.atClose(func() {
		// Whatever fan-out is still queued is abandoned with the database.
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer scancel()
		a.stop(sctx)
	})
	env.Metric = func(name string) (float64, error) {
		v, err := apiMetrics.Value(name)
		if workersApp != nil && err == nil {
			var w float64
			w, err = workersApp.metrics.Value(name)
			v += w
		}
		return v, err
	}
	streams := &feedhttp.Streams{Events: apiApp.events, PerUser: c.streamUser, Max: c.streamMax, Trace: apiApp.trace}
	env.Connected = streams.Connected
	env.Handler = func(extra map[string]http.Handler) http.Handler {
		return (&feedhttp.Server{Service: apiApp.service, Log: log, Health: health, Extra: extra, Observe: apiApp.metrics, Streams: streams, Shed: c.shed(apiApp), Unavailable: apiApp.unavailable}).Handler()
	}
	if c.databaseURL != "" {
		pool, err := pgxpool.New(ctx, c.databaseURL)
		if err != nil {
			return err
		}
		env.Store = &bench.PostgresStore{Pool: pool}
		env.Gauges = soakGauges(apiApp, workersApp, pool, env.Redis)
	} else {
		db, err := sqlite.Open(ctx, c.dataDir)
		if err != nil {
			return err
		}
		store := &bench.SQLiteStore{Write: db.Write, Read: db.Read, Closer: db.Close}
		if !c.redisConfigured() {
			idb, err := sqlite.OpenInbox(ctx, c.dataDir, sqlite.Options{}, nil)
			if err != nil {
				db.Close()
				return err
			}
			store.InboxWrite, store.InboxRead = idb.Write, idb.Read
			store.Closer = func() error { return errors.Join(idb.Close(), db.Close()) }
		}
		env.Store = store
		env.Gauges = soakGauges(apiApp, workersApp, nil, env.Redis)
	}
	r.atClose(func() { env.Store.Close() })
	return nil
}

// loadAverage is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func randomTag() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// benchDatabase points c at a database of the benchmark's own and returns
// the function that removes it: a temporary directory for SQLite, or a
// temporary database on the PostgreSQL server of --database-url.
func benchDatabase(ctx context.Context, c *config, tag string, dataSet bool) (func(), error) {
	if c.databaseURL == "" {
		parent := ""
		if dataSet {
			parent = c.dataDir
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return nil, err
			}
		}
		dir, err := os.MkdirTemp(parent, "feedd-bench-")
		if err != nil {
			return nil, err
		}
		c.dataDir = dir
		return func() { os.RemoveAll(dir) }, nil
	}
	admin := c.databaseURL
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	name := "feedd_bench_" + tag
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("postgres: create the benchmark's database (CREATEDB needed): %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("feedd bench needs --database-url as a postgres:// URL")
	}
	u.Path = "/" + name
	c.databaseURL = u.String()
	return func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(cctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(cctx)
		conn.Exec(cctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}, nil
}

// benchImport is feedd bench import: a database of the run's own on the
// MySQL server of --mysql, filled and imported into env's store, then
// dropped, with the likes' keys in --hmdp-redis.
func benchImport(ctx context.Context, c *config, bf *benchFlags, env *bench.Env, tag string) (*bench.ImportResult, error) {
	cfg, err := mysql.ParseDSN(bf.mysql)
	if err != nil {
		return nil, fmt.Errorf("--mysql: %w", err)
	}
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	name := "feedd_bench_" + tag
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		return nil, fmt.Errorf("create the benchmark's MySQL database: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		admin.ExecContext(cctx, "DROP DATABASE IF EXISTS "+name)
	}()
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(8)
	o := bench.ImportOptions{MySQL: db, Data: bench.HMDPOptions{Users: bf.users, Follows: bf.follows, Posts: bf.posts, Likes: bf.likes, Comments: bf.hmdpComments, Progress: env.Progress},
		Backfill: c.backfill, InboxCap: c.inboxCap, PullThreshold: c.pullAt, CPUProfile: bf.cpuProfile}
	if bf.hmdpRedis != "" {
		opts, err := goredis.ParseURL(bf.hmdpRedis)
		if err != nil {
			return nil, fmt.Errorf("--hmdp-redis: %w", err)
		}
		rdb := goredis.NewClient(opts)
		defer rdb.Close()
		o.Redis, o.Prefix = rdb, "feeddbench:"+tag+":hmdp:"
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
			defer cancel()
			bench.DeleteKeys(cctx, rdb, o.Prefix)
		}()
	}
	return bench.Import(ctx, env, o)
}
