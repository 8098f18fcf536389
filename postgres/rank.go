package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var (
	_ feed.RankStore      = (*DB)(nil)
	_ feed.RankFactReader = (*DB)(nil)
	_ feed.SnapshotStore  = (*DB)(nil)
)

// rankFactsQuery is RankFacts: one row per post read (kind 0: id, creation,
// author, likes) among $2, per like of the viewer ($1) since $3 or of a
// post from id $4 on (kind 1: post, liked_at, author) and per follow of the
// viewer, up to $5 of them (kind 2: author, followed_at): one range of the
// follows' primary key.
const rankFactsQuery = `WITH c AS (SELECT id, created_at, user_id, liked FROM posts WHERE id = ANY($2))
	SELECT 0, id, created_at, user_id, liked FROM c
	UNION ALL SELECT 1, post_id, created_at, author_id, 0 FROM likes
		WHERE user_id = $1 AND (created_at >= $3 OR post_id >= $4)
	UNION ALL (SELECT 2, followee_id, created_at, 0, 0 FROM follows WHERE follower_id = $1 LIMIT $5)`

// rankFollowsQuery is the viewer's ($1) follows of the authors $2: the
// follows RankFacts reads when the viewer has too many to read whole.
const rankFollowsQuery = `SELECT followee_id, created_at FROM follows WHERE follower_id = $1 AND followee_id = ANY($2)`

// RankFacts implements feed.RankFactReader with rankFactsQuery, and
// rankFollowsQuery for a viewer of more than feed.RankAllFollows follows.
func (db *DB) RankFacts(ctx context.Context, viewerID int64, ids, authors []int64, minID int64, since time.Time) (*feed.RankReads, error) {
	if ids == nil {
		ids = []int64{}
	}
	rows, err := db.Pool.Query(ctx, rankFactsQuery, viewerID, ids, since.UnixMilli(), minID, feed.RankAllFollows+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	rr := &feed.RankReads{Posts: make([]feed.RankCandidate, 0, len(ids)), Follows: make(map[int64]time.Time, len(authors))}
	for _, a := range authors {
		rr.Follows[a] = time.Time{}
	}
	var follows []feed.RankLike // author, followed at
	for rows.Next() {
		var kind, likes int
		var id, at, author int64
		if err := rows.Scan(&kind, &id, &at, &author, &likes); err != nil {
			return nil, err
		}
		switch kind {
		case 0:
			rr.Posts = append(rr.Posts, feed.RankCandidate{PostID: id, Score: at, AuthorID: author, Likes: likes})
			rr.Follows[author] = time.Time{}
		case 1:
			rr.Likes = append(rr.Likes, feed.RankLike{PostID: id, AuthorID: author, At: at})
		default:
			follows = append(follows, feed.RankLike{AuthorID: id, At: at})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(follows) <= feed.RankAllFollows {
		rr.AllFollows = true
	} else {
		// Too many to keep: only those of the page's authors.
		asked := make([]int64, 0, len(rr.Follows))
		for a := range rr.Follows {
			asked = append(asked, a)
		}
		rows, err := db.Pool.Query(ctx, rankFollowsQuery, viewerID, asked)
		if err != nil {
			return nil, err
		}
		follows = follows[:0]
		var f feed.RankLike
		if _, err := pgx.ForEachRow(rows, []any{&f.AuthorID, &f.At}, func() error {
			follows = append(follows, f)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	for _, f := range follows {
		rr.Follows[f.AuthorID] = time.UnixMilli(f.At)
	}
	return rr, nil
}

// RankPosts implements feed.RankFactReader: the posts of rankFactsQuery
// alone.
func (db *DB) RankPosts(ctx context.Context, ids []int64) ([]feed.RankCandidate, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return db.rankPostRows(ctx, len(ids), `SELECT id, created_at, user_id, liked FROM posts WHERE id = ANY($1)`, ids)
}

// RankPostRange implements feed.RankFactReader: RankPosts of a range of
// the primary key.
func (db *DB) RankPostRange(ctx context.Context, lo, hi int64) ([]feed.RankCandidate, error) {
	if hi < lo {
		return nil, nil
	}
	return db.rankPostRows(ctx, int(min(hi-lo+1, feed.MaxRankCandidates)),
		`SELECT id, created_at, user_id, liked FROM posts WHERE id BETWEEN $1 AND $2`, lo, hi)
}

// rankPostRows runs query, whose rows are (id, created_at, user_id,
// liked), and returns them as candidates; n is how many to expect.
func (db *DB) rankPostRows(ctx context.Context, n int, query string, args ...any) ([]feed.RankCandidate, error) {
	rows, err := db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	posts := make([]feed.RankCandidate, 0, n)
	var c feed.RankCandidate
	_, err = pgx.ForEachRow(rows, []any{&c.PostID, &c.Score, &c.AuthorID, &c.Likes}, func() error {
		posts = append(posts, c)
		return nil
	})
	return posts, err
}

// Candidates implements feed.RankStore: only what the model needs, by
// primary key.
func (db *DB) Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]feed.RankCandidate, error) {
	out := make(map[int64]feed.RankCandidate, len(ids))
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
		var c feed.RankCandidate
		if err := rows.Scan(&c.PostID, &c.AuthorID, &c.Score, &c.Likes, &c.LikedByViewer); err != nil {
			return nil, err
		}
		out[c.PostID] = c
	}
	return out, rows.Err()
}

// Affinity implements feed.RankStore: the viewer's likes of the authors'
// posts since `since` (one row per like, decayed by feed.Decay) and the
// follows.
func (db *DB) Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]feed.Affinity, error) {
	out := map[int64]feed.Affinity{}
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
			a.Likes += feed.Decay(now.Sub(time.UnixMilli(at)), halfLife)
		} else {
			a.FollowedAt = time.UnixMilli(at)
		}
		out[author] = a
	}
	return out, rows.Err()
}

// SaveSnapshot implements feed.SnapshotStore. It also drops the viewer's
// snapshots beyond the newest few and every expired one.
func (db *DB) SaveSnapshot(ctx context.Context, viewerID int64, id string, items []feed.RankedItem, now, expires time.Time) error {
	body := feed.EncodeSnapshot(items)
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM rank_snapshots WHERE expires_at <= $1`, now.UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rank_snapshots WHERE user_id = $1 AND id NOT IN
			(SELECT id FROM rank_snapshots WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2)`, viewerID, feed.SnapshotsKept-1); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO rank_snapshots (id, user_id, items, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
			id, viewerID, string(body), now.UnixMilli(), expires.UnixMilli())
		return err
	})
}

// Snapshot implements feed.SnapshotStore.
func (db *DB) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]feed.RankedItem, bool, error) {
	var body string
	err := db.Pool.QueryRow(ctx, `SELECT items FROM rank_snapshots WHERE id = $1 AND user_id = $2 AND expires_at > $3`,
		id, viewerID, now.UnixMilli()).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, feed.ErrNotFound("snapshot")
	} else if err != nil {
		return nil, false, err
	}
	return feed.SnapshotSlice([]byte(body), offset, limit)
}
