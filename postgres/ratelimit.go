package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.RateStore = (*DB)(nil)

// Count implements feed.RateStore with one row per key (table
// rate_counts): one upsert that restarts the count when the row holds an
// older window, atomic under concurrent callers. A peek (add 0) is a read.
// Each counting call also sweeps a few rows of past windows, skipping rows
// another caller holds.
func (db *DB) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	ends := feed.WindowEnd(now, window)
	var n int
	if add == 0 {
		err := db.Pool.QueryRow(ctx, `SELECT n FROM rate_counts WHERE key = $1 AND window_end = $2`, key, ms(ends)).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, ends, nil
		}
		return n, ends, err
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM rate_counts WHERE key IN
		(SELECT key FROM rate_counts WHERE window_end <= $1 AND key <> $2 LIMIT 100 FOR UPDATE SKIP LOCKED)`, ms(now), key); err != nil {
		return 0, ends, err
	}
	err := db.Pool.QueryRow(ctx, `INSERT INTO rate_counts (key, window_end, n) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET
			n = CASE WHEN rate_counts.window_end = excluded.window_end THEN rate_counts.n + excluded.n ELSE excluded.n END,
			window_end = excluded.window_end
		RETURNING n`, key, ms(ends), add).Scan(&n)
	return n, ends, err
}
