package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

// Inbox is the PostgreSQL inbox, used when feedd runs on PostgreSQL without
// Redis: table inbox, keyed (user_id, score, post_id).
//
// Cap scheme (as in sqlite.Inbox): a B-tree has no ranks, so an exact trim
// walks the cap newest entries of an inbox to find where to cut, too much
// for every delivery. Table inbox_trim counts down, per user, the room the
// inbox has left: how many more entries it may receive before it could
// hold more than Cap + feed.InboxSlack(Cap) (that many for a new inbox, feed.InboxSlack(Cap)
// after a trim). The statement that inserts a delivery's entries counts
// down the room of the inboxes it added to (a redelivery counts nothing)
// and returns those left without room; they are trimmed exactly to Cap in
// one DELETE and given feed.InboxSlack(Cap) of room again, in the same transaction.
// So an inbox never holds more than Cap + feed.InboxSlack(Cap) entries, and a trim
// costs ~5 index steps per delivery, amortised.
//
// Concurrency: a room row is locked from the delivery that counts it down
// to the commit, so trims of one inbox never overlap, and a delivery that a
// trim cannot see yet (not committed) counts down the room after the trim
// resets it. Every transaction takes its room rows in ascending user order,
// after its inserts and before its deletes, so batches over overlapping
// audiences wait for each other instead of deadlocking.
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

// sortedIDs returns ids sorted ascending. Batches insert and delete keys in
// one global order, so two batches over overlapping users (a redelivery
// racing the first delivery) wait for each other instead of deadlocking.
func sortedIDs(ids []int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

// Deliver implements feed.Inbox: one statement inserts e for the whole batch
// and counts down the room of the inboxes it was added to, returning those
// left without room; they are trimmed in the same transaction (see Inbox).
// Idempotent: a redelivery adds and counts nothing. A user without a row has
// an empty inbox; a room counted for a larger Cap is first lowered to this
// one's.
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	cap := ib.cap()
	return ib.DB.tx(ctx, func(tx pgx.Tx) error {
		over, err := scanIDs(tx.Query(ctx, `WITH added AS (
				INSERT INTO inbox (user_id, score, post_id)
				SELECT u, $2, $3 FROM unnest($1::bigint[]) WITH ORDINALITY AS t(u, n) ORDER BY n
				ON CONFLICT DO NOTHING RETURNING user_id
			), counted AS (
				INSERT INTO inbox_trim (user_id, room) SELECT user_id, $4 - 1 FROM added ORDER BY user_id
				ON CONFLICT (user_id) DO UPDATE SET room = least(inbox_trim.room, $4) - 1
				RETURNING user_id, room
			)
			SELECT user_id FROM counted WHERE room < 0 ORDER BY user_id`,
			sortedIDs(userIDs), e.Score, e.PostID, ib.room()))
		if err != nil || len(over) == 0 {
			return err
		}
		return ib.trim(ctx, tx, over, cap, true)
	})
}

// Add implements feed.Inbox: one statement inserts all entries and takes
// those it added off the inbox's room, and the inbox is trimmed if it is
// then left without room.
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
	cap := ib.cap()
	return ib.DB.tx(ctx, func(tx pgx.Tx) error {
		var room int
		err := tx.QueryRow(ctx, `WITH added AS (
				INSERT INTO inbox (user_id, score, post_id)
				SELECT $1, s, p FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS t(s, p, n) ORDER BY n
				ON CONFLICT DO NOTHING RETURNING 1
			)
			INSERT INTO inbox_trim (user_id, room) SELECT $1, $4 - count(*) FROM added HAVING count(*) > 0
			ON CONFLICT (user_id) DO UPDATE SET room = least(inbox_trim.room, $4) - ($4 - EXCLUDED.room)
			RETURNING room`, userID, scores, posts, ib.room()).Scan(&room)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && room >= 0) {
			return nil // nothing added, or room left
		} else if err != nil {
			return err
		}
		return ib.trim(ctx, tx, []int64{userID}, cap, true)
	})
}

