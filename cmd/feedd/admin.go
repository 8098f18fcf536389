package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/feedd/feedd/fanout"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/internal/metrics"
)

// jobsInterval is how often feedd_jobs is counted (one grouped query).
const jobsInterval = 10 * time.Second

// adminListener is the running admin listener (nil when --admin-addr off).
type adminListener struct {
	srv  *http.Server
	errc chan error
}

// startAdmin binds --admin-addr (unless it is off) and serves the admin
// handler: metrics, the job dashboard, pprof and a.adminExtra. The bound
// address is logged as "admin listening" addr=...; failing to bind is a
// start-up error naming the address.
func startAdmin(ctx context.Context, c *config, a *app) (*adminListener, error) {
	if c.adminAddr == "off" {
		return nil, nil
	}
	if host, _, _ := net.SplitHostPort(c.adminAddr); c.adminToken == "" && !maybeLoopback(host) {
		return nil, fmt.Errorf("admin listener on %s (--admin-addr) is not a loopback address: set --admin-token (by file or environment) to bind it there", c.adminAddr)
	}
	ln, err := net.Listen("tcp", c.adminAddr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s (--admin-addr): %w", c.adminAddr, err)
	}
	// Anywhere but loopback, only with a token (docs/operations.md, "The
	// admin listener"): the bound address decides, whatever name was given.
	if tcp, ok := ln.Addr().(*net.TCPAddr); c.adminToken == "" && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("admin listener on %s (--admin-addr) is not a loopback address: set --admin-token (by file or environment) to bind it there", ln.Addr())
	}
	h := &feedhttp.Admin{Extra: a.adminExtra, Token: c.adminToken, AllowedOrigins: c.origins, Cmdline: redactArgs(c.args)}
	if a.metrics != nil {
		h.Metrics = a.metrics.Handler()
		if a.jobCounts != nil {
			a.metrics.WatchJobs(ctx, jobsInterval, jobKinds, a.jobCounts, a.log)
		}
	}
	if a.jobsUI != nil {
		ui, err := a.jobsUI(ctx)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("job dashboard: %w", err)
		}
		h.Jobs = ui
	}
	l := &adminListener{
		srv: &http.Server{
			Handler:           h.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			// No write timeout: a CPU profile or trace takes as long as
			// its ?seconds= asks.
			IdleTimeout: 2 * time.Minute,
		},
		errc: make(chan error, 1),
	}
	go func() { l.errc <- l.srv.Serve(ln) }()
	a.log.Info("admin listening", "addr", ln.Addr().String())
	return l, nil
}

// maybeLoopback reports whether host may be a loopback address: a loopback
// IP or a name (resolved by the listen, whose bound address is checked
// again); not an empty host or any other IP, refused before binding.
func maybeLoopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host != ""
}

// stop shuts the listener down, letting in-flight requests finish until ctx
// is done.
func (l *adminListener) stop(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if err := l.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		l.srv.Close()
		return err
	}
	return nil
}

// jobsUI returns River's web UI (riverui) over client's queue, served
// under feedhttp.JobsPrefix, its background services started until ctx is
// done.
func jobsUI[TTx any](ctx context.Context, client *river.Client[TTx], log *slog.Logger) (http.Handler, error) {
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil),
		Logger:    log.With("component", "riverui"),
		Prefix:    feedhttp.JobsPrefix,
	})
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// jobKinds are the job kinds feedd_jobs always exports (0 when none).
var jobKinds = []string{fanout.PostArgs{}.Kind(), fanout.BatchArgs{}.Kind(), fanout.FollowArgs{}.Kind()}

// jobCountsQuery is feedd_jobs's one grouped count of River's job table
// over metrics.JobStates, with placeholder(i) the i-th (1-based) bind
// parameter of the database. Every state counted is a prefix of one of
// River's indexes on state, so the count reads an index, not the table.
func jobCountsQuery(placeholder func(i int) string) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT kind, state, count(*) FROM river_job WHERE state IN (")
	args := make([]any, len(metrics.JobStates))
	for i, s := range metrics.JobStates {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(placeholder(i + 1))
		args[i] = s
	}
	b.WriteString(") GROUP BY kind, state")
	return b.String(), args
}

// countJobsPG counts jobs on PostgreSQL.
func countJobsPG(ctx context.Context, pool *pgxpool.Pool) ([]metrics.JobCount, error) {
	q, args := jobCountsQuery(func(i int) string { return "$" + strconv.Itoa(i) })
	rows, err := pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (metrics.JobCount, error) {
		var jc metrics.JobCount
		err := row.Scan(&jc.Kind, &jc.State, &jc.Jobs)
		return jc, err
	})
}

// countJobsSQL counts jobs on SQLite.
func countJobsSQL(ctx context.Context, db *sql.DB) ([]metrics.JobCount, error) {
	q, args := jobCountsQuery(func(int) string { return "?" })
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []metrics.JobCount
	for rows.Next() {
		var jc metrics.JobCount
		if err := rows.Scan(&jc.Kind, &jc.State, &jc.Jobs); err != nil {
			return nil, err
		}
		out = append(out, jc)
	}
	return out, rows.Err()
}
