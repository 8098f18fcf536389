package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

var (
	_ feed.RankStore     = (*DB)(nil)
	_ feed.SnapshotStore = (*DB)(nil)
)

// Candidates implements feed.RankStore: only what the model needs, by
// primary key.
func (db *DB) Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]rank.Candidate, error) {
	out := make(map[int64]rank.Candidate, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT p.id, p.user_id, p.created_at, p.liked,
		EXISTS (SELECT 1 FROM likes l WHERE l.user_id = $1 AND l.post_id = p.id)
		FROM posts p
		WHERE p.id = ANY($2)`, viewerID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c rank.Candidate
		if err := rows.Scan(&c.PostID, &c.AuthorID, &c.Score, &c.Likes, &c.LikedByViewer); err != nil {
			return nil, err
		}
		out[c.PostID] = c
	}
	return out, rows.Err()
}

// Affinity implements feed.RankStore: the viewer's likes of the authors'
// posts since `since` (one row per like, decayed by rank.Decay) and the
// follows.
func (db *DB) Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]rank.Affinity, error) {
	out := map[int64]rank.Affinity{}
	if len(authorIDs) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT 0, author_id, created_at FROM likes
		WHERE user_id = $1 AND created_at >= $2 AND author_id = ANY($3)
		UNION ALL SELECT 1, followee_id, created_at FROM follows WHERE follower_id = $1 AND followee_id = ANY($3)`,
		viewerID, since.UnixMilli(), authorIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind int
		var author, at int64
		if err := rows.Scan(&kind, &author, &at); err != nil {
			return nil, err
		}
		a := out[author]
		if kind == 0 {
			a.Likes += rank.Decay(now.Sub(time.UnixMilli(at)), halfLife)
		} else {
			a.FollowedAt = time.UnixMilli(at)
		}
		out[author] = a
	}
	return out, rows.Err()
}

// saveSnapshotQuery is SaveSnapshot in one statement (one round trip, its
// own transaction): the viewer's ($2) snapshot $1 is inserted, and every
// expired snapshot ($4: now) and the viewer's beyond the newest $6 are
// deleted (all three see the table as it was before the statement, so the
// new snapshot is never among those deleted).
const saveSnapshotQuery = `WITH expired AS (DELETE FROM rank_snapshots WHERE expires_at <= $4),
	old AS (DELETE FROM rank_snapshots WHERE user_id = $2 AND id NOT IN
		(SELECT id FROM rank_snapshots WHERE user_id = $2 ORDER BY created_at DESC LIMIT $6))
	INSERT INTO rank_snapshots (id, user_id, items, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`

// SaveSnapshot implements feed.SnapshotStore with saveSnapshotQuery. It
// also drops the viewer's snapshots beyond the newest few and every
// expired one.
func (db *DB) SaveSnapshot(ctx context.Context, viewerID int64, id string, items []rank.Item, now, expires time.Time) error {
	_, err := db.Pool.Exec(ctx, saveSnapshotQuery, id, viewerID, string(rank.EncodeSnapshot(items)), now.UnixMilli(), expires.UnixMilli(), feed.SnapshotsKept-1)
	return err
}

// Snapshot implements feed.SnapshotStore.
func (db *DB) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]rank.Item, bool, error) {
	var body string
	err := db.Pool.QueryRow(ctx, `SELECT items FROM rank_snapshots WHERE id = $1 AND user_id = $2 AND expires_at > $3`,
		id, viewerID, now.UnixMilli()).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT post_id, user_id FROM comments
		WHERE user_id = ANY($1) AND created_at >= $2 AND post_id = ANY($3)`, userIDs, ms(since), postIDs)
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
