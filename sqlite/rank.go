package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

var (
	_ feed.RankStore     = (*DB)(nil)
	_ feed.SnapshotStore = (*DB)(nil)
)

// candidatesQuery is Candidates in one row: the posts among ?2 (a JSON
// array), "id,author,created,likes,liked" each (liked: 1 when the viewer
// ?1 likes it), space-separated; NULL when none. One row instead of one
// per post: in modernc's SQLite stepping a row and handing over its values
// cost more than the lookups (a first ranked page's profile).
const candidatesQuery = `SELECT group_concat(p.id || ',' || p.user_id || ',' || p.created_at || ',' || p.liked || ',' ||
		EXISTS (SELECT 1 FROM likes l WHERE l.user_id = ?1 AND l.post_id = p.id), ' ')
	FROM json_each(?2) j JOIN posts p ON p.id = j.value`

// Candidates implements feed.RankStore with candidatesQuery.
func (db *DB) Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]rank.Candidate, error) {
	out := make(map[int64]rank.Candidate, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var list sql.NullString
	if err := db.readRow(ctx, candidatesQuery, viewerID, idList(ids)).Scan(&list); err != nil {
		return nil, err
	}
	var f [5]int64
	err := eachTuple(list.String, f[:], func() {
		out[f[0]] = rank.Candidate{PostID: f[0], AuthorID: f[1], Score: f[2], Likes: int(f[3]), LikedByViewer: f[4] != 0}
	})
	return out, err
}

// affinityQuery is Affinity in one row: the viewer's (?1) likes since ?2
// of posts by the authors ?3 (a JSON array), "author,liked_at" each, and
// the viewer's follows of those authors, "author,followed_at" each (each
// list space-separated, NULL when empty).
const affinityQuery = `SELECT
	(SELECT group_concat(author_id || ',' || created_at, ' ') FROM likes
		WHERE user_id = ?1 AND created_at >= ?2 AND author_id IN (SELECT value FROM json_each(?3))),
	(SELECT group_concat(followee_id || ',' || created_at, ' ') FROM follows
		WHERE follower_id = ?1 AND followee_id IN (SELECT value FROM json_each(?3)))`

// Affinity implements feed.RankStore with affinityQuery, the likes
// decayed here.
func (db *DB) Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]rank.Affinity, error) {
	out := map[int64]rank.Affinity{}
	if len(authorIDs) == 0 {
		return out, nil
	}
	var likes, follows sql.NullString
	if err := db.readRow(ctx, affinityQuery, viewerID, ms(since), idList(authorIDs)).Scan(&likes, &follows); err != nil {
		return nil, err
	}
	var f [2]int64
	err := eachTuple(likes.String, f[:], func() {
		a := out[f[0]]
		a.Likes += rank.Decay(now.Sub(time.UnixMilli(f[1])), halfLife)
		out[f[0]] = a
	})
	if err != nil {
		return nil, err
	}
	err = eachTuple(follows.String, f[:], func() {
		a := out[f[0]]
		a.FollowedAt = time.UnixMilli(f[1])
		out[f[0]] = a
	})
	return out, err
}

// SaveSnapshot implements feed.SnapshotStore. It also drops the viewer's
// snapshots beyond the newest few and every expired one.
func (db *DB) SaveSnapshot(ctx context.Context, viewerID int64, id string, items []rank.Item, now, expires time.Time) error {
	body := rank.EncodeSnapshot(items)
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rank_snapshots WHERE expires_at <= ?`, ms(now)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM rank_snapshots WHERE user_id = ?1 AND id NOT IN
			(SELECT id FROM rank_snapshots WHERE user_id = ?1 ORDER BY created_at DESC LIMIT ?2)`, viewerID, feed.SnapshotsKept-1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO rank_snapshots (id, user_id, items, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			id, viewerID, string(body), ms(now), ms(expires))
		return err
	})
}

// Snapshot implements feed.SnapshotStore.
func (db *DB) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]rank.Item, bool, error) {
	var body string
	err := db.readRow(ctx, `SELECT items FROM rank_snapshots WHERE id = ? AND user_id = ? AND expires_at > ?`,
		id, viewerID, ms(now)).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, feed.ErrNotFound("snapshot")
	} else if err != nil {
		return nil, false, err
	}
	return rank.SnapshotSlice([]byte(body), offset, limit)
}

// Commenters implements feed.RankStore: per user, a range of comments_user
// (user, time) whose rows hold the post.
func (db *DB) Commenters(ctx context.Context, userIDs, postIDs []int64, since time.Time) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	if len(userIDs) == 0 || len(postIDs) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT DISTINCT post_id, user_id FROM comments
		WHERE user_id IN (SELECT value FROM json_each(?1)) AND created_at >= ?2 AND post_id IN (SELECT value FROM json_each(?3))`,
		idList(userIDs), ms(since), idList(postIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var post, user int64
		if err := rows.Scan(&post, &user); err != nil {
			return nil, err
		}
		out[post] = append(out[post], user)
	}
	return out, rows.Err()
}
