package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

var (
	_ feed.RankStore       = (*DB)(nil)
	_ feed.RankInputReader = (*DB)(nil)
	_ feed.RankFactReader  = (*DB)(nil)
	_ feed.SnapshotStore   = (*DB)(nil)
)

// rankLists is the end of the statement that reads a first ranked page's
// inputs in one row (rankInputsQuery), once c holds the candidate posts
// (id; score: the post's creation ms; user_id; liked); a is their
// distinct authors. It selects three lists, space-separated (NULL when
// empty): the candidates,
// "id,score,author,likes" each; the viewer's (?1) likes of the authors'
// posts since ?3 or of the candidates themselves, "post,author,liked_at"
// each; the viewer's follows of the authors, "author,followed_at" each.
// One row instead of one per candidate, and c and a are read once
// (MATERIALIZED); every other lookup is by primary key or index.
const rankLists = `a AS MATERIALIZED (SELECT DISTINCT user_id FROM c)
	SELECT (SELECT group_concat(id || ',' || score || ',' || user_id || ',' || liked, ' ') FROM c),
	(SELECT group_concat(post_id || ',' || author_id || ',' || created_at, ' ')
		FROM likes WHERE user_id = ?1 AND (created_at >= ?3 OR post_id IN (SELECT id FROM c))
		AND author_id IN a),
	(SELECT group_concat(f.followee_id || ',' || f.created_at, ' ')
		FROM a JOIN follows f ON f.follower_id = ?1 AND f.followee_id = a.user_id)`

// rankInputsQuery is RankInputs: the candidates are the posts among ?2 (a
// JSON array).
const rankInputsQuery = `WITH c AS MATERIALIZED (SELECT id, created_at AS score, user_id, liked FROM posts
		WHERE id IN (SELECT value FROM json_each(?2))),
	` + rankLists

// RankInputs implements feed.RankInputReader with rankInputsQuery.
func (db *DB) RankInputs(ctx context.Context, viewerID int64, ids []int64, since, now time.Time, halfLife time.Duration) (map[int64]feed.RankCandidate, map[int64]feed.Affinity, error) {
	if len(ids) == 0 {
		return map[int64]feed.RankCandidate{}, map[int64]feed.Affinity{}, nil
	}
	list, aff, err := scanRankLists(db.readRow(ctx, rankInputsQuery, viewerID, idList(ids), ms(since)), since, now, halfLife)
	if err != nil {
		return nil, nil, err
	}
	cands := make(map[int64]feed.RankCandidate, len(list))
	for _, c := range list {
		cands[c.PostID] = c
	}
	return cands, aff, nil
}

// rankFactsQuery is RankFacts, in one row: the posts among ?2 (a JSON
// array), "id,score,author,likes" each (NULL when none); the viewer's (?1)
// rank profile, their likes and follows packed (rankprofile.go); and only
// where the profile has no list (a viewer without one, or over its bound),
// that list read from the rows, as rankLists reads them (NULL when empty):
// the likes since ?3 or of posts from id ?4 on, of any author,
// "post,author,liked_at" each (one range of likes_user, which covers them:
// likes keep their post's author), and the follows, "author,followed_at"
// each, up to feed.RankAllFollows + 1 of them (one range of the follows'
// primary key). Every lookup is by primary key or index, and no temporary
// table is made (no IN list, no MATERIALIZED, no UNION but ALL): in
// modernc's SQLite each costs more than the rows it would save.
const rankFactsQuery = `SELECT (SELECT group_concat(p.id || ',' || p.created_at || ',' || p.user_id || ',' || p.liked, ' ')
		FROM json_each(?2) j JOIN posts p ON p.id = j.value),
	r.likes, r.follows,
	CASE WHEN r.likes IS NULL THEN (SELECT group_concat(post_id || ',' || author_id || ',' || created_at, ' ')
		FROM likes WHERE user_id = ?1 AND (created_at >= ?3 OR post_id >= ?4)) END,
	CASE WHEN r.follows IS NULL THEN (SELECT group_concat(followee_id || ',' || created_at, ' ')
		FROM (SELECT followee_id, created_at FROM follows WHERE follower_id = ?1 LIMIT ?5)) END
	FROM (SELECT ?1 AS id) v LEFT JOIN rank_profile r ON r.user_id = v.id`

