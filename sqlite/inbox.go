package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	feed "github.com/feedd/feedd"
)

// Inbox is the embedded inbox: table inbox, keyed (user_id, score, post_id).
//
// Cap scheme: a B-tree has no ranks, so an exact trim walks the cap newest
// entries of an inbox (one index range, read backwards) to find where to
// cut; doing that on every delivery would cost ~cap index steps each.
// Instead table inbox_trim counts down, per user, the room the inbox has
// left: how many more entries it may receive before it could hold more than
// Cap + feed.InboxSlack(Cap) (that many for a new inbox, feed.InboxSlack(Cap) after a trim).
// Each delivery counts down the users of its batch (one statement), and the
// users whose room went below 0, found through a partial index that holds
// only them (inbox_trim_due: finding them costs nothing when there are
// none), are trimmed exactly to Cap (one DELETE for all of them) and given
// feed.InboxSlack(Cap) of room again, in the same transaction. An inbox thus never
// holds more than Cap + feed.InboxSlack(Cap) entries, a hard bound unlike Redis's
// hashed choice of trims (redis.Inbox.Deliver), and a trim costs
// ~(Cap+Slack)/Slack index steps per delivery: 5. The count is what costs:
// one more row written per delivery (BENCHMARKS.md). A redelivery counts
// too (counting only the users that lack the entry would cost a probe per
// user), which only brings a trim forward.
//
// After --inbox-cap is lowered, an inbox that held more is trimmed to the
// new cap within Cap + feed.InboxSlack(Cap) deliveries.
type Inbox struct {
	DB *DB
	// Cap is how many entries each inbox keeps (0: feed.DefaultInboxCap); an inbox
	// holds at most Cap + feed.InboxSlack(Cap).
	Cap int
}

var _ feed.Inbox = (*Inbox)(nil)

func (ib *Inbox) cap() int {
	if ib.Cap <= 0 {
		return feed.DefaultInboxCap
	}
	return ib.Cap
}

// room is the most room an inbox has: that of a new one.
func (ib *Inbox) room() int { return ib.cap() + feed.InboxSlack(ib.cap()) }

// Deliver implements feed.Inbox: in one transaction, one INSERT adds e for
// the whole batch, one statement counts down their room, and the inboxes
// left without room are trimmed (see Inbox). Idempotent.
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	users := idList(userIDs)
	return ib.DB.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// OR IGNORE rather than ON CONFLICT DO NOTHING: a statement that
		// cannot abort needs no statement journal, which in a transaction
		// would first copy every page the batch writes (one per inbox).
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO inbox (user_id, score, post_id)
			SELECT value, ?, ? FROM json_each(?)`, e.Score, e.PostID, users); err != nil {
			return err
		}
		if err := ib.countDown(ctx, tx, users, 1); err != nil {
			return err
		}
		return ib.trimDue(ctx, tx)
	})
}

// countDownQuery takes ?3 entries off the room of the inboxes of the users
// in ?1 (a JSON list), whose most room is ?2: a new inbox starts with all
// of it (a user without a row has an empty inbox), and a room counted for a
// larger Cap is first lowered to this one's.
const countDownQuery = `INSERT INTO inbox_trim (user_id, room)
	SELECT value, ?2 - ?3 FROM json_each(?1) WHERE true
	ON CONFLICT (user_id) DO UPDATE SET room = min(room, ?2) - ?3`

func (ib *Inbox) countDown(ctx context.Context, tx *sql.Tx, users string, n int64) error {
	_, err := tx.ExecContext(ctx, countDownQuery, users, ib.room(), n)
	return err
}

// Add implements feed.Inbox: one INSERT, whose new entries are taken off the
// inbox's room, and a trim of the inbox if it is then left without room.
func (ib *Inbox) Add(ctx context.Context, userID int64, entries []feed.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	pairs := make([][2]int64, len(entries))
	for i, e := range entries {
		pairs[i] = [2]int64{e.Score, e.PostID}
	}
	return ib.DB.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO inbox (user_id, score, post_id)
			SELECT ?, value ->> 0, value ->> 1 FROM json_each(?)`, userID, jsonString(pairs))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if err := ib.countDown(ctx, tx, idList([]int64{userID}), n); err != nil {
			return err
		}
		return ib.trimDue(ctx, tx)
	})
}

