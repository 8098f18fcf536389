package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

// logSender is the default feed.CodeSender: it writes the code to the log,
// for local development and scripts reading --log-format json output.
type logSender struct{ log *slog.Logger }

func (s logSender) SendCode(ctx context.Context, phone, code string) error {
	s.log.Info("login code", "phone", phone, "code", code)
	return nil
}

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

// app is a wired feedd process.
type app struct {
	log     *slog.Logger
	service *feed.Service
	health  func(context.Context) error
	start   func(context.Context) error // starts the workers
	stop    func(context.Context) error // stops the workers
	closers []func() error
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
	if err := a.start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	var srvErr error
	if c.cmd == "serve" {
		srvErr = serveHTTP(ctx, c, a)
	} else {
		log.Info("worker started", "workers", c.workers)
		<-ctx.Done()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.stop(sctx); err != nil {
		log.Warn("stop workers", "error", err)
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
	srv := &http.Server{
		Handler:           (&feedhttp.Server{Service: a.service, Log: a.log, Health: a.health}).Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
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

// stores is one backend's set of domain stores.
type stores interface {
	feed.UserStore
	feed.AuthStore
	feed.PostStore
	feed.FollowStore
	feed.SocialStore
}

// openApp wires the backends the configuration names: SQLite or PostgreSQL
// as the source of truth and job queue, and Redis (one node or a Cluster),
// when configured, for inboxes, sessions and codes.
func openApp(ctx context.Context, c *config, log *slog.Logger) (a *app, err error) {
	a = &app{log: log}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	workers := c.workers
	if c.cmd == "migrate" {
		workers = 0
	}
	qcfg := fanout.Config{Workers: workers, JobTimeout: c.jobTimeout, RescueAfter: c.rescueAfter, Log: log}

	var st stores
	var inbox feed.Inbox
	var outbox feed.Outbox // the posts index in SQL
	var deps = &fanout.Deps{BatchSize: c.fanoutBatch, SplitSize: c.fanoutSplit}
	if c.databaseURL != "" {
		db, err := postgres.Open(ctx, c.databaseURL)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		a.closers = append(a.closers, func() error { db.Close(); return nil })
		st, inbox, outbox = db, &postgres.Inbox{DB: db, Cap: c.inboxCap}, &postgres.Outbox{DB: db}
		a.health = db.Pool.Ping
		q, err := fanout.New(riverpgxv5.New(db.Pool), qcfg, deps)
		if err != nil {
			return nil, err
		}
		db.Enqueue = q.EnqueueTx
		a.start, a.stop = q.Start, q.Stop
	} else {
		db, err := sqlite.Open(ctx, c.dataDir)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, db.Close)
		driver := riversqlite.New(db.Write)
		if err := fanout.Migrate(ctx, driver); err != nil {
			return nil, fmt.Errorf("migrate job queue: %w", err)
		}
		st, inbox, outbox = db, &sqlite.Inbox{DB: db, Cap: c.inboxCap}, &sqlite.Outbox{DB: db}
		a.health = db.Read.PingContext
		qcfg.PollInterval = c.pollInterval
		q, err := fanout.New(driver, qcfg, deps)
		if err != nil {
			return nil, err
		}
		db.Enqueue = q.EnqueueTx
		a.start, a.stop = q.Start, q.Stop
	}

	var auth feed.AuthStore = st
	if rdb := redisClient(c); rdb != nil {
		a.closers = append(a.closers, rdb.Close)
		inbox = redis.NewInbox(rdb, redis.InboxOptions{Prefix: c.redisPrefix, Cap: c.inboxCap})
		outbox = redis.NewOutbox(rdb, redis.InboxOptions{Prefix: c.redisPrefix, Cap: c.inboxCap}, outbox)
		ra := redis.NewAuthStore(rdb, c.redisPrefix)
		ra.Durable = st // Redis caches sessions; the database keeps them through a Redis loss
		auth = ra
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
	active := time.Duration(c.activeDays) * 24 * time.Hour
	deps.Follows, deps.Inbox, deps.Users, deps.Social, deps.Outbox = st, inbox, st, st, outbox
	deps.PullThreshold, deps.Backfill, deps.InboxCap, deps.ActiveWindow, deps.Now = c.pullAt, c.backfill, c.inboxCap, active, clock
	a.service = &feed.Service{
		Users: st, Auth: auth, Posts: st, Follows: st, Inbox: inbox, Social: st, Outbox: outbox,
		ActiveWindow: active, PullThreshold: c.pullAt, Codes: logSender{log}, PageSize: c.pageSize, InboxCap: c.inboxCap, Log: log, Now: clock,
	}
	return a, nil
}

// isSentinelURL reports whether a --redis-url names Sentinels (it has a
// master_name parameter): redis://sentinel:26379?master_name=mymaster&addr=other:26379
func isSentinelURL(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && parsed.Query().Has("master_name")
}

// redisClient returns the configured Redis client, nil if none. One code
// path serves a single node and a Cluster (redis.UniversalClient).
func redisClient(c *config) goredis.UniversalClient {
	if c.redisCluster != "" {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(c.redisCluster, ","), PoolSize: 64, MaxRetries: 1})
	}
	if c.redisURL == "" {
		return nil
	}
	if isSentinelURL(c.redisURL) {
		opts, err := goredis.ParseFailoverURL(c.redisURL) // validated by parseConfig
		if err != nil {
			panic(err)
		}
		opts.PoolSize, opts.MaxRetries = 64, 1
		return goredis.NewFailoverClient(opts)
	}
	opts, err := goredis.ParseURL(c.redisURL) // validated by parseConfig
	if err != nil {
		panic(err)
	}
	opts.PoolSize = 64
	// One retry: when Redis is down, requests fall back to the database
	// quickly instead of waiting out a long retry schedule.
	opts.MaxRetries = 1
	return goredis.NewClient(opts)
}