// rankFollowsQuery is the viewer's (?1) follows of the authors of ?3 (a
// JSON array) and of the posts among ?2 (a JSON array), "author,
// followed_at" each (an author may repeat).
const rankFollowsQuery = `SELECT group_concat(f.followee_id || ',' || f.created_at, ' ')
		FROM (SELECT j.value AS author FROM json_each(?3) j
			UNION ALL SELECT p.user_id FROM json_each(?2) j JOIN posts p ON p.id = j.value) a
		JOIN follows f ON f.follower_id = ?1 AND f.followee_id = a.author`

// RankFacts implements feed.RankFactReader: with rankProfileQuery when it
// is asked for no posts and the viewer's profile has both lists (the
// common first page of a warm cache), else with rankFactsQuery (and
// rankFollowsQuery, the follows of the page's authors looked up one by
// one, for a viewer of more than feed.RankAllFollows follows).
func (db *DB) RankFacts(ctx context.Context, viewerID int64, ids, authors []int64, minID int64, since time.Time) (*feed.RankReads, error) {
	if len(ids) == 0 {
		// No posts to read (the ranked timeline's cache knows them): the
		// profile alone, when it has both lists, in a simpler statement
		// (on an empty database 10-14 µs against rankFactsQuery's 19).
		rr, ok, err := db.rankProfileFacts(ctx, viewerID, authors, minID, since)
		if err != nil || ok {
			return rr, err
		}
	}
	idsArg := idList(nonNil(ids))
	rows, err := db.read(ctx, rankFactsQuery, viewerID, idsArg, ms(since), minID, feed.RankAllFollows+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, cmp.Or(rows.Err(), sql.ErrNoRows)
	}
	var posts, likes, follows sql.NullString
	var likesList, followsList sql.RawBytes
	if err := rows.Scan(&posts, &likesList, &followsList, &likes, &follows); err != nil {
		return nil, err
	}
	rr := &feed.RankReads{Follows: make(map[int64]time.Time, len(authors))}
	if rr.Posts, err = parseRankPosts(posts.String, len(ids)); err != nil {
		return nil, err
	}
	var f [3]int64
	if likesList != nil {
		if err := profileLikes(rr, likesList, viewerID, minID, since); err != nil {
			return nil, err
		}
	} else if err := eachTuple(likes.String, f[:3], func() {
		rr.Likes = append(rr.Likes, feed.RankLike{PostID: f[0], AuthorID: f[1], At: f[2]})
	}); err != nil {
		return nil, err
	}
	for _, a := range authors {
		rr.Follows[a] = time.Time{}
	}
	for _, p := range rr.Posts {
		rr.Follows[p.AuthorID] = time.Time{}
	}
	if followsList != nil {
		if err := profileFollows(rr, followsList, viewerID); err != nil {
			return nil, err
		}
		return rr, rows.Close()
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	n := 0
	if follows.Valid {
		n = strings.Count(follows.String, " ") + 1
	}
	if n > feed.RankAllFollows {
		// Too many to keep: only the page's authors.
		if err := db.readRow(ctx, rankFollowsQuery, viewerID, idsArg, idList(nonNil(authors))).Scan(&follows); err != nil {
			return nil, err
		}
	} else {
		rr.AllFollows = true
	}
	if err := eachTuple(follows.String, f[:2], func() {
		rr.Follows[f[0]] = time.UnixMilli(f[1])
	}); err != nil {
		return nil, err
	}
	return rr, nil
}

// rankProfileQuery is the viewer's (?1) rank profile alone.
const rankProfileQuery = `SELECT likes, follows FROM rank_profile WHERE user_id = ?1`

// rankProfileFacts is RankFacts of no posts from the viewer's rank profile
// (rankProfileQuery), and true; false when the profile lacks a list (a
// viewer without one, or over its bound), for rankFactsQuery to read.
func (db *DB) rankProfileFacts(ctx context.Context, viewerID int64, authors []int64, minID int64, since time.Time) (*feed.RankReads, bool, error) {
	rows, err := db.read(ctx, rankProfileQuery, viewerID)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, false, rows.Err()
	}
	var likes, follows sql.RawBytes
	if err := rows.Scan(&likes, &follows); err != nil || likes == nil || follows == nil {
		return nil, false, err
	}
	rr := &feed.RankReads{Follows: make(map[int64]time.Time, len(authors))}
	if err := profileLikes(rr, likes, viewerID, minID, since); err != nil {
		return nil, false, err
	}
	for _, a := range authors {
		rr.Follows[a] = time.Time{}
	}
	if err := profileFollows(rr, follows, viewerID); err != nil {
		return nil, false, err
	}
	return rr, true, rows.Close()
}

