package main

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lagInterval is how often the fan-out lag is read (one indexed query)
// while jobs wait; with none waiting, lagIdleInterval, so that an idle
// process rests (a lag worth shedding for takes --max-lag to build up).
const (
	lagInterval     = 100 * time.Millisecond
	lagIdleInterval = time.Second
)

// The fan-out lag: the age of the oldest post (or follow) job waiting to
// be worked. Batch jobs of a big audience (priority 2) do not count: a
// celebrity's fan-out takes its seconds by design and must not make the
// API shed. On PostgreSQL, min(scheduled_at) is a seek of River's fetch
// index (state, queue, priority, scheduled_at). River's SQLite driver
// stores scheduled_at as text in two formats ("2006-01-02 15:04:05.000"
// from SQL's datetime(), "2006-01-02T15:04:05.000Z" from Go), whose text
// order is not time order, so there the ages are compared as numbers over
// the waiting jobs (an index-only scan of the same index, bounded).
const (
	lagQuerySQLite = `SELECT coalesce(unixepoch('now', 'subsec') - min(unixepoch(scheduled_at, 'subsec')), 0) FROM (
		SELECT scheduled_at FROM river_job WHERE state = 'available' AND queue = 'default' AND priority = 1 LIMIT 20000)`
	lagQueryPG = `SELECT coalesce(extract(epoch FROM now() - min(scheduled_at))::float8, 0)
		FROM river_job WHERE state = 'available' AND queue = 'default' AND priority = 1`
)

func queueLagSQL(ctx context.Context, db *sql.DB) (time.Duration, error) {
	var s float64
	err := db.QueryRowContext(ctx, lagQuerySQLite).Scan(&s)
	return seconds(s), err
}

func queueLagPG(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	var s float64
	err := pool.QueryRow(ctx, lagQueryPG).Scan(&s)
	return seconds(s), err
}

func seconds(s float64) time.Duration { return max(time.Duration(s*float64(time.Second)), 0) }

// lagWatch holds the last fan-out lag read, for the API's load shedding
// (feedhttp.Shed.Lag) and the metric feedd_fanout_queue_lag_seconds.
type lagWatch struct {
	v atomic.Int64
}

// get is the last lag read (0 before the first and after a failed read).
func (l *lagWatch) get() time.Duration { return time.Duration(l.v.Load()) }

// run reads the lag every interval while jobs wait, every idle while none
// does, until ctx is done. A failed read counts as no lag (the database's
// trouble shows elsewhere) and is logged once per run of failures.
func (l *lagWatch) run(ctx context.Context, interval, idle time.Duration, read func(context.Context) (time.Duration, error), log *slog.Logger) {
	t := time.NewTimer(interval)
	defer t.Stop()
	failing := false
	for {
		lag, err := read(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.Warn("read fan-out lag", "error", err)
			failing = true
		case err == nil:
			failing = false
		}
		l.v.Store(int64(lag))
		if lag > 0 {
			t.Reset(interval)
		} else {
			t.Reset(idle)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
