package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

// ---- mutes and blocks

// SetMute implements feed.SocialStore. It locks the pair's user rows
// first (lockPair), as SetBlock does: notifyAdd holds a share lock of the
// row of the user it tells, so a like or follow racing the mute either
// commits first (and its notification is taken out here) or waits and
// finds the mute.
func (db *DB) SetMute(ctx context.Context, userID, targetID int64, mute bool, now time.Time) error {
	if userID == targetID {
		return feed.Errorf(feed.EINVALID, "you cannot mute yourself")
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPair(ctx, tx, userID, targetID); err != nil {
			return err
		}
		var err error
		if mute {
			if err := db.notifyForget(ctx, tx, userID, targetID); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO mutes (user_id, muted_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, userID, targetID, ms(now))
		} else {
			_, err = tx.Exec(ctx, `DELETE FROM mutes WHERE user_id = $1 AND muted_id = $2`, userID, targetID)
		}
		return err
	})
}

// SetBlock implements feed.SocialStore. Blocking deletes the follows of the
// pair in both directions, moves the counters of each follow it deleted and
// enqueues one feed.FollowJob (Follow false) for it, all in one transaction.
// It locks the pair's user rows first, as SetFollow does, so a follow racing
// the block either commits first (and is deleted here) or waits and is
// refused, and concurrent blocks and unfollows never double count.
func (db *DB) SetBlock(ctx context.Context, userID, targetID int64, block bool, now time.Time) (changed bool, err error) {
	if userID == targetID {
		return false, feed.Errorf(feed.EINVALID, "you cannot block yourself")
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		changed = false // fn may run again (DB.tx)
		if err := lockPair(ctx, tx, userID, targetID); err != nil {
			return err
		}
		if !block {
			tag, err := tx.Exec(ctx, `DELETE FROM blocks WHERE user_id = $1 AND blocked_id = $2`, userID, targetID)
			changed = err == nil && tag.RowsAffected() > 0
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO blocks (user_id, blocked_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, userID, targetID, ms(now))
		if err != nil {
			return err
		}
		changed = tag.RowsAffected() > 0
		if err := db.notifyBlock(ctx, tx, userID, targetID); err != nil {
			return err
		}
		// The blocked user's likes of the blocker's posts go, counts in step.
		if _, err := tx.Exec(ctx, `UPDATE posts SET liked = liked - 1 WHERE user_id = $1 AND id IN (SELECT post_id FROM likes WHERE user_id = $2)`, userID, targetID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM likes WHERE user_id = $1 AND post_id IN (SELECT id FROM posts WHERE user_id = $2)`, targetID, userID); err != nil {
			return err
		}
		// And so do their reposts of the blocker's posts, each entry's
		// removal enqueued.
		jobs, err := db.unrepostAuthor(ctx, tx, targetID, userID)
		if err != nil {
			return err
		}
		for _, f := range [][2]int64{{userID, targetID}, {targetID, userID}} {
			tag, err := tx.Exec(ctx, `DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2`, f[0], f[1])
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
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
	return scanIDs(db.Pool.Query(ctx, `SELECT muted_id FROM mutes WHERE user_id = $1 AND muted_id > $2
		ORDER BY muted_id LIMIT $3`, userID, after, limit))
}

// Blocked implements feed.SocialStore.
func (db *DB) Blocked(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return scanIDs(db.Pool.Query(ctx, `SELECT blocked_id FROM blocks WHERE user_id = $1 AND blocked_id > $2
		ORDER BY blocked_id LIMIT $3`, userID, after, limit))
}

// ---- follow lists

// Followers implements feed.SocialStore.
func (db *DB) Followers(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return db.FollowersAfter(ctx, userID, after, limit)
}

// Following implements feed.SocialStore.
func (db *DB) Following(ctx context.Context, userID, after int64, limit int) ([]int64, error) {
	return scanIDs(db.Pool.Query(ctx, `SELECT followee_id FROM follows WHERE follower_id = $1 AND followee_id > $2
		ORDER BY followee_id LIMIT $3`, userID, after, limit))
}

// ---- the feed's audience

// Visible implements feed.SocialStore: one statement, primary-key lookups
// per author.
func (db *DB) Visible(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool, len(authorIDs))
	if len(authorIDs) == 0 {
		return out, nil
	}
	ids, err := scanIDs(db.Pool.Query(ctx, `SELECT DISTINCT a FROM unnest($2::bigint[]) AS t(a)
		WHERE (a = $1 OR EXISTS (SELECT 1 FROM follows WHERE follower_id = $1 AND followee_id = a))
		AND NOT EXISTS (SELECT 1 FROM mutes WHERE user_id = $1 AND muted_id = a)`, viewerID, authorIDs))
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
	return scanIDs(db.Pool.Query(ctx, `SELECT followee_id FROM follows
		WHERE follower_id = $1 AND pull ORDER BY followee_id`, viewerID))
}

// SetMode implements feed.SocialStore. ENOTFOUND if authorID does not exist,
// EINVALID for a mode feed does not define.
//
// The flag of every follow of the author (follows.pull) is rewritten in the
// same transaction, so PullFollowees is exact at every commit. The UPDATE of
// the author's row comes first and takes the lock SetFollow and SetBlock
// take (lockPair): a follow of the author either commits before it (and the
// second statement, with a snapshot of its own, sees the row) or waits and
// then reads the new mode. A change between push and a pull mode costs one
// write per follower (entering pull mode happens once per author, at
// --pull-threshold followers).
func (db *DB) SetMode(ctx context.Context, authorID int64, mode feed.Mode) error {
	if err := validMode(mode); err != nil {
		return err
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET mode = $1 WHERE id = $2`, int16(mode), authorID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return feed.ErrNotFound("user")
		}
		_, err = tx.Exec(ctx, `UPDATE follows SET pull = $1 WHERE followee_id = $2 AND pull <> $1`, feed.Merged(mode), authorID)
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

// Touch implements feed.SocialStore in one statement: cur reads the stored
// time, upd writes now only where it is older than now-interval (a user
// active within the interval costs no write and no row lock). Both see the
// statement's snapshot; when a concurrent Touch updated the row first, upd
// waits for it, rechecks the new row and leaves it, and cur still shows the
// old time: that case (stale but not updated) is read again, so of
// concurrent touches only the one that wrote sees the old time.
// ENOTFOUND if userID does not exist.
func (db *DB) Touch(ctx context.Context, userID int64, now time.Time, interval time.Duration) (time.Time, error) {
	stale := ms(now.Add(-interval))
	var prev int64
	var updated bool
	err := db.Pool.QueryRow(ctx, `WITH cur AS (SELECT active_at FROM users WHERE id = $1),
		upd AS (UPDATE users SET active_at = $2 WHERE id = $1 AND active_at < $3 RETURNING 1)
		SELECT cur.active_at, EXISTS (SELECT 1 FROM upd) FROM cur`, userID, ms(now), stale).Scan(&prev, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, feed.ErrNotFound("user")
	} else if err != nil {
		return time.Time{}, err
	}
	if !updated && prev < stale {
		if err := db.Pool.QueryRow(ctx, `SELECT active_at FROM users WHERE id = $1`, userID).Scan(&prev); err != nil {
			return time.Time{}, err
		}
	}
	return time.UnixMilli(prev), nil
}

// ActiveFollowersAfter implements feed.SocialStore: FollowersAfter's scan of
// follows_followee, each follower checked by primary key.
//
// u.id > $2 repeats f.follower_id > $2 for the planner: without it, it picks
// a merge join whose scan of users starts at the first id, so each page of a
// big audience read every user below it: a fan-out's time grew with the
// square of its audience (feedd bench fanout --followers 1000000
// --database-url; BENCHMARKS.md, "Fan-out").
func (db *DB) ActiveFollowersAfter(ctx context.Context, followeeID, after int64, limit int, since time.Time) ([]int64, error) {
	return db.queryIDList(ctx, `SELECT f.follower_id AS id FROM follows f JOIN users u ON u.id = f.follower_id
		WHERE f.followee_id = $1 AND f.follower_id > $2 AND u.id > $2 AND u.active_at >= $3
		ORDER BY f.follower_id LIMIT $4`, followeeID, after, ms(since), limit)
}