// dueQuery lists the users whose inbox is left without room: a scan of the
// partial index inbox_trim_due, which holds only them (named: without
// statistics the planner may prefer a scan of the table).
const dueQuery = `SELECT user_id FROM inbox_trim INDEXED BY inbox_trim_due WHERE room < 0`

// trimDue trims exactly to Cap the inboxes left without room: those that
// the caller just counted down, since every transaction that leaves an
// inbox without room trims it.
func (ib *Inbox) trimDue(ctx context.Context, tx *sql.Tx) error {
	due, err := scanIDs(tx.QueryContext(ctx, dueQuery))
	if err != nil || len(due) == 0 {
		return err
	}
	return ib.trim(ctx, tx, due, ib.cap(), true)
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
// reset (cap is at most Cap), gives them feed.InboxSlack(Cap) of room again.
func (ib *Inbox) trim(ctx context.Context, tx *sql.Tx, users []int64, cap int, reset bool) error {
	list := idList(users)
	if _, err := tx.ExecContext(ctx, trimQuery, list, cap); err != nil || !reset {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE inbox_trim SET room = ? WHERE user_id IN (SELECT value FROM json_each(?))`,
		feed.InboxSlack(ib.cap()), list)
	return err
}

// Remove implements feed.Inbox. The rooms stay: an inbox that loses
// entries has at least the room it is counted to have.
func (ib *Inbox) Remove(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := ib.DB.exec(ctx, `DELETE FROM inbox WHERE score = ? AND post_id = ?
		AND user_id IN (SELECT value FROM json_each(?))`, e.Score, e.PostID, idList(userIDs))
	return err
}

// Clear implements feed.Inbox: the entries and the room row go.
func (ib *Inbox) Clear(ctx context.Context, userID int64) error {
	return ib.DB.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM inbox WHERE user_id = ?`, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM inbox_trim WHERE user_id = ?`, userID)
		return err
	})
}

// inboxPageQuery is a page of Inbox.Page: ?1 the user, ?2 and ?3 the
// bound, ?4 the limit and ?5 the offset.
const inboxPageQuery = `SELECT score, post_id FROM inbox WHERE user_id = ?1
		AND score <= ?2 AND (score < ?2 OR ?3 = 0 OR post_id < ?3)
		ORDER BY score DESC, post_id DESC LIMIT ?4 OFFSET ?5`

// pageRowsMax is the largest limit Inbox.Page reads as rows; a larger page
// (a first ranked page reads 150 entries) comes as one row, the entries
// concatenated: database/sql's cost per row (Next, Scan) is most of such a
// read.
const pageRowsMax = 32

// inboxRowsQuery is inboxPageQuery for the pages read as rows: its limit
// is pageRowsMax, written in the statement, and Page stops reading at the
// page's own. SQLite takes a bound LIMIT into account when it plans, so a
// statement whose LIMIT parameter changes from one run to the next is
// compiled again each time (about twice the cost of a 10-entry page on
// this package's benchmark machine: BENCHMARKS.md, "SQLite
// inboxes"); pages of various sizes (clients' limits, the page loop's
// refills) share this one plan.
var inboxRowsQuery = strings.Replace(inboxPageQuery, "LIMIT ?4 OFFSET ?5", "LIMIT "+strconv.Itoa(pageRowsMax)+" OFFSET ?4", 1)

// Page implements feed.Inbox.
func (ib *Inbox) Page(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	if limit <= pageRowsMax {
		rows, err := ib.DB.read(ctx, inboxRowsQuery, userID, b.Max, b.BeforeID, offset)
		return scanEntriesMax(rows, err, limit)
	}
	// Two aggregates over the same rows see them in the same order, so the
	// i-th score and the i-th post id are one entry's: cheaper than one
	// concatenated string per entry.
	var scores, ids sql.NullString
	err := ib.DB.readRow(ctx, `SELECT group_concat(score), group_concat(post_id) FROM (`+inboxPageQuery+`)`,
		userID, b.Max, b.BeforeID, limit, offset).Scan(&scores, &ids)
	if err != nil {
		return nil, err
	}
	return parseEntries(scores.String, ids.String, limit)
}

// parseEntries parses the scores and post ids of at most n entries,
// listed by group_concat over the same rows (so the i-th of each are one
// entry's), in feed order.
func parseEntries(s, p string, n int) ([]feed.Entry, error) {
	if s == "" && p == "" {
		return []feed.Entry{}, nil
	}
	out := make([]feed.Entry, 0, min(n, strings.Count(s, ",")+1))
	for s != "" || p != "" {
		var e feed.Entry
		var err1, err2 error
		e.Score, s, err1 = cutInt(s, ',')
		e.PostID, p, err2 = cutInt(p, ',')
		if err := cmp.Or(err1, err2); err != nil {
			return nil, fmt.Errorf("sqlite: inbox page: %w", err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, feed.CompareEntries) // group_concat promises no order
	return out, nil
}

// Trim implements feed.Inbox, exactly: the newest cap entries in feed order
// stay, ties cut by post id. A negative cap trims nothing.
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) error {
	if cap < 0 {
		return nil
	}
	return ib.DB.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return ib.trim(ctx, tx, []int64{userID}, cap, cap <= ib.cap())
	})
}

// Restore implements feed.Inbox. The SQLite inbox is never lost, so this is
// Add (which keeps the cap).
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return ib.Add(ctx, userID, entries)
}

var _ feed.InboxLoader = (*Inbox)(nil)

// restoreRows is how many entries one INSERT of RestoreInboxes writes.
const restoreRows = 300

// restoreQuery inserts restoreRows entries, given as parameters: cheaper
// than the same rows taken from a JSON list (whose extraction is most of
// the work of such a simple insert) or inserted one statement each.
var restoreQuery = `INSERT OR IGNORE INTO inbox (user_id, score, post_id) VALUES ` +
	strings.TrimSuffix(strings.Repeat("(?, ?, ?),", restoreRows), ",")

// RestoreInboxes implements feed.InboxLoader in one transaction: INSERTs
// of restoreRows entries (and one each for the rest), one count-down of
// the rooms (each inbox by its number of entries, as if all were new: a
// redelivered one only brings a trim forward), and the trims due.
func (ib *Inbox) RestoreInboxes(ctx context.Context, inboxes []feed.UserEntries) error {
	var rows []any
	var counts [][2]int64
	for _, in := range inboxes {
		if len(in.Entries) == 0 {
			continue
		}
		for _, e := range in.Entries {
			rows = append(rows, in.UserID, e.Score, e.PostID)
		}
		counts = append(counts, [2]int64{in.UserID, int64(len(in.Entries))})
	}
	if len(rows) == 0 {
		return nil
	}
	return ib.DB.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for rest := rows; len(rest) > 0; {
			q, n := restoreQuery, 3*restoreRows
			if len(rest) < n {
				q, n = `INSERT OR IGNORE INTO inbox (user_id, score, post_id) VALUES (?, ?, ?)`, 3
			}
			if _, err := tx.ExecContext(ctx, q, rest[:n]...); err != nil {
				return err
			}
			rest = rest[n:]
		}
		// As countDownQuery, with each user's own count: excluded.room is
		// ?2 less that count.
		if _, err := tx.ExecContext(ctx, `INSERT INTO inbox_trim (user_id, room)
			SELECT value ->> 0, ?2 - (value ->> 1) FROM json_each(?1) WHERE true
			ON CONFLICT (user_id) DO UPDATE SET room = min(room, ?2) - (?2 - excluded.room)`, jsonString(counts), ib.room()); err != nil {
			return err
		}
		return ib.trimDue(ctx, tx)
	})
}