// trimQuery deletes, from each inbox of the users in $1 (sorted), the
// entries after the newest $2 in feed order (ties cut by post id, as a page
// reads them): for each user one backward index scan finds the first entry
// to drop (offset $2), and one index range from it reaches the entries to
// drop.
const trimQuery = `WITH cut AS (
		SELECT u, c.score, c.post_id FROM unnest($1::bigint[]) AS u
		CROSS JOIN LATERAL (SELECT score, post_id FROM inbox WHERE user_id = u
			ORDER BY score DESC, post_id DESC LIMIT 1 OFFSET $2) AS c
	)
	DELETE FROM inbox i USING cut WHERE i.user_id = cut.u AND (i.score, i.post_id) <= (cut.score, cut.post_id)`

// trim trims the inboxes of users (sorted) exactly to cap in one DELETE
// and, when reset (cap is at most Cap), gives them feed.InboxSlack(Cap) of room again.
// The caller holds the room rows of users.
func (ib *Inbox) trim(ctx context.Context, tx pgx.Tx, users []int64, cap int, reset bool) error {
	if _, err := tx.Exec(ctx, trimQuery, users, cap); err != nil {
		return err
	}
	if !reset {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE inbox_trim SET room = $2 WHERE user_id = ANY($1)`, users, feed.InboxSlack(ib.cap()))
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

// Clear implements feed.Inbox: the entries and the room row go.
func (ib *Inbox) Clear(ctx context.Context, userID int64) error {
	return ib.DB.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM inbox WHERE user_id = $1`, userID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM inbox_trim WHERE user_id = $1`, userID)
		return err
	})
}

// Page implements feed.Inbox.
func (ib *Inbox) Page(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	return scanEntries(ib.DB.Pool.Query(ctx, `SELECT score, post_id FROM inbox WHERE user_id = $1
		AND score <= $2 AND (score < $2 OR $3::bigint = 0 OR post_id < $3)
		ORDER BY score DESC, post_id DESC LIMIT $4 OFFSET $5`, userID, b.Max, b.BeforeID, limit, offset))
}

// Trim implements feed.Inbox, exactly: the newest cap entries in feed order
// stay, ties cut by post id. A negative cap trims nothing. It takes the
// inbox's room row first, as Deliver's trims hold it (a user without one
// has an empty inbox, and gets one with all the room).
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) error {
	if cap < 0 {
		return nil
	}
	return ib.DB.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO inbox_trim (user_id, room) VALUES ($1, $3)
			ON CONFLICT (user_id) DO UPDATE SET room = CASE WHEN $2 THEN $4 ELSE inbox_trim.room END`,
			userID, cap <= ib.cap(), ib.room(), feed.InboxSlack(ib.cap())); err != nil {
			return err
		}
		return ib.trim(ctx, tx, []int64{userID}, cap, false)
	})
}

// Restore implements feed.Inbox. The PostgreSQL inbox is never lost, so this
// is Add (which keeps the cap).
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return ib.Add(ctx, userID, entries)
}

var _ feed.InboxLoader = (*Inbox)(nil)

// RestoreInboxes implements feed.InboxLoader as Add does for one inbox:
// one statement inserts every entry and counts down the room of each inbox
// by the entries it got, returning those left without room, which are
// trimmed in the same transaction. Keys are written in ascending order, as
// every batch writes them.
func (ib *Inbox) RestoreInboxes(ctx context.Context, inboxes []feed.UserEntries) error {
	var users, scores, posts []int64
	for _, in := range inboxes {
		for _, e := range in.Entries {
			users, scores, posts = append(users, in.UserID), append(scores, e.Score), append(posts, e.PostID)
		}
	}
	if len(users) == 0 {
		return nil
	}
	return ib.DB.tx(ctx, func(tx pgx.Tx) error {
		over, err := scanIDs(tx.Query(ctx, `WITH added AS (
				INSERT INTO inbox (user_id, score, post_id)
				SELECT u, s, p FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(u, s, p) ORDER BY u, s, p
				ON CONFLICT DO NOTHING RETURNING user_id
			), counted AS (
				INSERT INTO inbox_trim (user_id, room) SELECT user_id, $4 - count(*) FROM added GROUP BY user_id ORDER BY user_id
				ON CONFLICT (user_id) DO UPDATE SET room = least(inbox_trim.room, $4) - ($4 - EXCLUDED.room)
				RETURNING user_id, room
			)
			SELECT user_id FROM counted WHERE room < 0 ORDER BY user_id`, users, scores, posts, ib.room()))
		if err != nil || len(over) == 0 {
			return err
		}
		return ib.trim(ctx, tx, over, ib.cap(), true)
	})
}
