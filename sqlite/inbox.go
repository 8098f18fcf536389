package sqlite

import (
	"context"

	feed "github.com/feedd/feedd"
)

// Inbox is the embedded inbox: table inbox, keyed (user_id, score, post_id).
type Inbox struct{ DB *DB }

var _ feed.Inbox = (*Inbox)(nil)

// Deliver implements feed.Inbox: one INSERT for the whole batch.
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := ib.DB.Write.ExecContext(ctx, `INSERT INTO inbox (user_id, score, post_id)
		SELECT value, ?, ? FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, e.Score, e.PostID, idList(userIDs))
	return err
}

// Add implements feed.Inbox.
func (ib *Inbox) Add(ctx context.Context, userID int64, entries []feed.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	pairs := make([][2]int64, len(entries))
	for i, e := range entries {
		pairs[i] = [2]int64{e.Score, e.PostID}
	}
	_, err := ib.DB.Write.ExecContext(ctx, `INSERT INTO inbox (user_id, score, post_id)
		SELECT ?, value ->> 0, value ->> 1 FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, userID, jsonString(pairs))
	return err
}

// Remove implements feed.Inbox.
func (ib *Inbox) Remove(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := ib.DB.Write.ExecContext(ctx, `DELETE FROM inbox WHERE score = ? AND post_id = ?
		AND user_id IN (SELECT value FROM json_each(?))`, e.Score, e.PostID, idList(userIDs))
	return err
}

// Page implements feed.Inbox.
func (ib *Inbox) Page(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	return scanEntries(ib.DB.Read.QueryContext(ctx, `SELECT score, post_id FROM inbox WHERE user_id = ?1
		AND score <= ?2 AND (score < ?2 OR ?3 = 0 OR post_id < ?3)
		ORDER BY score DESC, post_id DESC LIMIT ?4 OFFSET ?5`, userID, b.Max, b.BeforeID, limit, offset))
}

// Trim implements feed.Inbox.
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) error {
	_, err := ib.DB.Write.ExecContext(ctx, `DELETE FROM inbox WHERE user_id = ?1 AND (score, post_id) NOT IN
		(SELECT score, post_id FROM inbox WHERE user_id = ?1 ORDER BY score DESC, post_id DESC LIMIT ?2)`, userID, cap)
	return err
}

// Restore implements feed.Inbox. The SQLite inbox is never lost, so this is Add.
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return ib.Add(ctx, userID, entries)
}
