package postgres

import (
	"context"
	"time"
)

// Ready reports whether the database takes a write: it rewrites one row
// (table ready_probe). A full disk, a read-only replica or a lost primary
// fails it.
func (db *DB) Ready(ctx context.Context) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO ready_probe (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at`, time.Now().UnixMilli())
	return err
}
