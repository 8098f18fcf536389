package sqlite

import (
	"context"
	"slices"

	feed "github.com/feedd/feedd"
)

// Outbox is the pull side of the feed in SQLite: the posts and reposts
// tables are every author's outbox already, their indexes posts_user and
// reposts_user (user_id, created_at DESC, id DESC) the per-author sorted
// sets. Add and Remove have nothing to do.
type Outbox struct{ DB *DB }

var _ feed.Outbox = (*Outbox)(nil)

// Clear implements feed.Outbox: the posts index goes with the posts.
func (ob *Outbox) Clear(ctx context.Context, authorID int64) error { return nil }

// Add implements feed.Outbox: the post's (or repost's) row is its outbox
// entry.
func (ob *Outbox) Add(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Remove implements feed.Outbox: deleting the row removed the entry.
func (ob *Outbox) Remove(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Entries implements feed.Outbox in one statement. SQLite has no LATERAL:
// the correlated IN subqueries play its part, reading each author's newest
// limit post ids from posts_user and newest limit repost ids from
// reposts_user (bounded index range scans, however many the author has);
// the rows are then merged by the ORDER BY, and each author's cut to its
// first limit here. A window function (ROW_NUMBER() OVER (PARTITION BY
// user_id ...)) would read every post of every author up to max instead.
func (ob *Outbox) Entries(ctx context.Context, authorIDs []int64, b feed.Bound, limit int) ([]feed.Entry, error) {
	out := []feed.Entry{}
	if len(authorIDs) == 0 || limit <= 0 { // LIMIT -1 would mean no limit
		return out, nil
	}
	authors := slices.Clone(authorIDs)
	slices.Sort(authors)
	authors = slices.Compact(authors) // an author listed twice counts once
	rows, err := ob.DB.read(ctx, outboxQuery, idList(authors), b.Max, limit, b.BeforeID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := make(map[int64]int, len(authors))
	for rows.Next() {
		var author int64
		var e feed.Entry
		if err := rows.Scan(&author, &e.Score, &e.PostID); err != nil {
			return nil, err
		}
		if n[author]++; n[author] <= limit {
			out = append(out, e)
		}
	}
	return out, rows.Err()
}

// outboxQuery takes the authors as a JSON array (?1), the bound's max (?2)
// and before-id (?4, 0 for the whole millisecond), and the per-author
// limit (?3) of posts and of reposts.
const outboxQuery = `SELECT a.value, p.created_at, p.id FROM json_each(?1) a
	JOIN posts p ON p.id IN (SELECT id FROM posts WHERE user_id = a.value AND created_at <= ?2
		AND (created_at < ?2 OR ?4 = 0 OR id < ?4) ORDER BY created_at DESC, id DESC LIMIT ?3)
	UNION ALL
	SELECT a.value, r.created_at, r.id FROM json_each(?1) a
	JOIN reposts r ON r.id IN (SELECT id FROM reposts WHERE user_id = a.value AND created_at <= ?2
		AND (created_at < ?2 OR ?4 = 0 OR id < ?4) ORDER BY created_at DESC, id DESC LIMIT ?3)
	ORDER BY 2 DESC, 3 DESC`
