package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.MediaStore = (*DB)(nil)

const blobCols = `b.id, b.object_key, b.content_type, b.width, b.height, b.bytes, b.blurhash`

const mediaCols = `m.id, m.user_id, m.name, m.alt, COALESCE(m.post_id, 0), m.position, m.created_at, ` + blobCols

func scanBlob(s scanner) (*feed.Blob, error) {
	var b feed.Blob
	err := s.Scan(&b.ID, &b.Key, &b.ContentType, &b.Width, &b.Height, &b.Bytes, &b.Blurhash)
	return &b, err
}

func scanMedia(s scanner) (*feed.Media, error) {
	var m feed.Media
	var created int64
	b := &m.Blob
	if err := s.Scan(&m.ID, &m.UserID, &m.Name, &m.Alt, &m.PostID, &m.Position, &created,
		&b.ID, &b.Key, &b.ContentType, &b.Width, &b.Height, &b.Bytes, &b.Blurhash); err != nil {
		return nil, err
	}
	m.CreatedAt = time.UnixMilli(created)
	return &m, nil
}

// SourceBlob implements feed.MediaStore.
func (db *DB) SourceBlob(ctx context.Context, sourceHash string) (*feed.Blob, error) {
	b, err := scanBlob(db.readRow(ctx, `SELECT `+blobCols+` FROM media_blobs b WHERE b.source_hash = ? AND b.ready = 1 LIMIT 1`, sourceHash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("image")
	}
	return b, err
}

// BeginBlob implements feed.MediaStore.
func (db *DB) BeginBlob(ctx context.Context, b *feed.Blob, sourceHash string, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO media_blobs (object_key, source_hash, content_type, width, height, bytes, blurhash, ready, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?) RETURNING id`,
			b.Key, sourceHash, b.ContentType, b.Width, b.Height, b.Bytes, b.Blurhash, ms(now)).Scan(&b.ID)
	})
}

// DropBlob implements feed.MediaStore.
func (db *DB) DropBlob(ctx context.Context, id int64) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return dropBlobs(ctx, tx, []int64{id})
	})
}

// AddMedia implements feed.MediaStore.
func (db *DB) AddMedia(ctx context.Context, m *feed.Media) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE media_blobs SET ready = 1 WHERE id = ?`, m.Blob.ID)
		if err != nil {
			return err
		} else if n, _ := res.RowsAffected(); n == 0 {
			return feed.ErrNotFound("image")
		}
		var post any
		if m.PostID > 0 {
			post = m.PostID
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO media (user_id, blob_id, name, alt, post_id, position, created_at, unused_since)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) ON CONFLICT (name) DO NOTHING RETURNING id`,
			m.UserID, m.Blob.ID, m.Name, m.Alt, post, m.Position, ms(m.CreatedAt)).Scan(&m.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return feed.Errorf(feed.ECONFLICT, "an image named %s exists", m.Name)
		}
		return err
	})
}

// Media implements feed.MediaStore.
func (db *DB) Media(ctx context.Context, ids []int64) (map[int64]*feed.Media, error) {
	out := make(map[int64]*feed.Media, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id
		WHERE m.id IN (SELECT value FROM json_each(?))`, idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMedia(rows)
		if err != nil {
			return nil, err
		}
		out[m.ID] = m
	}
	return out, rows.Err()
}

