package postgres

import (
	"context"
	"slices"

	feed "github.com/feedd/feedd"
)

// Inbox is the PostgreSQL inbox, used when feedd runs on PostgreSQL without
// Redis: table inbox, keyed (user_id, score, post_id).
type Inbox struct{ DB *DB }

var _ feed.Inbox = (*Inbox)(nil)

// sortedIDs returns ids sorted ascending. Batches insert and delete keys in
// one global order, so two batches over overlapping users (a redelivery
// racing the first delivery) wait for each other instead of deadlocking.
func sortedIDs(ids []int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

// Deliver implements feed.Inbox: one INSERT for the whole batch.
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := ib.DB.Pool.Exec(ctx, `INSERT INTO inbox (user_id, score, post_id)
		SELECT u, $2, $3 FROM unnest($1::bigint[]) WITH ORDINALITY AS t(u, n) ORDER BY n
		ON CONFLICT DO NOTHING`, sortedIDs(userIDs), e.Score, e.PostID)
	return err
}

// Add implements feed.Inbox: one INSERT for all entries.
func (ib *Inbox) Add(ctx context.Context, userID int64, entries []feed.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	es := slices.Clone(entries)
	// Ascending (reverse feed order), the order every batch writes keys in.
	slices.SortFunc(es, func(a, b feed.Entry) int { return b.Compare(a) })
	scores := make([]int64, len(es))
	posts := make([]int64, len(es))
	for i, e := range es {
		scores[i], posts[i] = e.Score, e.PostID
	}
	_, err := ib.DB.Pool.Exec(ctx, `INSERT INTO inbox (user_id, score, post_id)
		SELECT $1, s, p FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS t(s, p, n) ORDER BY n
		ON CONFLICT DO NOTHING`, userID, scores, posts)
	return err
}

// Remove implements feed.Inbox: one DELETE for the whole batch.
func (ib *Inbox) Remove(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := ib.DB.Pool.Exec(ctx, `DELETE FROM inbox WHERE user_id = ANY($1) AND score = $2 AND post_id = $3`,
		sortedIDs(userIDs), e.Score, e.PostID)
	return err
}

// Page implements feed.Inbox.
func (ib *Inbox) Page(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	return scanEntries(ib.DB.Pool.Query(ctx, `SELECT score, post_id FROM inbox WHERE user_id = $1
		AND score <= $2 AND (score < $2 OR $3::bigint = 0 OR post_id < $3)
		ORDER BY score DESC, post_id DESC LIMIT $4 OFFSET $5`, userID, b.Max, b.BeforeID, limit, offset))
}

// Trim implements feed.Inbox: it deletes every entry older than the cap-th
// newest, found with one index probe. A negative cap trims nothing.
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) error {
	switch {
	case cap < 0:
		return nil
	case cap == 0:
		_, err := ib.DB.Pool.Exec(ctx, `DELETE FROM inbox WHERE user_id = $1`, userID)
		return err
	}
	// With fewer than cap entries the subquery is NULL and nothing matches.
	_, err := ib.DB.Pool.Exec(ctx, `DELETE FROM inbox WHERE user_id = $1 AND (score, post_id) <
		(SELECT score, post_id FROM inbox WHERE user_id = $1 ORDER BY score DESC, post_id DESC LIMIT 1 OFFSET $2)`,
		userID, cap-1)
	return err
}

// Restore implements feed.Inbox. The PostgreSQL inbox is never lost, so this is Add.
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return ib.Add(ctx, userID, entries)
}
