package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/inmem"
	"github.com/feedd/feedd/internal/metrics"
	"github.com/feedd/feedd/jwtauth"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

func newLogger(c *config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// clock is the service's clock; tests in this package replace it to publish
// bursts of posts within one millisecond.
var clock = time.Now

// streamHeartbeat is the period of the live streams' heartbeat; tests in
// this package shorten it.
var streamHeartbeat = feedhttp.DefaultHeartbeat

// app is a wired feedd process.
type app struct {
	log     *slog.Logger
	trace   *feed.Tracer // --trace-posts; nil: off
	service *feed.Service
	events  feed.EventService // live timeline events
	health  func(context.Context) error
	ready   []feedhttp.ReadyCheck       // GET /readyz: a write to the database, Redis answering
	start   func(context.Context) error // starts the workers
	stop    func(context.Context) error // stops the workers
	closers []func() error

	// The admin listener's parts (cmd/feedd/admin.go).
	metrics    *metrics.Metrics
	jobsUI     func(context.Context) (http.Handler, error)       // River's UI over this process's queue
	jobCounts  func(context.Context) ([]metrics.JobCount, error) // feedd_jobs's one grouped query
	adminExtra map[string]http.Handler                           // more admin routes: pattern -> handler

	// lag is the fan-out lag (cmd/feedd/lag.go), read while this process
	// works jobs; nil otherwise.
	lag *lagWatch

	// unavailable recognises errors of a database out of reach (PostgreSQL
	// restarting) or unable to take a write for the moment (SQLite busy
	// past its timeout, or full), which the API answers 503
	// (feedhttp.Server.Unavailable).
	unavailable func(error) bool

	// sso is the page's single sign-on; nil when not configured.
	sso feedhttp.SSO

	// The pools, for feedd bench's samples: nil when not configured.
	pgPool *pgxpool.Pool
	rdb    goredis.UniversalClient
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

func runApp(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	a, err := openApp(ctx, c, log)
	if err != nil {
		return err
	}
	defer a.close()
	if c.cmd == "migrate" {
		log.Info("migrations applied")
		return nil
	}
	if c.cmd == "push-key" {
		return printPushKey(ctx, a, stdout)
	}
	admin, err := startAdmin(ctx, c, a)
	if err != nil {
		return err
	}
	if err := a.start(ctx); err != nil {
		admin.stop(context.Background())
		return fmt.Errorf("start workers: %w", err)
	}
	var srvErr error
	if c.cmd == "serve" {
		srvErr = serveHTTP(ctx, c, a)
	} else if c.cmd == "seed" {
		srvErr = seedDemo(ctx, c, a, stdout)
	} else {
		log.Info("worker started", "workers", c.workers)
		<-ctx.Done()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.stop(sctx); err != nil {
		log.Warn("stop workers", "error", err)
	}
	if err := admin.stop(sctx); err != nil {
		log.Warn("stop admin listener", "error", err)
	}
	log.Info("stopped")
	return srvErr
}

// serveHTTP serves until ctx is done, then lets in-flight requests finish.
func serveHTTP(ctx context.Context, c *config, a *app) error {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	api := newAPI(c, a)
	streams := api.Streams
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	srv.RegisterOnShutdown(streams.Shutdown) // streams end so clients reconnect elsewhere
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.log.Info("listening", "addr", ln.Addr().String(), "workers", c.workers)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newAPI is the public listener's API over a, as c configures it.
func newAPI(c *config, a *app) *feedhttp.Server {
	streams := &feedhttp.Streams{Events: a.events, PerUser: c.streamUser, Max: c.streamMax, Heartbeat: streamHeartbeat, Trace: a.trace}
	api := &feedhttp.Server{Service: a.service, Log: a.log, Health: a.health, Ready: a.ready, TrustedProxies: c.proxies, Observe: a.metrics, Streams: streams, Shed: c.shed(a), Unavailable: a.unavailable,
		AllowedOrigins: c.origins, BodyTimeout: c.bodyTimeout, BodyMemory: int64(c.bodyMemory), SSO: a.sso, UploadTimeout: c.media.uploadTimeout}
	if c.accessLog {
		api.AccessLog = a.log
	}
	return api
}

// stores is one backend's set of domain stores.
type stores interface {
	feed.UserStore
	feed.AuthStore
	feed.PostStore
	feed.FollowStore
	feed.SocialStore
	feed.FilterStore
	feed.RankStore
	feed.SnapshotStore
	feed.NotifyStore
	feed.CommentStore
	feed.MarkerStore
	feed.PushStore
	feed.IdentityStore
	feed.APIKeyStore
	feed.AccountStore
	feed.RepostStore
	feed.MediaStore
}

// openApp wires the backends the configuration names: SQLite or PostgreSQL
// as the source of truth and job queue, and Redis (one node, Sentinels or a
// Cluster), when configured, for inboxes, sessions and codes.
func openApp(ctx context.Context, c *config, log *slog.Logger) (_ *app, err error) {
	a := &app{log: log, metrics: metrics.New()}
	if c.tracePosts {
		a.trace = &feed.Tracer{Log: log}
	}
	opened := a // a is nil once an error is returned
	defer func() {
		if err != nil {
			opened.close()
		}
	}()
	workers := c.workers
	if c.storeOnly() {
		workers = 0
	}
	qcfg := fanout.Config{Workers: workers, JobTimeout: c.jobTimeout, RescueAfter: c.rescueAfter, CompletedRetention: c.jobRetention, Log: log}

	var st stores
	var rates feed.RateStore // the abuse limits' counters
	var inbox feed.Inbox
	var outbox feed.Outbox // the posts index in SQL
	// newQueue makes the database's job queue, once the workers' Deps are known.
	var newQueue func(*fanout.Deps) error
	var readLag func(context.Context) (time.Duration, error) // the fan-out lag, in the database's SQL
	var notified func(func([]feed.Notice))                   // sets the database's Notified hook
	if c.databaseURL != "" {
		db, err := postgres.Open(ctx, c.databaseURL)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		a.closers = append(a.closers, func() error { db.Close(); return nil })
		st, inbox, outbox, rates = db, &postgres.Inbox{DB: db, Cap: c.inboxCap}, &postgres.Outbox{DB: db}, db
		db.Notify = c.notifySettings()
		notified = func(f func([]feed.Notice)) { db.Notified = f }
		a.health = db.Pool.Ping
		a.pgPool = db.Pool
		a.unavailable = postgres.Unavailable
		a.metrics.WatchPostgres(db.Pool)
		a.jobCounts = func(ctx context.Context) ([]metrics.JobCount, error) { return countJobsPG(ctx, db.Pool) }
		readLag = func(ctx context.Context) (time.Duration, error) { return queueLagPG(ctx, db.Pool) }
		pgEvents := postgres.NewEvents(db, log) // LISTEN/NOTIFY, unless Redis is configured
		a.events = pgEvents
		a.closers = append(a.closers, pgEvents.Close)
		a.ready = []feedhttp.ReadyCheck{{Name: "database", Check: db.Ready}}
		newQueue = func(deps *fanout.Deps) error {
			q, err := fanout.New(riverpgxv5.New(db.Pool), qcfg, deps)
			if err != nil {
				return err
			}
			db.Enqueue = q.EnqueueTx
			a.start, a.stop = q.Start, q.Stop
			a.jobsUI = func(ctx context.Context) (http.Handler, error) { return jobsUI(ctx, q.Client, log) }
			if workers > 0 {
				// A dead worker's jobs are retried --rescue-after after
				// they started, not up to a minute later (postgres/rescue.go).
				rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
				go rescueLoop(rctx, db, c.rescueAfter, log)
				a.closers = append(a.closers, func() error { stop(); return nil })
			}
			return nil
		}
	} else {
		db, err := sqlite.OpenOptions(ctx, c.dataDir, sqlite.Options{Synchronous: c.synchronous, Bulk: c.sqliteBulk})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, db.Close)
		driver := riversqlite.New(db.Write)
		if err := fanout.Migrate(ctx, driver); err != nil {
			return nil, fmt.Errorf("migrate job queue: %w", err)
		}
		st, outbox, rates = db, &sqlite.Outbox{DB: db}, db
		db.Notify = c.notifySettings()
		notified = func(f func([]feed.Notice)) { db.Notified = f }
		a.health = db.Read.PingContext
		a.unavailable = sqlite.Unavailable
		a.ready = []feedhttp.ReadyCheck{{Name: "database", Check: db.Ready}}
		if !c.redisConfigured() {
			// The inboxes have a file and a writer of their own (sqlite/inboxdb.go).
			idb, err := sqlite.OpenInbox(ctx, c.dataDir, sqlite.Options{Synchronous: c.synchronous, Bulk: c.sqliteBulk}, db)
			if err != nil {
				return nil, err
			}
			a.closers = append(a.closers, idb.Close)
			if idb.Regenerated {
				log.Warn("inbox.db did not belong to feedd.db (restored from a backup, or lost): inboxes emptied; each is regenerated at its user's next visit",
					"inbox_file", idb.Path)
			}
			inbox = &sqlite.Inbox{DB: idb, Cap: c.inboxCap}
			a.ready = append(a.ready, feedhttp.ReadyCheck{Name: "inbox database", Check: idb.Ready})
		}
		qcfg.PollInterval = c.pollInterval
		a.jobCounts = func(ctx context.Context) ([]metrics.JobCount, error) { return countJobsSQL(ctx, db.Read) }
		readLag = func(ctx context.Context) (time.Duration, error) { return queueLagSQL(ctx, db.Read) }
		// SQLite has no LISTEN/NOTIFY: this process wakes its own workers
		// when it commits jobs, and they poll only for the rest.
		qcfg.Wake = fanout.NewWake()
		db.Enqueued = qcfg.Wake.Jobs
		qcfg.InsertUnread = true
		newQueue = func(deps *fanout.Deps) error {
			q, err := fanout.New(driver, qcfg, deps)
			if err != nil {
				return err
			}
			db.Enqueue = q.EnqueueTx
			a.start, a.stop = q.Start, q.Stop
			a.jobsUI = func(ctx context.Context) (http.Handler, error) { return jobsUI(ctx, q.Client, log) }
			if c.cmd == "serve" && workers > 0 {
				// The embedded default is its database's only worker: what
				// is running at its start was orphaned by a crash (fanout/rescue.go).
				a.start = func(ctx context.Context) error {
					n, err := fanout.RescueRunningSQLite(ctx, driver.GetExecutor(), a.metrics, log)
					if err != nil {
						return fmt.Errorf("rescue orphaned jobs: %w", err)
					}
					if n > 0 {
						log.Info("orphaned jobs of a previous run scheduled to run again", "jobs", n)
					}
					return q.Start(ctx)
				}
			}
			return nil
		}
	}

	var auth feed.AuthStore = st
	var sessionPages feed.SessionPager
	var snapshots feed.SnapshotStore = st
	rdb, err := redisClient(c)
	if err != nil {
		return nil, err
	}
	if rdb != nil {
		a.closers = append(a.closers, rdb.Close)
		a.rdb = rdb
		a.metrics.WatchRedis(rdb)
		// While Redis is down, fail over to the database at once instead of
		// waiting out every command's dial and retries (redis/breaker.go).
		redis.NewBreaker(rdb, log)
		opts := redis.InboxOptions{Prefix: c.redisPrefix, Cap: c.inboxCap, Layout: redis.Layout(c.inboxLayout)}
		ri := redis.NewInbox(rdb, opts)
		inbox = ri
		outbox = redis.NewOutbox(rdb, opts, outbox)
		ra := redis.NewAuthStore(rdb, c.redisPrefix)
		ra.Durable = st // Redis caches sessions; the database keeps them through a Redis loss
		auth = ra
		// A feed page's session and first inbox page in one round trip.
		if sessionPages, err = redis.NewSessionPages(ra, ri); err != nil {
			return nil, err
		}
		events := redis.NewEvents(rdb, c.redisPrefix, log) // Pub/Sub between workers and API processes
		a.events = events
		a.closers = append(a.closers, events.Close)
		rr := redis.NewRateStore(rdb, c.redisPrefix)
		rr.Durable = rates // the limits hold through a Redis loss
		rates = rr
		a.ready = append(a.ready, feedhttp.ReadyCheck{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
		if c.rankSnapshots == "auto" || c.rankSnapshots == "redis" {
			snapshots = redis.NewSnapshots(rdb, c.redisPrefix)
		}
		dbHealth := a.health
		// Redis being down degrades feedd but does not stop it serving, so
		// health reports the database only; Redis trouble goes to the log.
		a.health = func(ctx context.Context) error {
			if err := rdb.Ping(ctx).Err(); err != nil {
				log.Warn("redis unreachable; serving degraded", "error", err)
			}
			return dbHealth(ctx)
		}
	}

	snapshots = rankSnapshots(c, rdb != nil, snapshots)
	if a.events == nil {
		a.events = &inmem.Events{} // one process: workers and streams meet here
	}
	if !c.storeOnly() {
		// Notification groups reach live streams as events (cmd/feedd/notify.go).
		nctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		notified(publishNotices(nctx, a.events, log))
		a.closers = append(a.closers, func() error { stop(); return nil })
	}
	active := time.Duration(c.activeDays) * 24 * time.Hour
	deps := &fanout.Deps{
		Events:  a.events,
		Follows: st, Inbox: inbox, Users: st, Social: st, Outbox: outbox, Comments: st, Reposts: st,
		PullThreshold: c.pullAt, Backfill: c.backfill, InboxCap: c.inboxCap, ActiveWindow: active, Now: clock,
		BatchSize: c.fanoutBatch, SplitSize: c.fanoutSplit, Observe: a.metrics, Trace: a.trace,
	}
	if c.noEvents {
		deps.Events = nil
	}
	blobs, images, err := openMedia(ctx, c, a)
	if err != nil {
		return nil, err
	}
	deps.Media, deps.MediaSweepEvery = sweeper{a}, c.mediaSweepEvery()
	if a.pgPool != nil {
		// A job cut off by PostgreSQL restarting runs again once it is
		// back (fanout/outage.go); on SQLite, River retries it.
		deps.Unavailable, deps.Ping = a.unavailable, a.pgPool.Ping
	}
	if err := newQueue(deps); err != nil {
		return nil, err
	}
	if workers > 0 && !c.storeOnly() {
		// This process works jobs: its API gives way to them when they
		// fall behind (feedhttp.Shed.Lag), and the lag is a metric.
		a.lag = &lagWatch{}
		lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		go a.lag.run(lctx, lagInterval, lagIdleInterval, readLag, log)
		a.closers = append(a.closers, func() error { stop(); return nil })
		a.metrics.QueueLag(a.lag.get)
	}
	secret, err := loadSecret(c)
	if err != nil {
		return nil, err
	}
	// Only the API verifies tokens and signs in (feedd worker, migrate and
	// apikey serve no request).
	var tokens *jwtauth.Verifier
	if c.cmd == "serve" {
		if tokens, err = c.tokenVerifier(ctx, log); err != nil {
			return nil, err
		}
		if tokens != nil {
			a.closers = append(a.closers, func() error { tokens.Close(); return nil })
		}
		if p, err := c.singleSignOn(); err != nil {
			return nil, err
		} else if p != nil {
			a.sso = p
		}
	}
	a.service = &feed.Service{
		Users: st, Auth: auth, Posts: st, Follows: st, Inbox: inbox, Social: st, Outbox: outbox, SessionPages: sessionPages,
		ActiveWindow: active, PullThreshold: c.pullAt, Codes: codeSender(c, log), PageSize: c.pageSize, InboxCap: c.inboxCap, Log: log, Now: clock,
		Rates: rates, Limits: c.limits, WriteLimits: c.writeLimits, Secret: secret, Observe: a.metrics, Trace: a.trace,
		Filters: st, Ranks: st, Snapshots: snapshots, Rank: &c.rank, ReportThreshold: c.reportThreshold,
		ReportMinAge: c.reportMinAge, ReportLimit: c.reportLimit,
		Notify: st, Comments: st, Markers: st, Reposts: st,
		Identities: st, APIKeys: st, Accounts: st, AppIssuer: c.identity.issuer, ServerLimit: c.identity.serverLimit, PhoneLoginOff: !c.identity.phoneLogin,
		Media: st, Blobs: blobs, Images: images, MediaLimits: c.mediaSettings(),
	}
	if a.service.Push, err = c.newPush(st); err != nil {
		return nil, err
	}
	if a.service.Push != nil {
		deps.Push = a.service // the push jobs' worker (fanout/push.go)
	}
	if tokens != nil {
		a.service.Tokens = tokens
	}
	deps.Erase = a.service.EraseWork
	// Moderation (reports, hide, restore) is on the admin listener only.
	a.adminExtra = (&feedhttp.Server{Service: a.service, Log: log}).AdminRoutes()
	return a, nil
}

// storeOnly reports whether the command only uses the store, with no
// workers, streams or API: feedd migrate, feedd apikey and feedd push-key.
func (c *config) storeOnly() bool {
	return c.cmd == "migrate" || c.cmd == "apikey" || c.cmd == "push-key"
}

// rankSnapshots returns where the ranked scrolls' orders are kept
// (--rank-snapshots), given the store chosen so far (Redis when configured,
// else the database): in this process's memory when asked, or by default
// on the embedded SQLite without Redis, where a snapshot in the database
// would be a write transaction per first ranked page, queued behind the one
// writer (BENCHMARKS.md, "Ranked timeline").
func rankSnapshots(c *config, withRedis bool, chosen feed.SnapshotStore) feed.SnapshotStore {
	if c.rankSnapshots == "memory" || (c.rankSnapshots == "auto" && !withRedis && c.databaseURL == "") {
		return &inmem.Snapshots{}
	}
	return chosen
}

// redisClient returns the configured Redis client, nil if none. One code
// path serves a single node, Sentinels and a Cluster
// (redis.UniversalClient). The pools are sized for the workers and the
// API, and requests retry once: when Redis is down they fall back to the
// database quickly instead of waiting out a long retry schedule.
func redisClient(c *config) (goredis.UniversalClient, error) {
	if !c.redisConfigured() {
		return nil, nil
	}
	switch {
	case c.redisCluster != "":
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(c.redisCluster, ","), PoolSize: 64, MaxRetries: 1}), nil
	case c.redisFailover != nil:
		opts := *c.redisFailover
		opts.PoolSize, opts.MaxRetries = 64, 1
		return goredis.NewFailoverClient(&opts), nil
	case c.redisNode != nil:
		opts := *c.redisNode
		opts.PoolSize, opts.MaxRetries = 64, 1
		return goredis.NewClient(&opts), nil
	case c.redisURL != "":
		return nil, errors.New("--redis-url was not parsed") // parseRedisURL is part of reading the configuration
	}
	return nil, nil
}

// redisConfigured reports whether feedd is given a Redis (then the
// inboxes are in it).
func (c *config) redisConfigured() bool {
	return c.redisCluster != "" || c.redisFailover != nil || c.redisNode != nil || c.redisURL != ""
}