// MediaNamed implements feed.MediaStore.
func (db *DB) MediaNamed(ctx context.Context, name string) (*feed.Media, error) {
	m, err := scanMedia(db.readRow(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id WHERE m.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := db.read(ctx, `SELECT `+mediaCols+` FROM media m JOIN media_blobs b ON b.id = m.blob_id
		WHERE m.post_id IN (SELECT value FROM json_each(?)) ORDER BY m.post_id, m.position`, idList(postIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMedia(rows)
		if err != nil {
			return nil, err
		}
		out[m.PostID] = append(out[m.PostID], *m)
	}
	return out, rows.Err()
}

// SetMediaAlt implements feed.MediaStore.
func (db *DB) SetMediaAlt(ctx context.Context, id, userID int64, alt string) error {
	res, err := db.exec(ctx, `UPDATE media SET alt = ? WHERE id = ? AND user_id = ?`, alt, id, userID)
	if err != nil {
		return err
	} else if n, _ := res.RowsAffected(); n == 0 {
		return feed.ErrNotFound("media")
	}
	return nil
}

// DeleteUnusedMedia implements feed.MediaStore.
func (db *DB) DeleteUnusedMedia(ctx context.Context, id, userID int64) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var owner, post int64
		err := tx.QueryRowContext(ctx, `SELECT user_id, COALESCE(post_id, 0) FROM media WHERE id = ?`, id).Scan(&owner, &post)
		switch {
		case errors.Is(err, sql.ErrNoRows):
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
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := scanIDs(tx.QueryContext(ctx, `SELECT id FROM media WHERE user_id = ? LIMIT ?`, userID, limit))
		if err != nil {
			return err
		}
		n = len(ids)
		return dropMedia(ctx, tx, ids)
	})
	return n, err
}

// ExpireMedia implements feed.MediaStore on the media_unused and
// media_blobs_pending indexes.
func (db *DB) ExpireMedia(ctx context.Context, unusedBefore, abandonedBefore time.Time, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := scanIDs(tx.QueryContext(ctx, `SELECT id FROM media WHERE post_id IS NULL AND unused_since < ?
			ORDER BY unused_since LIMIT ?`, ms(unusedBefore), limit))
		if err != nil {
			return err
		}
		if err := dropMedia(ctx, tx, ids); err != nil {
			return err
		}
		blobs, err := scanIDs(tx.QueryContext(ctx, `SELECT id FROM media_blobs WHERE ready = 0 AND created_at < ?
			ORDER BY created_at LIMIT ?`, ms(abandonedBefore), limit))
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
	rows, err := db.read(ctx, `SELECT object_key FROM media_trash LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// ForgetTrash implements feed.MediaStore.
func (db *DB) ForgetTrash(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := db.exec(ctx, `DELETE FROM media_trash WHERE object_key IN (SELECT value FROM json_each(?))`, jsonString(keys))
	return err
}

// dropMedia deletes the media ids and then the blobs none uses any more,
// in tx.
func dropMedia(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	blobs, err := scanIDs(tx.QueryContext(ctx, `SELECT DISTINCT blob_id FROM media WHERE id IN (SELECT value FROM json_each(?))`, idList(ids)))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM media WHERE id IN (SELECT value FROM json_each(?))`, idList(ids)); err != nil {
		return err
	}
	return dropBlobs(ctx, tx, blobs)
}

// dropBlobs deletes the blobs among ids that no media uses, their
// objects to the trash, in tx.
func dropBlobs(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `DELETE FROM media_blobs WHERE id IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM media m WHERE m.blob_id = media_blobs.id)
		RETURNING object_key, content_type`, idList(ids))
	if err != nil {
		return err
	}
	var keys []string
	for rows.Next() {
		var b feed.Blob
		if err := rows.Scan(&b.Key, &b.ContentType); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, b.Objects()...)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO media_trash (object_key) SELECT value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, jsonString(keys))
	return err
}

// linkMedia makes post postID of userID show the media ids in order, in
// tx: ECONFLICT when one is not userID's or a post shows it.
func linkMedia(ctx context.Context, tx *sql.Tx, postID, userID int64, ids []int64) error {
	for i, id := range ids {
		res, err := tx.ExecContext(ctx, `UPDATE media SET post_id = ?, position = ? WHERE id = ? AND user_id = ? AND post_id IS NULL`, postID, i, id, userID)
		if err != nil {
			return err
		} else if n, _ := res.RowsAffected(); n == 0 {
			return feed.Errorf(feed.ECONFLICT, "image %d is not one of your uploads, or another post shows it", id)
		}
	}
	return nil
}

// unlinkMedia releases the media of post postID, deleted at now, in tx:
// the sweep deletes them --media-orphan-ttl later.
func unlinkMedia(ctx context.Context, tx *sql.Tx, postID int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE media SET post_id = NULL, unused_since = ? WHERE post_id = ?`, ms(now), postID)
	return err
}
