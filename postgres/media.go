package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	feed "github.com/feedd/feedd"
)

var _ feed.MediaStore = (*DB)(nil)

const blobCols = `b.id, b.object_key, b.content_type, b.width, b.height, b.bytes, b.blurhash`

const mediaCols = `m.id, m.user_id, m.name, m.alt, COALESCE(m.post_id, 0), m.position, m.created_at, ` + blobCols

func scanBlob(row pgx.Row) (*feed.Blob, error) {
	var b feed.Blob
	err := row.Scan(&b.ID, &b.Key, &b.ContentType, &b.Width, &b.Height, &b.Bytes, &b.Blurhash)
	return &b, err
}

func scanMedia(row pgx.Row) (*feed.Media, error) {
	var m feed.Media
	var created int64
	var pos int16
	b := &m.Blob
	if err := row.Scan(&m.ID, &m.UserID, &m.Name, &m.Alt, &m.PostID, &pos, &created,
		&b.ID, &b.Key, &b.ContentType, &b.Width, &b.Height, &b.Bytes, &b.Blurhash); err != nil {
		return nil, err
	}
	m.Position, m.CreatedAt = int(pos), time.UnixMilli(created)
	return &m, nil
}

func collectMedia(rows pgx.Rows, err error) ([]*feed.Media, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*feed.Media, error) { return scanMedia(row) })
}

// SourceBlob implements feed.MediaStore.
func (db *DB) SourceBlob(ctx context.Context, sourceHash string) (*feed.Blob, error) {
	b, err := scanBlob(db.Pool.QueryRow(ctx, `SELECT `+blobCols+` FROM media_blobs b WHERE b.source_hash = $1 AND b.ready LIMIT 1`, sourceHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, feed.ErrNotFound("image")
	}
	return b, err
}

// BeginBlob implements feed.MediaStore.
func (db *DB) BeginBlob(ctx context.Context, b *feed.Blob, sourceHash string, now time.Time) error {
	return db.Pool.QueryRow(ctx, `INSERT INTO media_blobs (object_key, source_hash, content_type, width, height, bytes, blurhash, ready, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, false, $8) RETURNING id`,
		b.Key, sourceHash, b.ContentType, b.Width, b.Height, b.Bytes, b.Blurhash, ms(now)).Scan(&b.ID)
}

// DropBlob implements feed.MediaStore.
func (db *DB) DropBlob(ctx context.Context, id int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error { return dropBlobs(ctx, tx, []int64{id}) })
}

// AddMedia implements feed.MediaStore. The insert's foreign key locks the
// blob's row against a concurrent removal (dropBlobs).
func (db *DB) AddMedia(ctx context.Context, m *feed.Media) error {
	err := db.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE media_blobs SET ready = true WHERE id = $1`, m.Blob.ID)
		if err != nil {
			return err
		} else if tag.RowsAffected() == 0 {
			return feed.ErrNotFound("image")
		}
		var post *int64
		if m.PostID > 0 {
			post = &m.PostID
		}
		err = tx.QueryRow(ctx, `INSERT INTO media (user_id, blob_id, name, alt, post_id, position, created_at, unused_since)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (name) DO NOTHING RETURNING id`,
			m.UserID, m.Blob.ID, m.Name, m.Alt, post, int16(m.Position), ms(m.CreatedAt)).Scan(&m.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			return feed.Errorf(feed.ECONFLICT, "an image named %s exists", m.Name)
		}
		return err
	})
	if isFKViolation(err) {
		return feed.ErrNotFound("image") // removed between the UPDATE's snapshot and the insert
	}
	return err
}

func isFKViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// Media implements feed.MediaStore.
func (db *DB) Media(ctx context.Context, ids []int64) (map[int64]*feed.Media, error) {
	out := make(map[int64]*feed.Media, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	ms, err := collectMedia(db.Pool.Query(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id WHERE m.id = ANY($1)`, ids))
	for _, m := range ms {
		out[m.ID] = m
	}
	return out, err
}