// profileLikes sets rr.Likes from a rank profile's likes list: those
// since `since` or of posts from minID on.
func profileLikes(rr *feed.RankReads, b []byte, viewerID, minID int64, since time.Time) error {
	l := packedList{b, 3}
	if !validList(l.b, l.width) {
		return fmt.Errorf("sqlite: rank profile of user %d: malformed likes", viewerID)
	}
	for i := range l.len() {
		if post, at := l.field(i, 0), l.field(i, 2); at >= ms(since) || post >= minID {
			rr.Likes = append(rr.Likes, feed.RankLike{PostID: post, AuthorID: l.field(i, 1), At: at})
		}
	}
	return nil
}

// profileFollows adds a rank profile's follows list to rr.Follows: every
// author the viewer follows (AllFollows, as the list holds at most
// followsMax = feed.RankAllFollows).
func profileFollows(rr *feed.RankReads, b []byte, viewerID int64) error {
	l := packedList{b, 2}
	if !validList(l.b, l.width) {
		return fmt.Errorf("sqlite: rank profile of user %d: malformed follows", viewerID)
	}
	for i := range l.len() {
		rr.Follows[l.field(i, 0)] = time.UnixMilli(l.field(i, 1))
	}
	rr.AllFollows = true
	return nil
}

// rankPostsQuery is RankPosts: the first list of rankFactsQuery alone.
const rankPostsQuery = `SELECT group_concat(p.id || ',' || p.created_at || ',' || p.user_id || ',' || p.liked, ' ')
	FROM json_each(?1) j JOIN posts p ON p.id = j.value`

// RankPosts implements feed.RankFactReader with rankPostsQuery.
func (db *DB) RankPosts(ctx context.Context, ids []int64) ([]feed.RankCandidate, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var list sql.NullString
	if err := db.readRow(ctx, rankPostsQuery, idList(ids)).Scan(&list); err != nil {
		return nil, err
	}
	return parseRankPosts(list.String, len(ids))
}

// rankPostRangeQuery is RankPostRange: the first list of rankFactsQuery,
// of a range of ids.
const rankPostRangeQuery = `SELECT group_concat(id || ',' || created_at || ',' || user_id || ',' || liked, ' ')
	FROM posts WHERE id BETWEEN ?1 AND ?2`

// RankPostRange implements feed.RankFactReader with rankPostRangeQuery.
func (db *DB) RankPostRange(ctx context.Context, lo, hi int64) ([]feed.RankCandidate, error) {
	if hi < lo {
		return nil, nil
	}
	var list sql.NullString
	if err := db.readRow(ctx, rankPostRangeQuery, lo, hi).Scan(&list); err != nil {
		return nil, err
	}
	return parseRankPosts(list.String, int(min(hi-lo+1, feed.MaxRankCandidates)))
}

