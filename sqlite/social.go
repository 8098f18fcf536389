package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

// ---- mutes and blocks

// SetMute implements feed.SocialStore.
func (db *DB) SetMute(ctx context.Context, userID, targetID int64, mute bool, now time.Time) error {
	if userID == targetID {
		return feed.Errorf(feed.EINVALID, "you cannot mute yourself")
	}
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := userExists(ctx, tx, targetID); err != nil {
			return err
		}
		var err error
		if mute {
			if err := db.notifyForget(ctx, tx, userID, targetID); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO mutes (user_id, muted_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, userID, targetID, ms(now))
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM mutes WHERE user_id = ? AND muted_id = ?`, userID, targetID)
		}
		return err
	})
}

// SetBlock implements feed.SocialStore. Blocking deletes the follows of the
// pair in both directions, moves the counters of each follow it deleted and
// enqueues one feed.FollowJob (Follow false) for it, all in one transaction.
func (db *DB) SetBlock(ctx context.Context, userID, targetID int64, block bool, now time.Time) (changed bool, err error) {
	if userID == targetID {
		return false, feed.Errorf(feed.EINVALID, "you cannot block yourself")
	}
	err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := userExists(ctx, tx, targetID); err != nil {
			return err
		}
		if !block {
			res, err := tx.ExecContext(ctx, `DELETE FROM blocks WHERE user_id = ? AND blocked_id = ?`, userID, targetID)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			changed = n > 0
			return nil
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO blocks (user_id, blocked_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, userID, targetID, ms(now))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		changed = n > 0
		if err := db.notifyBlock(ctx, tx, userID, targetID); err != nil {
			return err
		}
		// The blocked user's likes of the blocker's posts go, counts in step.
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET liked = liked - 1 WHERE user_id = ? AND id IN (SELECT post_id FROM likes WHERE user_id = ?)`, userID, targetID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM likes WHERE user_id = ? AND post_id IN (SELECT id FROM posts WHERE user_id = ?)`, targetID, userID); err != nil {
			return err
		}
		// And so do their reposts of the blocker's posts, each entry's
		// removal enqueued.
		jobs, err := db.unrepostAuthor(ctx, tx, targetID, userID)
		if err != nil {
			return err
		}
		for _, f := range [][2]int64{{userID, targetID}, {targetID, userID}} {
			res, err := tx.ExecContext(ctx, `DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, f[0], f[1])
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue
			}
			if err := addFollowCounts(ctx, tx, f[0], f[1], -1); err != nil {
				return err
			}
			jobs = append(jobs, feed.FollowJob{FollowerID: f[0], FolloweeID: f[1], Follow: false})
		}
		if len(jobs) == 0 {
			return nil
		}
		return db.enqueue(ctx, tx, jobs...)
	})
	return changed && err == nil, err
}

// Muted implements feed.SocialStore.
func (db *DB) Muted(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT muted_id FROM mutes WHERE user_id = ? AND muted_id > ?
		ORDER BY muted_id LIMIT ?`, userID, after, limit))
}

// Blocked implements feed.SocialStore.
func (db *DB) Blocked(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT blocked_id FROM blocks WHERE user_id = ? AND blocked_id > ?
		ORDER BY blocked_id LIMIT ?`, userID, after, limit))
}

// ---- follow lists

// Followers implements feed.SocialStore.
func (db *DB) Followers(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return db.FollowersAfter(ctx, userID, after, limit)
}

// Following implements feed.SocialStore.
func (db *DB) Following(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT followee_id FROM follows WHERE follower_id = ? AND followee_id > ?
		ORDER BY followee_id LIMIT ?`, userID, after, limit))
}

// ---- the feed's audience

// Visible implements feed.SocialStore: one statement, primary-key lookups
// per author.
func (db *DB) Visible(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool, len(authorIDs))
	if len(authorIDs) == 0 {
		return out, nil
	}
	ids, err := scanIDs(db.read(ctx, `SELECT DISTINCT a.value FROM json_each(?2) a
		WHERE (a.value = ?1 OR EXISTS (SELECT 1 FROM follows WHERE follower_id = ?1 AND followee_id = a.value))
		AND NOT EXISTS (SELECT 1 FROM mutes WHERE user_id = ?1 AND muted_id = a.value)`, viewerID, idList(authorIDs)))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// PullFollowees implements feed.SocialStore: the viewer's follows flagged
// pull (follows.pull, kept in step with the followee's mode by SetFollow and
// SetMode), from the partial index follows_pull that holds only them, so a
// viewer who follows nobody in pull mode costs one probe that finds nothing.
func (db *DB) PullFollowees(ctx context.Context, viewerID int64) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT followee_id FROM follows INDEXED BY follows_pull
		WHERE follower_id = ? AND pull <> 0 ORDER BY followee_id`, viewerID))
}

// SetMode implements feed.SocialStore. ENOTFOUND if authorID does not exist,
// EINVALID for a mode feed does not define. The flag of every follow of the
// author (follows.pull) is rewritten in the same transaction, so
// PullFollowees is exact at every commit; a change between push and a pull
// mode costs one write per follower (entering pull mode happens once per
// author, at --pull-threshold followers).
func (db *DB) SetMode(ctx context.Context, authorID int64, mode feed.Mode) error {
	if err := validMode(mode); err != nil {
		return err
	}
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET mode = ? WHERE id = ?`, int(mode), authorID)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return feed.ErrNotFound("user")
		}
		pull := 0
		if feed.Merged(mode) {
			pull = 1
		}
		_, err = tx.ExecContext(ctx, `UPDATE follows SET pull = ?1 WHERE followee_id = ?2 AND pull <> ?1`, pull, authorID)
		return err
	})
}

func validMode(m feed.Mode) error {
	switch m {
	case feed.PushMode, feed.PullMode, feed.LeavingPullMode:
		return nil
	}
	return feed.Errorf(feed.EINVALID, "unknown mode %d", int(m))
}

// Touch implements feed.SocialStore. A user active within interval costs one
// read on the read pool and no write; otherwise the stored time is read again
// and updated in one write transaction (SQLite has one writer, so concurrent
// touches are serialised there and exactly one of them sees the old time).
// ENOTFOUND if userID does not exist.
func (db *DB) Touch(ctx context.Context, userID int64, now time.Time, interval time.Duration) (time.Time, error) {
	stale := ms(now.Add(-interval))
	var prev int64
	err := db.readRow(ctx, `SELECT active_at FROM users WHERE id = ?`, userID).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, feed.ErrNotFound("user")
	} else if err != nil {
		return time.Time{}, err
	}
	if prev >= stale {
		return time.UnixMilli(prev), nil
	}
	err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT active_at FROM users WHERE id = ?`, userID).Scan(&prev); err != nil {
			return err
		}
		if prev >= stale {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET active_at = ? WHERE id = ?`, ms(now), userID)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(prev), nil
}

// ActiveFollowersAfter implements feed.SocialStore: FollowersAfter's scan of
// follows_followee, each follower checked by primary key.
func (db *DB) ActiveFollowersAfter(ctx context.Context, followeeID, after int64, limit int, since time.Time) ([]int64, error) {
	return db.queryIDList(ctx, `SELECT f.follower_id AS id FROM follows f JOIN users u ON u.id = f.follower_id
		WHERE f.followee_id = ? AND f.follower_id > ? AND u.active_at >= ?
		ORDER BY f.follower_id LIMIT ?`, followeeID, after, ms(since), limit)
}