// MediaNamed implements feed.MediaStore.
func (db *DB) MediaNamed(ctx context.Context, name string) (*feed.Media, error) {
	m, err := scanMedia(db.Pool.QueryRow(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id WHERE m.name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, feed.ErrNotFound("image")
	}
	return m, err
}

// MediaOfPosts implements feed.MediaStore on the media_post index.
func (db *DB) MediaOfPosts(ctx context.Context, postIDs []int64) (map[int64][]feed.Media, error) {
	out := map[int64][]feed.Media{}
	if len(postIDs) == 0 {
		return out, nil
	}
	ms, err := collectMedia(db.Pool.Query(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id
		WHERE m.post_id = ANY($1) ORDER BY m.post_id, m.position`, postIDs))
	for _, m := range ms {
		out[m.PostID] = append(out[m.PostID], *m)
	}
	return out, err
}

// SetMediaAlt implements feed.MediaStore.
func (db *DB) SetMediaAlt(ctx context.Context, id, userID int64, alt string) error {
	tag, err := db.Pool.Exec(ctx, `UPDATE media SET alt = $1 WHERE id = $2 AND user_id = $3`, alt, id, userID)
	if err != nil {
		return err
	} else if tag.RowsAffected() == 0 {
		return feed.ErrNotFound("media")
	}
	return nil
}

// DeleteUnusedMedia implements feed.MediaStore. The row is locked, so a
// post linking it at the same moment either links it first (ECONFLICT
// here) or finds it gone.
func (db *DB) DeleteUnusedMedia(ctx context.Context, id, userID int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var owner, post int64
		err := tx.QueryRow(ctx, `SELECT user_id, COALESCE(post_id, 0) FROM media WHERE id = $1 FOR UPDATE`, id).Scan(&owner, &post)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return feed.ErrNotFound("image")
		case err != nil:
			return err
		case owner != userID:
			return feed.Errorf(feed.EFORBIDDEN, "only its uploader may delete an image")
		case post != 0:
			return feed.Errorf(feed.ECONFLICT, "a post shows this image: delete the post first")
		}
		return dropMedia(ctx, tx, []int64{id})
	})
}

// DeleteUserMedia implements feed.MediaStore.
func (db *DB) DeleteUserMedia(ctx context.Context, userID int64, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		ids, err := scanIDs(tx.Query(ctx, `SELECT id FROM media WHERE user_id = $1 LIMIT $2 FOR UPDATE`, userID, limit))
		if err != nil {
			return err
		}
		n = len(ids)
		return dropMedia(ctx, tx, ids)
	})
	return n, err
}

// ExpireMedia implements feed.MediaStore on the media_unused and
// media_blobs_pending indexes. The media are locked and checked again, so
// one that a post links meanwhile stays.
func (db *DB) ExpireMedia(ctx context.Context, unusedBefore, abandonedBefore time.Time, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		ids, err := scanIDs(tx.Query(ctx, `SELECT id FROM media WHERE post_id IS NULL AND unused_since < $1
			ORDER BY unused_since LIMIT $2 FOR UPDATE SKIP LOCKED`, ms(unusedBefore), limit))
		if err != nil {
			return err
		}
		if err := dropMedia(ctx, tx, ids); err != nil {
			return err
		}
		blobs, err := scanIDs(tx.Query(ctx, `SELECT id FROM media_blobs WHERE NOT ready AND created_at < $1
			ORDER BY created_at LIMIT $2`, ms(abandonedBefore), limit))
		if err != nil {
			return err
		}
		n = len(ids) + len(blobs)
		return dropBlobs(ctx, tx, blobs)
	})
	return n, err
}

// Trash implements feed.MediaStore.
func (db *DB) Trash(ctx context.Context, limit int) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT object_key FROM media_trash LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ForgetTrash implements feed.MediaStore.
func (db *DB) ForgetTrash(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := db.Pool.Exec(ctx, `DELETE FROM media_trash WHERE object_key = ANY($1)`, keys)
	return err
}

// dropMedia deletes the media ids and then the blobs none uses any more,
// in tx.
func dropMedia(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	blobs, err := scanIDs(tx.Query(ctx, `DELETE FROM media WHERE id = ANY($1) RETURNING blob_id`, ids))
	if err != nil {
		return err
	}
	return dropBlobs(ctx, tx, blobs)
}

// dropBlobs deletes the blobs among ids that no media uses, their objects
// to the trash, in tx. An upload that starts using one of them at the same
// moment makes the DELETE fail on media's foreign key (23503): it runs
// again, in a savepoint, and its new snapshot sees that media.
func dropBlobs(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	var err error
	for range 3 {
		var sp pgx.Tx
		if sp, err = tx.Begin(ctx); err != nil {
			return err
		}
		var keys []string
		if keys, err = deleteBlobs(ctx, sp, ids); err == nil {
			if len(keys) > 0 {
				_, err = sp.Exec(ctx, `INSERT INTO media_trash (object_key) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, keys)
			}
			if err == nil {
				return sp.Commit(ctx)
			}
		}
		sp.Rollback(ctx)
		if !isFKViolation(err) {
			return err
		}
	}
	return err
}

func deleteBlobs(ctx context.Context, tx pgx.Tx, ids []int64) ([]string, error) {
	rows, err := tx.Query(ctx, `DELETE FROM media_blobs b WHERE b.id = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM media m WHERE m.blob_id = b.id)
		RETURNING b.object_key, b.content_type`, ids)
	if err != nil {
		return nil, err
	}
	var keys []string
	var b feed.Blob
	_, err = pgx.ForEachRow(rows, []any{&b.Key, &b.ContentType}, func() error {
		keys = append(keys, b.Objects()...)
		return nil
	})
	return keys, err
}

// linkMedia makes post postID of userID show the media ids in order, in
// tx: ECONFLICT when one is not userID's or a post shows it.
func linkMedia(ctx context.Context, tx pgx.Tx, postID, userID int64, ids []int64) error {
	for i, id := range ids {
		tag, err := tx.Exec(ctx, `UPDATE media SET post_id = $1, position = $2 WHERE id = $3 AND user_id = $4 AND post_id IS NULL`, postID, int16(i), id, userID)
		if err != nil {
			return err
		} else if tag.RowsAffected() == 0 {
			return feed.Errorf(feed.ECONFLICT, "image %d is not one of your uploads, or another post shows it", id)
		}
	}
	return nil
}

// unlinkMedia releases the media of post postID, deleted at now, in tx:
// the sweep deletes them --media-orphan-ttl later.
func unlinkMedia(ctx context.Context, tx pgx.Tx, postID int64, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE media SET post_id = NULL, unused_since = $1 WHERE post_id = $2`, ms(now), postID)
	return err
}
