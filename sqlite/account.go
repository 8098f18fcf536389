package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// A user's data by kind: export and erasure (feed.AccountStore; the kinds
// are feed.DataKinds).

var _ feed.AccountStore = (*DB)(nil)

// exportQuery reads a page of one kind: ?1 the user, ?2 the key after
// which the page starts, ?3 the limit. A keyed query's first column is the
// key; an unkeyed one reads everything at once (kinds that are few).
type exportQuery struct {
	sql   string
	names []string // the items' fields, one per column
	keyed bool
}

var exportQueries = map[string]exportQuery{
	"identities": {sql: `SELECT issuer, subject, created_at FROM identities WHERE user_id = ?1`,
		names: []string{"issuer", "subject", "created_at"}},
	"profile": {sql: `SELECT id, phone, nick_name, icon, city, introduce, fans, followee, created_at, active_at FROM users WHERE id = ?1`,
		names: []string{"id", "phone", "nick_name", "icon", "city", "introduce", "followers", "following", "created_at", "active_at"}},
	"posts": {sql: `SELECT id, title, content, images, shop_id, liked, comments, comment_policy, foreign_id, created_at, updated_at
			FROM posts WHERE user_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
		names: []string{"id", "title", "content", "images", "shop_id", "likes", "comments", "comment_policy", "foreign_id", "created_at", "updated_at"}, keyed: true},
	"comments": {sql: `SELECT id, post_id, parent_id, answer_id, content, liked, created_at, updated_at
			FROM comments WHERE user_id = ?1 AND deleted = 0 AND id > ?2 ORDER BY id LIMIT ?3`,
		names: []string{"id", "post_id", "parent_id", "answer_id", "content", "likes", "created_at", "updated_at"}, keyed: true},
	"likes": {sql: `SELECT id, post_id, created_at FROM likes WHERE user_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
		names: []string{"id", "post_id", "created_at"}, keyed: true},
	"comment_likes": {sql: `SELECT comment_id, created_at FROM comment_likes WHERE user_id = ?1 AND comment_id > ?2 ORDER BY comment_id LIMIT ?3`,
		names: []string{"comment_id", "created_at"}, keyed: true},
	"following": {sql: `SELECT followee_id, created_at FROM follows WHERE follower_id = ?1 AND followee_id > ?2 ORDER BY followee_id LIMIT ?3`,
		names: []string{"user_id", "created_at"}, keyed: true},
	"followers": {sql: `SELECT follower_id, created_at FROM follows WHERE followee_id = ?1 AND follower_id > ?2 ORDER BY follower_id LIMIT ?3`,
		names: []string{"user_id", "created_at"}, keyed: true},
	"mutes": {sql: `SELECT muted_id, created_at FROM mutes WHERE user_id = ?1 AND muted_id > ?2 ORDER BY muted_id LIMIT ?3`,
		names: []string{"user_id", "created_at"}, keyed: true},
	"blocks": {sql: `SELECT blocked_id, created_at FROM blocks WHERE user_id = ?1 AND blocked_id > ?2 ORDER BY blocked_id LIMIT ?3`,
		names: []string{"user_id", "created_at"}, keyed: true},
	"muted_words": {sql: `SELECT word, created_at FROM muted_words WHERE user_id = ?1 ORDER BY word`,
		names: []string{"word", "created_at"}},
	"reports": {sql: `SELECT 'post', post_id, reason, created_at FROM reports WHERE reporter_id = ?1
			UNION ALL SELECT 'comment', comment_id, reason, created_at FROM comment_reports WHERE reporter_id = ?1`,
		names: []string{"target", "target_id", "reason", "created_at"}},
	"reposts": {sql: `SELECT id, post_id, created_at FROM reposts WHERE user_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
		names: []string{"id", "post_id", "created_at"}, keyed: true},
	"markers": {sql: `SELECT timeline, last_read_id, version, updated_at FROM markers WHERE user_id = ?1 ORDER BY timeline`,
		names: []string{"timeline", "last_read_id", "version", "updated_at"}},
	"notifications": {sql: `SELECT id, kind, target_id, count, action, first_at, latest_at
			FROM notify_groups WHERE user_id = ?1 AND count > 0 AND id > ?2 ORDER BY id LIMIT ?3`,
		names: []string{"id", "kind", "target_id", "count", "action", "first_at", "latest_at"}, keyed: true},
}

// ExportPage implements feed.AccountStore.
func (db *DB) ExportPage(ctx context.Context, kind string, userID, after int64, limit int) ([]feed.ExportItem, int64, error) {
	q, ok := exportQueries[kind]
	if !ok {
		return nil, 0, fmt.Errorf("sqlite: no export of %q", kind)
	}
	args := []any{userID}
	if q.keyed {
		args = append(args, after, limit)
	}
	rows, err := db.read(ctx, q.sql, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var items []feed.ExportItem
	var last int64
	for rows.Next() {
		vals := make([]any, len(q.names))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, 0, err
		}
		items = append(items, exportItem(q.names, vals))
		if q.keyed {
			last, _ = vals[0].(int64)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if !q.keyed || len(items) < limit {
		last = 0
	}
	return items, last, nil
}

// exportItem makes a row an item: times (the *_at columns, in ms) as
// time.Time, 0 as null; text as strings.
func exportItem(names []string, vals []any) feed.ExportItem {
	it := make(feed.ExportItem, len(names))
	for i, n := range names {
		v := vals[i]
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		if ms, ok := v.(int64); ok && strings.HasSuffix(n, "_at") {
			if ms == 0 {
				v = nil
			} else {
				v = time.UnixMilli(ms).UTC()
			}
		}
		it[n] = v
	}
	return it
}

// ErasePage implements feed.AccountStore.
func (db *DB) ErasePage(ctx context.Context, kind string, userID int64, limit int, now time.Time) (int, bool, error) {
	if kind == "comments" {
		return db.eraseComments(ctx, userID, limit, now)
	}
	n := 0
	count := func(res sql.Result, err error) error {
		if err == nil {
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return err
	}
	// moved removes rows with a RETURNING delete, then moves a counter of
	// each id it returned by -1.
	moved := func(ctx context.Context, tx *sql.Tx, del, update string, args ...any) error {
		ids, err := scanIDs(tx.QueryContext(ctx, del, args...))
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, update, id); err != nil {
				return err
			}
		}
		n += len(ids)
		return nil
	}
	batched := false // the kind removes at most limit rows a call
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		switch kind {
		case "sessions":
			// The phone signs in nobody any more: its code goes, and a
			// login with it makes a new user.
			if _, err := tx.ExecContext(ctx, `DELETE FROM login_codes WHERE phone = (SELECT phone FROM users WHERE id = ?)`, userID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE users SET phone = NULL, revoked_at = ? WHERE id = ?`, ms(now), userID); err != nil {
				return err
			}
			return count(tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID))
		case "identities":
			return count(tx.ExecContext(ctx, `DELETE FROM identities WHERE user_id = ?`, userID))
		case "profile":
			return count(tx.ExecContext(ctx, `DELETE FROM users WHERE id = ?`, userID))
		case "likes":
			batched = true
			return moved(ctx, tx, `DELETE FROM likes WHERE id IN (SELECT id FROM likes WHERE user_id = ?1 LIMIT ?2) RETURNING post_id`,
				`UPDATE posts SET liked = liked - 1 WHERE id = ?`, userID, limit)
		case "comment_likes":
			batched = true
			return moved(ctx, tx, `DELETE FROM comment_likes WHERE user_id = ?1
				AND comment_id IN (SELECT comment_id FROM comment_likes WHERE user_id = ?1 LIMIT ?2) RETURNING comment_id`,
				`UPDATE comments SET liked = liked - 1 WHERE id = ?`, userID, limit)
		case "following":
			batched = true
			return moved(ctx, tx, `DELETE FROM follows WHERE follower_id = ?1
				AND followee_id IN (SELECT followee_id FROM follows WHERE follower_id = ?1 LIMIT ?2) RETURNING followee_id`,
				`UPDATE users SET fans = fans - 1 WHERE id = ?`, userID, limit)
		case "followers":
			batched = true
			return moved(ctx, tx, `DELETE FROM follows WHERE followee_id = ?1
				AND follower_id IN (SELECT follower_id FROM follows WHERE followee_id = ?1 LIMIT ?2) RETURNING follower_id`,
				`UPDATE users SET followee = followee - 1 WHERE id = ?`, userID, limit)
		case "mutes":
			return count(tx.ExecContext(ctx, `DELETE FROM mutes WHERE user_id = ?1 OR muted_id = ?1`, userID))
		case "blocks":
			return count(tx.ExecContext(ctx, `DELETE FROM blocks WHERE user_id = ?1 OR blocked_id = ?1`, userID))
		case "muted_words":
			return count(tx.ExecContext(ctx, `DELETE FROM muted_words WHERE user_id = ?`, userID))
		case "reports":
			if err := count(tx.ExecContext(ctx, `DELETE FROM reports WHERE reporter_id = ?`, userID)); err != nil {
				return err
			}
			return count(tx.ExecContext(ctx, `DELETE FROM comment_reports WHERE reporter_id = ?`, userID))
		case "rank_snapshots":
			return count(tx.ExecContext(ctx, `DELETE FROM rank_snapshots WHERE user_id = ?`, userID))
		case "markers":
			return count(tx.ExecContext(ctx, `DELETE FROM markers WHERE user_id = ?`, userID))
		case "push_subscriptions":
			return count(tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE user_id = ?`, userID))
		case "notifications":
			if err := count(tx.ExecContext(ctx, `DELETE FROM notify_groups WHERE user_id = ?`, userID)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM notify_read WHERE user_id = ?`, userID); err != nil {
				return err
			}
			return db.eraseActor(ctx, tx, userID)
		}
		return fmt.Errorf("sqlite: no erasure of %q", kind)
	})
	return n, batched && n >= limit, err
}

