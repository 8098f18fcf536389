package sqlite

import (
	"context"
	"database/sql"

	feed "github.com/feedd/feedd"
)

// DefaultCap is how many entries an inbox keeps when Inbox.Cap is 0.
const DefaultCap = 800

// Slack is how many entries over cap an inbox of that cap may hold: Deliver
// and Add trim an inbox exactly to cap as soon as more than Slack(cap)
// entries have arrived since its last trim, so it never holds more than
// cap + Slack(cap) (62 at a cap of 50, 1000 at 800).
func Slack(cap int) int { return cap / 4 }

// Inbox is the embedded inbox: table inbox, keyed (user_id, score, post_id).
//
// Cap scheme: a B-tree has no ranks, so an exact trim walks the cap newest
// entries of an inbox (one index range, read backwards) to find where to
// cut; doing that on every delivery would cost ~cap index steps each.
// Instead table inbox_trim counts, per user, the entries added since the
// inbox was last trimmed, which bounds how far it is over the cap: each
// delivery bumps the counts of the users it adds to (one statement for the
// batch), and the users whose count passes Slack(Cap) are trimmed exactly to
// Cap (one DELETE for all of them) and their counts reset, in the same
// transaction. A trim thus comes once every Slack(Cap)+1 entries an inbox
// receives and costs ~(Cap+Slack)/Slack index steps per delivery: 5. Unlike
// Redis's hashed choice of trims (redis.Inbox.Deliver), the bound is hard:
// an inbox never holds more than Cap + Slack(Cap) entries.
type Inbox struct {
	DB *DB
	// Cap is how many entries each inbox keeps (0: DefaultCap); an inbox
	// holds at most Cap + Slack(Cap).
	Cap int
}

var _ feed.Inbox = (*Inbox)(nil)

func (ib *Inbox) cap() int {
	if ib.Cap <= 0 {
		return DefaultCap
	}
	return ib.Cap
}

// Deliver implements feed.Inbox: in one transaction, one statement counts
// the users that do not hold e yet, one INSERT adds it for the whole batch,
// and the inboxes that are then over the slack are trimmed (see Inbox).
// Idempotent: a redelivery adds and counts nothing.
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	users := idList(userIDs)
	return ib.DB.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO inbox_trim (user_id, pending)
			SELECT DISTINCT value, 1 FROM json_each(?1)
			WHERE NOT EXISTS (SELECT 1 FROM inbox WHERE user_id = value AND score = ?2 AND post_id = ?3)
			ON CONFLICT (user_id) DO UPDATE SET pending = pending + 1`, users, e.Score, e.PostID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO inbox (user_id, score, post_id)
			SELECT value, ?, ? FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, e.Score, e.PostID, users); err != nil {
			return err
		}
		return ib.trimOver(ctx, tx, users)
	})
}

// Add implements feed.Inbox: one INSERT, counted as Deliver counts, and a
// trim of the inbox if it is then over the slack.
func (ib *Inbox) Add(ctx context.Context, userID int64, entries []feed.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	pairs := make([][2]int64, len(entries))
	for i, e := range entries {
		pairs[i] = [2]int64{e.Score, e.PostID}
	}
	return ib.DB.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO inbox (user_id, score, post_id)
			SELECT ?, value ->> 0, value ->> 1 FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, userID, jsonString(pairs))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO inbox_trim (user_id, pending) VALUES (?1, ?2)
			ON CONFLICT (user_id) DO UPDATE SET pending = pending + ?2`, userID, n); err != nil {
			return err
		}
		return ib.trimOver(ctx, tx, idList([]int64{userID}))
	})
}

// trimOver trims exactly to Cap the inboxes among users (a JSON list) that
// received more than Slack(Cap) entries since their last trim.
func (ib *Inbox) trimOver(ctx context.Context, tx *sql.Tx, users string) error {
	cap := ib.cap()
	over, err := scanIDs(tx.QueryContext(ctx, `SELECT user_id FROM inbox_trim
		WHERE user_id IN (SELECT value FROM json_each(?)) AND pending > ?`, users, Slack(cap)))
	if err != nil || len(over) == 0 {
		return err
	}
	return trim(ctx, tx, over, cap, true)
}

// trimQuery deletes, from each inbox of the users in ?1 (a JSON list), the
// entries after the newest ?2 in feed order (ties cut by post id, as a page
// reads them). For each user one backward walk of the primary key finds the
// first entry to drop (offset ?2, as a JSON pair: one walk for both
// columns); then one primary-key range per user reaches the entries to
// drop, and each is deleted by its key. EXPLAIN QUERY PLAN: TestTrimPlan.
const trimQuery = `WITH cut AS MATERIALIZED (
		SELECT value AS u, (SELECT json_array(score, post_id) FROM inbox WHERE user_id = value
			ORDER BY score DESC, post_id DESC LIMIT 1 OFFSET ?2) AS c
		FROM json_each(?1))
	DELETE FROM inbox WHERE (user_id, score, post_id) IN (
		SELECT i.user_id, i.score, i.post_id FROM cut JOIN inbox i
			ON i.user_id = cut.u AND (i.score, i.post_id) <= (cut.c ->> 0, cut.c ->> 1)
		WHERE cut.c IS NOT NULL)`

// trim trims the inboxes of users exactly to cap in one DELETE and, when
// reset, records that they are not over Cap any more.
func trim(ctx context.Context, tx *sql.Tx, users []int64, cap int, reset bool) error {
	list := idList(users)
	if _, err := tx.ExecContext(ctx, trimQuery, list, cap); err != nil {
		return err
	}
	if !reset {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE inbox_trim SET pending = 0 WHERE user_id IN (SELECT value FROM json_each(?))`, list)
	return err
}

// Remove implements feed.Inbox. The counts stay: an inbox that loses
// entries is no further over the cap than they say.
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

// Trim implements feed.Inbox, exactly: the newest cap entries in feed order
// stay, ties cut by post id. A negative cap trims nothing.
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) error {
	if cap < 0 {
		return nil
	}
	return ib.DB.tx(ctx, func(tx *sql.Tx) error {
		return trim(ctx, tx, []int64{userID}, cap, cap <= ib.cap())
	})
}

// Restore implements feed.Inbox. The SQLite inbox is never lost, so this is
// Add (which keeps the cap).
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return ib.Add(ctx, userID, entries)
}
