package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	feedhttp "github.com/feedd/feedd/http"
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
	close   func() error
}

func runApp(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	a, err := openEmbedded(ctx, c, log)
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

// openEmbedded wires the embedded default: SQLite holds everything.
func openEmbedded(ctx context.Context, c *config, log *slog.Logger) (*app, error) {
	db, err := sqlite.Open(ctx, c.dataDir)
	if err != nil {
		return nil, err
	}
	driver := riversqlite.New(db.Write)
	if err := fanout.Migrate(ctx, driver); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate job queue: %w", err)
	}
	inbox := &sqlite.Inbox{DB: db}
	workers := c.workers
	if c.cmd == "migrate" {
		workers = 0
	}
	q, err := fanout.New(driver, fanout.Config{
		Workers: workers, PollInterval: c.pollInterval, JobTimeout: c.jobTimeout, RescueAfter: c.rescueAfter, Log: log,
	}, &fanout.Deps{Follows: db, Inbox: inbox, BatchSize: c.fanoutBatch, SplitSize: c.fanoutSplit})
	if err != nil {
		db.Close()
		return nil, err
	}
	db.Enqueue = q.EnqueueTx
	svc := &feed.Service{
		Users: db, Auth: db, Posts: db, Follows: db, Inbox: inbox,
		Codes: logSender{log}, PageSize: c.pageSize, Log: log, Now: clock,
	}
	return &app{
		log: log, service: svc,
		health: func(ctx context.Context) error { return db.Read.PingContext(ctx) },
		start:  q.Start, stop: q.Stop, close: db.Close,
	}, nil
}
