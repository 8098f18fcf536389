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
// rate_counts): one upsert that restarts the window when the row's has
// ended, atomic under concurrent callers. A peek (add 0) is a read; a
// refund (add < 0) an update of a live window only. Each
// counting call also sweeps a few rows of ended windows, skipping rows
// another caller holds.
func (db *DB) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	var n int
	var ends int64
	if add == 0 {
		err := db.Pool.QueryRow(ctx, `SELECT n, window_end FROM rate_counts WHERE key = $1 AND window_end > $2`, key, ms(now)).Scan(&n, &ends)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, now.Add(window), nil
		}
		return n, time.UnixMilli(ends), err
	}
	if add < 0 {
		err := db.Pool.QueryRow(ctx, `UPDATE rate_counts SET n = GREATEST(n + $1, 0) WHERE key = $2 AND window_end > $3 RETURNING n, window_end`,
			add, key, ms(now)).Scan(&n, &ends)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, now.Add(window), nil
		}
		return n, time.UnixMilli(ends), err
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM rate_counts WHERE key IN
		(SELECT key FROM rate_counts WHERE window_end <= $1 AND key <> $2 LIMIT 100 FOR UPDATE SKIP LOCKED)`, ms(now), key); err != nil {
		return 0, time.Time{}, err
	}
	err := db.Pool.QueryRow(ctx, `INSERT INTO rate_counts (key, window_end, n) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET
			n = CASE WHEN rate_counts.window_end > $4 THEN rate_counts.n + excluded.n ELSE excluded.n END,
			window_end = CASE WHEN rate_counts.window_end > $4 THEN rate_counts.window_end ELSE excluded.window_end END
		RETURNING n, window_end`, key, ms(now.Add(window)), add, ms(now)).Scan(&n, &ends)
	return n, time.UnixMilli(ends), err
}
