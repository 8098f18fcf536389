package sqlite

import (
	"context"
	"slices"

	feed "github.com/feedd/feedd"
)

// Outbox is the pull side of the feed in SQLite: the posts table is every
// author's outbox already, its index posts_user (user_id, created_at DESC,
// id DESC) the per-author sorted set. Add and Remove have nothing to do.
type Outbox struct{ DB *DB }

var _ feed.Outbox = (*Outbox)(nil)

// Clear implements feed.Outbox: the posts index goes with the posts.
func (ob *Outbox) Clear(ctx context.Context, authorID int64) error { return nil }

// Add implements feed.Outbox: the post's row is its outbox entry.
func (ob *Outbox) Add(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Remove implements feed.Outbox: deleting the post's row removed the entry.
func (ob *Outbox) Remove(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Entries implements feed.Outbox in one statement. SQLite has no LATERAL:
// the correlated IN subquery plays its part, reading each author's newest
// limit ids from posts_user (a bounded index range scan, however many posts
// the author has); the rows are then merged by the ORDER BY. A window
// function (ROW_NUMBER() OVER (PARTITION BY user_id ...)) would read every
// post of every author up to max instead.
func (ob *Outbox) Entries(ctx context.Context, authorIDs []int64, b feed.Bound, limit int) ([]feed.Entry, error) {
	out := []feed.Entry{}
	if len(authorIDs) == 0 || limit <= 0 { // LIMIT -1 would mean no limit
		return out, nil
	}
	authors := slices.Clone(authorIDs)
	slices.Sort(authors)
	authors = slices.Compact(authors) // an author listed twice counts once
	return scanEntries(ob.DB.read(ctx, outboxQuery, idList(authors), b.Max, limit, b.BeforeID))
}

// outboxQuery takes the authors as a JSON array (?1), the bound's max (?2)
// and before-id (?4, 0 for the whole millisecond), and the per-author
// limit (?3).
const outboxQuery = `SELECT p.created_at, p.id FROM json_each(?1) a
	JOIN posts p ON p.id IN (SELECT id FROM posts WHERE user_id = a.value AND created_at <= ?2
		AND (created_at < ?2 OR ?4 = 0 OR id < ?4) ORDER BY created_at DESC, id DESC LIMIT ?3)
	ORDER BY p.created_at DESC, p.id DESC`
