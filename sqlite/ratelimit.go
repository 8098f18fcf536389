package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.RateStore = (*DB)(nil)

// Count implements feed.RateStore with one row per key (table
// rate_counts): an upsert that restarts the window when the row's has
// ended. A peek (add 0) is a read on the Read pool; a refund (add < 0) an
// update of a live window only. Each counting call also
// sweeps a few rows of ended windows.
func (db *DB) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	if add == 0 {
		var n int
		var ends int64
		err := db.readRow(ctx, `SELECT n, window_end FROM rate_counts WHERE key = ? AND window_end > ?`, key, ms(now)).Scan(&n, &ends)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, now.Add(window), nil
		}
		return n, time.UnixMilli(ends), err
	}
	var n int
	var ends int64
	if add < 0 {
		err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return tx.QueryRowContext(ctx, `UPDATE rate_counts SET n = max(n + ?, 0) WHERE key = ? AND window_end > ? RETURNING n, window_end`,
				add, key, ms(now)).Scan(&n, &ends)
		})
		if errors.Is(err, sql.ErrNoRows) {
			return 0, now.Add(window), nil
		}
		return n, time.UnixMilli(ends), err
	}
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rate_counts WHERE key IN (SELECT key FROM rate_counts WHERE window_end <= ? AND key <> ? LIMIT 100)`, ms(now), key); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO rate_counts (key, window_end, n) VALUES (?1, ?2, ?3)
			ON CONFLICT (key) DO UPDATE SET
				n = CASE WHEN rate_counts.window_end > ?4 THEN rate_counts.n + excluded.n ELSE excluded.n END,
				window_end = CASE WHEN rate_counts.window_end > ?4 THEN rate_counts.window_end ELSE excluded.window_end END
			RETURNING n, window_end`, key, ms(now.Add(window)), add, ms(now)).Scan(&n, &ends)
	})
	return n, time.UnixMilli(ends), err
}
