package postgres

import (
	"context"

	feed "github.com/feedd/feedd"
)

// Outbox is the pull side of the feed in PostgreSQL: the posts and
// reposts tables are every author's outbox already, their indexes
// posts_user and reposts_user (user_id, created_at DESC, id DESC) the
// per-author sorted sets. Add and Remove have nothing to do.
type Outbox struct{ DB *DB }

var _ feed.Outbox = (*Outbox)(nil)

// Clear implements feed.Outbox: the posts index goes with the posts.
func (ob *Outbox) Clear(ctx context.Context, authorID int64) error { return nil }

// Add implements feed.Outbox: the post's (or repost's) row is its outbox
// entry.
func (ob *Outbox) Add(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Remove implements feed.Outbox: deleting the row removed the entry.
func (ob *Outbox) Remove(ctx context.Context, authorID int64, e feed.Entry) error { return nil }

// Entries implements feed.Outbox in one statement: for each author (listed
// once), LATERAL index range scans of their newest limit posts and
// reposts up to max, of which their first limit, then one merge in feed
// order, as FeedEntries does.
func (ob *Outbox) Entries(ctx context.Context, authorIDs []int64, b feed.Bound, limit int) ([]feed.Entry, error) {
	out := []feed.Entry{}
	if len(authorIDs) == 0 || limit <= 0 {
		return out, nil
	}
	return scanEntries(ob.DB.Pool.Query(ctx, `SELECT e.created_at, e.id FROM unnest($1::bigint[]) AS a(author)
		CROSS JOIN LATERAL (
			(SELECT created_at, id FROM posts WHERE user_id = a.author
				AND created_at <= $2 AND (created_at < $2 OR $4::bigint = 0 OR id < $4)
				ORDER BY created_at DESC, id DESC LIMIT $3)
			UNION ALL
			(SELECT created_at, id FROM reposts WHERE user_id = a.author
				AND created_at <= $2 AND (created_at < $2 OR $4::bigint = 0 OR id < $4)
				ORDER BY created_at DESC, id DESC LIMIT $3)
			ORDER BY created_at DESC, id DESC LIMIT $3) e
		ORDER BY e.created_at DESC, e.id DESC`, sortedIDs(authorIDs), b.Max, limit, b.BeforeID))
}