// parseRankPosts parses the post list of rankFactsQuery and
// rankPostsQuery, "id,score,author,likes" each; n is how many to expect
// at most.
func parseRankPosts(list string, n int) ([]feed.RankCandidate, error) {
	posts := make([]feed.RankCandidate, 0, n)
	var f [4]int64
	err := eachTuple(list, f[:], func() {
		posts = append(posts, feed.RankCandidate{PostID: f[0], Score: f[1], AuthorID: f[2], Likes: int(f[3])})
	})
	return posts, err
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// scanRankLists reads the row of rankLists: the candidates in feed order
// and the affinities.
func scanRankLists(row *sql.Row, since, now time.Time, halfLife time.Duration) ([]feed.RankCandidate, map[int64]feed.Affinity, error) {
	var posts, likes, follows sql.NullString
	if err := row.Scan(&posts, &likes, &follows); err != nil {
		return nil, nil, err
	}
	cands := make([]feed.RankCandidate, 0, strings.Count(posts.String, " ")+1)
	aff := map[int64]feed.Affinity{}
	var f [4]int64
	err := eachTuple(posts.String, f[:], func() {
		cands = append(cands, feed.RankCandidate{PostID: f[0], Score: f[1], AuthorID: f[2], Likes: int(f[3])})
	})
	if err != nil {
		return nil, nil, err
	}
	liked := map[int64]bool{}
	err = eachTuple(likes.String, f[:3], func() {
		liked[f[0]] = true
		if f[2] >= ms(since) {
			a := aff[f[1]]
			a.Likes += feed.Decay(now.Sub(time.UnixMilli(f[2])), halfLife)
			aff[f[1]] = a
		}
	})
	if err != nil {
		return nil, nil, err
	}
	err = eachTuple(follows.String, f[:2], func() {
		a := aff[f[0]]
		a.FollowedAt = time.UnixMilli(f[1])
		aff[f[0]] = a
	})
	if err != nil {
		return nil, nil, err
	}
	for i := range cands {
		cands[i].LikedByViewer = liked[cands[i].PostID]
	}
	slices.SortFunc(cands, func(a, b feed.RankCandidate) int {
		return feed.CompareEntries(feed.Entry{PostID: a.PostID, Score: a.Score}, feed.Entry{PostID: b.PostID, Score: b.Score})
	})
	return cands, aff, nil
}

// eachTuple parses list, space-separated tuples of len(f) comma-separated
// integers, calling fn with each in f.
func eachTuple(list string, f []int64, fn func()) error {
	for list != "" {
		for i := range f {
			sep := byte(',')
			if i == len(f)-1 {
				sep = ' '
			}
			n, rest, err := cutInt(list, sep)
			if err != nil || (rest == "" && i < len(f)-1) {
				return fmt.Errorf("sqlite: tuple list: %w", cmp.Or(err, errIntList))
			}
			f[i], list = n, rest
		}
		fn()
	}
	return nil
}

// Candidates implements feed.RankStore: only what the model needs, by
// primary key.
func (db *DB) Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]feed.RankCandidate, error) {
	out := make(map[int64]feed.RankCandidate, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT p.id, p.user_id, p.created_at, p.liked,
		EXISTS (SELECT 1 FROM likes l WHERE l.user_id = ?1 AND l.post_id = p.id)
		FROM posts p
		WHERE p.id IN (SELECT value FROM json_each(?2))`, viewerID, idList(ids))
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
// posts since `since` (one row per like, decayed here) and the follows.
func (db *DB) Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]feed.Affinity, error) {
	out := map[int64]feed.Affinity{}
	if len(authorIDs) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT 0, author_id, created_at FROM likes
		WHERE user_id = ?1 AND created_at >= ?2 AND author_id IN (SELECT value FROM json_each(?3))
		UNION ALL SELECT 1, followee_id, created_at FROM follows
		WHERE follower_id = ?1 AND followee_id IN (SELECT value FROM json_each(?3))`, viewerID, ms(since), idList(authorIDs))
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
	return db.tx(ctx, func(tx *sql.Tx) error {
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
func (db *DB) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]feed.RankedItem, bool, error) {
	var body string
	err := db.readRow(ctx, `SELECT items FROM rank_snapshots WHERE id = ? AND user_id = ? AND expires_at > ?`,
		id, viewerID, ms(now)).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, feed.ErrNotFound("snapshot")
	} else if err != nil {
		return nil, false, err
	}
	return feed.SnapshotSlice([]byte(body), offset, limit)
}
