package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.MarkerStore = (*DB)(nil)

// Markers implements feed.MarkerStore.
func (db *DB) Markers(ctx context.Context, userID int64) (map[string]feed.Marker, error) {
	rows, err := db.Pool.Query(ctx, `SELECT timeline, last_read_id, score, version, updated_at FROM markers WHERE user_id = $1`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]feed.Marker{}
	for rows.Next() {
		var m feed.Marker
		var updated int64
		if err := rows.Scan(&m.Timeline, &m.Position.PostID, &m.Position.Score, &m.Version, &updated); err != nil {
			return nil, err
		}
		m.LastReadID, m.UpdatedAt = m.Position.PostID, time.UnixMilli(updated)
		out[m.Timeline] = m
	}
	return out, rows.Err()
}

// PutMarkers implements feed.MarkerStore: each put is an insert (Prev 0)
// or an update guarded by the version, and one that changes no row
// rolls the transaction back.
func (db *DB) PutMarkers(ctx context.Context, userID int64, puts []feed.MarkerPut) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		for _, p := range puts {
			m := p.M
			var sql string
			args := []any{userID, m.Timeline, m.LastReadID, m.Position.Score, m.Version, ms(m.UpdatedAt)}
			if p.Prev == 0 {
				sql = `INSERT INTO markers (user_id, timeline, last_read_id, score, version, updated_at)
					VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`
			} else {
				sql = `UPDATE markers SET last_read_id = $3, score = $4, version = $5, updated_at = $6
					WHERE user_id = $1 AND timeline = $2 AND version = $7`
				args = append(args, p.Prev)
			}
			tag, err := tx.Exec(ctx, sql, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return feed.Errorf(feed.ECONFLICT, "the %s marker changed meanwhile: read it again", m.Timeline)
			}
			if m.Timeline == feed.MarkerNotifications {
				if _, err := tx.Exec(ctx, `INSERT INTO notify_read (user_id, read_at) VALUES ($1, $2)
					ON CONFLICT (user_id) DO UPDATE SET read_at = excluded.read_at`, userID, m.Position.Score); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
