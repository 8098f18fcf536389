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
// rate_counts): an upsert that restarts the count when the row holds an
// older window. A peek (add 0) is a read on the Read pool. Each counting
// call also sweeps a few rows of past windows.
func (db *DB) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	ends := feed.WindowEnd(now, window)
	if add == 0 {
		var n int
		err := db.Read.QueryRowContext(ctx, `SELECT n FROM rate_counts WHERE key = ? AND window_end = ?`, key, ms(ends)).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, ends, nil
		}
		return n, ends, err
	}
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rate_counts WHERE key IN (SELECT key FROM rate_counts WHERE window_end <= ? LIMIT 100)`, ms(now)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO rate_counts (key, window_end, n) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET
				n = CASE WHEN rate_counts.window_end = excluded.window_end THEN rate_counts.n + excluded.n ELSE excluded.n END,
				window_end = excluded.window_end
			RETURNING n`, key, ms(ends), add).Scan(&n)
	})
	return n, ends, err
}
