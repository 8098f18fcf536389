package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
)

// InboxFile is the name of the inboxes' database file, beside feedd.db.
const InboxFile = "inbox.db"

// OpenInbox opens (creating if needed) the inboxes' own database, inbox.db
// in dir, private as OpenOptions makes feedd.db, and moves into it the
// inbox entries that an earlier feedd kept in main's file (main: the
// feedd.db of dir, already open).
//
// Why a file of their own: SQLite has one writer per file. With the
// inboxes in feedd.db, every delivery waited in line behind the API's
// writes (posts, likes, follows, sessions), so under load the fan-out fell
// behind while the API still answered (BENCHMARKS.md, "Overload"). Inboxes
// are derived data, written only by fan-out and by a returning user's
// regeneration, and never in a transaction with anything else: in their
// own file they have a writer of their own, and the two writers run side
// by side. The durability is feedd.db's (the same Options): a delivery is
// committed before its job is, as before.
//
// The Inbox type works on either file: feedd.db keeps the inbox tables of
// its migrations (empty once moved), which tests that need one file use.
func OpenInbox(ctx context.Context, dir string, o Options, main *DB) (*DB, error) {
	db, err := openPrivate(ctx, dir, InboxFile, o, inboxSchema)
	if err != nil {
		return nil, err
	}
	if main != nil {
		if err := db.adopt(ctx, main); err != nil {
			db.Close()
			return nil, fmt.Errorf("move inboxes from %s: %w", main.Path, err)
		}
		if err := db.pair(ctx, main); err != nil {
			db.Close()
			return nil, fmt.Errorf("pair %s with %s: %w", db.Path, main.Path, err)
		}
	}
	return db, nil
}

// pair checks that db is main's inbox file, and makes it so when it is not.
// The two files name each other by a random id (feedd.db's feedd_meta
// inbox_file, inbox.db's inbox_meta id), written when they first meet. A
// mismatch means the inboxes are not those of main's posts and follows:
// feedd.db was restored from a backup without its inbox.db, or inbox.db
// was lost or comes from another feedd.db. The inboxes are derived data,
// so feedd then empties inbox.db and marks every user inactive (active_at
// 0): fan-out skips them until they come back, and their first request
// regenerates their inbox from the source of truth, as for any user back
// after --active-days (Service.touch). Regenerated is set then.
func (db *DB) pair(ctx context.Context, main *DB) error {
	var mainID, ownID string
	if err := main.readRow(ctx, `SELECT coalesce((SELECT value FROM feedd_meta WHERE key = 'inbox_file'), '')`).Scan(&mainID); err != nil {
		return err
	}
	if err := db.readRow(ctx, `SELECT coalesce((SELECT value FROM inbox_meta WHERE key = 'id'), '')`).Scan(&ownID); err != nil {
		return err
	}
	if mainID != "" && mainID == ownID {
		return nil
	}
	// Both unnamed: the first start with inbox.db, on a new database or on
	// one whose inboxes adopt just moved here. Anything else: regenerate.
	stale := mainID != "" || ownID != ""
	id := rand.Text()
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if stale {
			for _, q := range []string{`DELETE FROM inbox`, `DELETE FROM inbox_trim`} {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO inbox_meta (key, value) VALUES ('id', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id)
		return err
	})
	if err != nil {
		return err
	}
	// A crash here leaves the ids different: the next start does it again.
	return main.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if stale {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET active_at = 0`); err != nil {
				return err
			}
			db.Regenerated = true
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO feedd_meta (key, value) VALUES ('inbox_file', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id)
		return err
	})
}

// adopt moves main's inbox rows (entries and rooms) into db. Copying is
// idempotent (a row already here stays; a room takes the smaller count),
// and main's rows are deleted only after db's copy is committed, so a
// crash anywhere in between leaves every entry in at least one file and
// the next start finishes the move. With nothing to move it costs one probe.
func (db *DB) adopt(ctx context.Context, main *DB) error {
	var any int
	if err := main.Read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM inbox) OR EXISTS (SELECT 1 FROM inbox_trim)`).Scan(&any); err != nil || any == 0 {
		return err
	}
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS old`, main.Path); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE old`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`INSERT OR IGNORE INTO main.inbox (user_id, score, post_id) SELECT user_id, score, post_id FROM old.inbox`,
		`INSERT INTO main.inbox_trim (user_id, room) SELECT user_id, room FROM old.inbox_trim WHERE true
			ON CONFLICT (user_id) DO UPDATE SET room = min(room, excluded.room)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return main.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM inbox`, `DELETE FROM inbox_trim`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}
