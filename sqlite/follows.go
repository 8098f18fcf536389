package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

// ---- follows

// SetFollow implements feed.FollowStore. A follow between users where
// either blocks the other is refused; an unfollow never is. Only a call whose
// INSERT or DELETE changed the follow row moves the counters and enqueues a
// feed.FollowJob, in the same transaction.
func (db *DB) SetFollow(ctx context.Context, followerID, followeeID int64, follow bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		job, err := db.setFollow(ctx, tx, followerID, followeeID, follow, now)
		if err != nil || job == nil {
			return err
		}
		return db.enqueue(ctx, tx, job)
	})
}

// setFollow is SetFollow in tx, but for the job, which it returns for the
// caller to enqueue (nil when the follow did not change).
func (db *DB) setFollow(ctx context.Context, tx *sql.Tx, followerID, followeeID int64, follow bool, now time.Time) (feed.Job, error) {
	if err := userExists(ctx, tx, followeeID); err != nil {
		return nil, err
	}
	var res sql.Result
	var err error
	delta := 1
	if follow {
		if blocked, err := eitherBlocks(ctx, tx, followerID, followeeID); err != nil {
			return nil, err
		} else if blocked {
			return nil, errFollowBlocked
		}
		// pull copies the followee's mode (follows.pull, migrations/001_baseline.sql).
		res, err = tx.ExecContext(ctx, `INSERT INTO follows (follower_id, followee_id, created_at, pull)
			SELECT ?1, ?2, ?3, mode <> 0 FROM users WHERE id = ?2 ON CONFLICT DO NOTHING`, followerID, followeeID, ms(now))
	} else {
		delta = -1
		res, err = tx.ExecContext(ctx, `DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, followerID, followeeID)
	}
	if err != nil {
		return nil, err
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return nil, nil // already in that state
	}
	if err := addFollowCounts(ctx, tx, followerID, followeeID, delta); err != nil {
		return nil, err
	}
	if err := db.notifyFollow(ctx, tx, followerID, followeeID, follow, now); err != nil {
		return nil, err
	}
	return feed.FollowJob{FollowerID: followerID, FolloweeID: followeeID, Follow: follow}, nil
}

// SetFollows implements feed.FollowStore: one transaction, each change in
// a savepoint of its own, as SetFollow makes it, and the jobs of the
// changes made enqueued together at the end (one insert).
func (db *DB) SetFollows(ctx context.Context, changes []feed.FollowChange, now time.Time) ([]error, error) {
	errs := make([]error, len(changes))
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		clear(errs)
		var jobs []feed.Job
		for i, c := range changes {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT follow`); err != nil {
				return err
			}
			mark := db.noticeMark(tx)
			job, err := db.setFollow(ctx, tx, c.FollowerID, c.FolloweeID, c.Follow, now)
			if job != nil {
				jobs = append(jobs, job)
			}
			if err != nil {
				if feed.ErrorCode(err) == feed.EINTERNAL {
					return err // a fault of the store, not of this change
				}
				errs[i] = err
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO follow`); err != nil {
					return err
				}
				db.noticeUndo(tx, mark)
			}
			if _, err := tx.ExecContext(ctx, `RELEASE follow`); err != nil {
				return err
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return db.enqueue(ctx, tx, jobs...)
	})
	return errs, err
}

// errFollowBlocked refuses a follow between users where one blocks the other.
var errFollowBlocked = feed.Errorf(feed.EFORBIDDEN, "you cannot follow this user")

// userExists returns ENOTFOUND unless user id exists.
func userExists(ctx context.Context, tx *sql.Tx, id int64) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = ?`, id).Scan(&n); err != nil {
		return err
	} else if n == 0 {
		return feed.ErrNotFound("user")
	}
	return nil
}

// eitherBlocks reports whether a blocks b or b blocks a: two primary-key
// lookups.
func eitherBlocks(ctx context.Context, tx *sql.Tx, a, b int64) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM blocks WHERE user_id = ?1 AND blocked_id = ?2)
		+ (SELECT count(*) FROM blocks WHERE user_id = ?2 AND blocked_id = ?1)`, a, b).Scan(&n)
	return n > 0, err
}

// addFollowCounts moves the counters of one follow that was added (delta 1)
// or removed (delta -1).
func addFollowCounts(ctx context.Context, tx *sql.Tx, followerID, followeeID int64, delta int) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET followee = followee + ? WHERE id = ?`, delta, followerID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE users SET fans = fans + ? WHERE id = ?`, delta, followeeID)
	return err
}

// IsFollowing implements feed.FollowStore.
func (db *DB) IsFollowing(ctx context.Context, followerID, followeeID int64) (bool, error) {
	var n int
	err := db.readRow(ctx, `SELECT count(*) FROM follows WHERE follower_id = ? AND followee_id = ?`, followerID, followeeID).Scan(&n)
	return n > 0, err
}

// CommonFollowees implements feed.FollowStore.
func (db *DB) CommonFollowees(ctx context.Context, a, b int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT x.followee_id FROM follows x
		JOIN follows y ON y.follower_id = ? AND y.followee_id = x.followee_id
		WHERE x.follower_id = ? ORDER BY x.followee_id LIMIT ?`, b, a, limit))
}

// NthFollowerAfter implements feed.FollowStore: the OFFSET walks the
// covering index follows_followee without producing rows.
func (db *DB) NthFollowerAfter(ctx context.Context, followeeID, after int64, n int) (int64, error) {
	var id int64
	err := db.readRow(ctx, `SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id > ?
		ORDER BY follower_id LIMIT 1 OFFSET ?`, followeeID, after, n-1).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// FollowersAfter implements feed.FollowStore.
func (db *DB) FollowersAfter(ctx context.Context, followeeID, after int64, limit int) ([]int64, error) {
	return db.queryIDList(ctx, `SELECT follower_id AS id FROM follows WHERE followee_id = ? AND follower_id > ?
		ORDER BY follower_id LIMIT ?`, followeeID, after, limit)
}