// eraseActor takes actorID out of every group of others (notify_actors,
// without an index by actor: one scan), moving the counts of the groups
// it was counted in.
func (db *DB) eraseActor(ctx context.Context, tx *sql.Tx, actorID int64) error {
	rows, err := tx.QueryContext(ctx, `DELETE FROM notify_actors WHERE actor_id = ? RETURNING group_id, retracted`, actorID)
	if err != nil {
		return err
	}
	var counted []int64
	for rows.Next() {
		var gid int64
		var retracted bool
		if err := rows.Scan(&gid, &retracted); err != nil {
			rows.Close()
			return err
		}
		if !retracted {
			counted = append(counted, gid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, gid := range counted {
		var owner int64
		err := tx.QueryRowContext(ctx, `UPDATE notify_groups SET count = count - 1 WHERE id = ? AND dismissed = 0 RETURNING user_id`, gid).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return err
		}
		db.notice(tx, owner, gid)
	}
	return nil
}

// eraseComments deletes a batch of userID's comments as their author's
// deletes would (counts, threads, notifications), each in its own
// transaction (DeleteComment); a comment whose post is gone goes with its
// rows alone. Placeholders kept for others' replies lose their author.
func (db *DB) eraseComments(ctx context.Context, userID int64, limit int, now time.Time) (int, bool, error) {
	ids, err := scanIDs(db.read(ctx, `SELECT id FROM comments WHERE user_id = ? AND deleted = 0 LIMIT ?`, userID, limit))
	if err != nil {
		return 0, false, err
	}
	for _, id := range ids {
		_, err := db.DeleteComment(ctx, id, now)
		if feed.ErrorCode(err) == feed.ENOTFOUND {
			err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error { return deleteCommentRows(ctx, tx, idList([]int64{id})) })
		}
		if err != nil {
			return 0, false, err
		}
	}
	if len(ids) < limit {
		if _, err := db.exec(ctx, `UPDATE comments SET user_id = 0 WHERE user_id = ? AND deleted = 1`, userID); err != nil {
			return 0, false, err
		}
	}
	return len(ids), len(ids) == limit, nil
}

// ErasePost implements feed.AccountStore.
func (db *DB) ErasePost(ctx context.Context, postID int64) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var author int64
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM posts WHERE id = ?`, postID).Scan(&author)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM likes WHERE post_id = ?`,
			`DELETE FROM reports WHERE post_id = ?`,
			`DELETE FROM hidden_posts WHERE post_id = ?`,
			`DELETE FROM posts WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, postID); err != nil {
				return err
			}
		}
		return db.notifyForgetPost(ctx, tx, author, postID)
	})
}

const erasureCols = `id, user_id, step, cursor, counts, created_at, updated_at, finished_at`

func scanErasure(s scanner) (*feed.Erasure, error) {
	var e feed.Erasure
	var counts string
	var created, updated, finished int64
	if err := s.Scan(&e.ID, &e.UserID, &e.Step, &e.Cursor, &counts, &created, &updated, &finished); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(counts), &e.Counts); err != nil {
		return nil, err
	}
	e.CreatedAt, e.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	if finished > 0 {
		e.FinishedAt = time.UnixMilli(finished)
	}
	return &e, nil
}

// StartErasure implements feed.AccountStore.
func (db *DB) StartErasure(ctx context.Context, userID int64, now time.Time) (*feed.Erasure, error) {
	var e *feed.Erasure
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		e, err = scanErasure(tx.QueryRowContext(ctx, `SELECT `+erasureCols+` FROM erasures WHERE user_id = ? AND finished_at = 0`, userID))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := userExists(ctx, tx, userID); err != nil {
			return err
		}
		e, err = scanErasure(tx.QueryRowContext(ctx, `INSERT INTO erasures (user_id, created_at, updated_at) VALUES (?1, ?2, ?2) RETURNING `+erasureCols,
			userID, ms(now)))
		if err != nil {
			return err
		}
		return db.enqueue(ctx, tx, feed.EraseJob{ErasureID: e.ID})
	})
	return e, err
}

// Erasure implements feed.AccountStore.
func (db *DB) Erasure(ctx context.Context, id int64) (*feed.Erasure, error) {
	e, err := scanErasure(db.readRow(ctx, `SELECT `+erasureCols+` FROM erasures WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("erasure")
	}
	return e, err
}

// SaveErasure implements feed.AccountStore.
func (db *DB) SaveErasure(ctx context.Context, e *feed.Erasure, now time.Time) error {
	var finished int64
	if !e.FinishedAt.IsZero() {
		finished = ms(e.FinishedAt)
	}
	_, err := db.exec(ctx, `UPDATE erasures SET step = ?, cursor = ?, counts = ?, updated_at = ?, finished_at = ? WHERE id = ?`,
		e.Step, e.Cursor, jsonString(e.Counts), ms(now), finished, e.ID)
	return err
}
