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
// in dir, private as OpenOptions makes feedd.db, and pairs it with main
// (the feedd.db of dir, already open; nil: no pairing, for tools that
// only read or write inboxes).
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
// The Inbox type works on either file: feedd.db has the inbox tables too,
// which tests that need one file use.
func OpenInbox(ctx context.Context, dir string, o Options, main *DB) (*DB, error) {
	db, err := openPrivate(ctx, dir, InboxFile, o, inboxSchema)
	if err != nil {
		return nil, err
	}
	if main != nil {
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
	// Both unnamed: the first start, on a new data directory. Anything
	// else: regenerate.
	stale := mainID != "" || ownID != ""
	id := rand.Text()
	err := db.tx(ctx, func(tx *sql.Tx) error {
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
	return main.tx(ctx, func(tx *sql.Tx) error {
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
