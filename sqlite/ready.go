package sqlite

import (
	"context"
	"time"
)

// Ready reports whether the database takes a write: it rewrites one row
// (table ready_probe) through the writer. A full disk or a read-only file
// fails it while reads still work.
func (db *DB) Ready(ctx context.Context) error {
	_, err := db.exec(ctx, `INSERT INTO ready_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`, time.Now().UnixMilli())
	return err
}
