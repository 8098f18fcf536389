// Package postgres is everything PostgreSQL does for feedd: the store of
// users, posts, follows and likes, the inbox used when feedd runs without
// Redis, and the database that River queues fan-out jobs in.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	feed "github.com/feedd/feedd"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Advisory lock keys. Every process that starts takes them before migrating,
// so processes started at once apply each migration exactly once.
const (
	migrateLockKey      int64 = 0x66656564645f6d31 // "feedd_m1"
	riverMigrateLockKey int64 = 0x66656564645f7231 // "feedd_r1"
)

// DB is an open feedd database on a PostgreSQL connection pool. Unlike
// SQLite, PostgreSQL has many concurrent writers: every method that changes
// more than one row is written so that concurrent calls cannot double count.
type DB struct {
	Pool *pgxpool.Pool

	// Enqueue inserts durable jobs (feed.FanoutJob, feed.RemoveJob,
	// feed.FollowJob) in tx. It is set by the wiring once the queue exists;
	// a store without it refuses every change that needs a job (a post, a
	// delete, a follow or unfollow that changes the graph, a block that
	// removes follows), so none is ever committed without its job.
	Enqueue func(ctx context.Context, tx pgx.Tx, jobs ...feed.Job) error

	// Notify tells the transactions of likes, follows, blocks, mutes,
	// moderation and deletes how to record notifications (notify.go).
	Notify feed.NotifySettings
	// Notified, when set, is called after the commit of every transaction
	// that created, changed or removed notification groups: the wiring
	// publishes them as live events.
	Notified func([]feed.Notice)

	noticesIn sync.Map // pgx.Tx -> *[]feed.Notice of the transaction
}

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string), applies feedd's migrations and River's, and returns
// the DB. One Open prepares everything feedd needs.
func Open(ctx context.Context, url string) (*DB, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := &DB{Pool: pool}
	if err := db.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.MigrateRiver(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the pool, waiting for connections in use to be released.
func (db *DB) Close() { db.Pool.Close() }

// baseline is the first migration: the schema feedd 0.1.0 creates. Every
// later file moves a database forward from there (CONTRIBUTING.md, "A
// migration").
const baseline = "migrations/001_baseline.sql"

// errPreRelease refuses a database that has migrations recorded but not
// the baseline: a development build before 0.1.0 made it, and there is no
// upgrade path from those.
var errPreRelease = errors.New("the database was made by a feedd older than 0.1.0 and cannot be upgraded: start from a new database")

// Migrate applies feedd's migrations that the database has not seen yet,
// each in its own transaction, recording them in feedd_schema_migrations,
// after records has readied that record and checked that this feedd may
// open the database. It is safe to run from several processes at once:
// each transaction first takes a transaction-scoped advisory lock. It does
// not touch River's schema (see MigrateRiver).
func (db *DB) Migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	pending, err := db.records(ctx, names)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, name := range pending {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("postgres: migrate %s: %w", name, err)
		}
	}
	return nil
}

// recordsTable is the record of the migrations the database has applied:
// each one's name, the release of the feedd that applied it (feed.Release)
// and when.
const recordsTable = `CREATE TABLE IF NOT EXISTS feedd_schema_migrations (
    name       TEXT        PRIMARY KEY,
    release    TEXT        NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// refuseOlder takes the place of feedd 0.1.0's record of migrations, the
// table feedd_migrations: a view whose rows raise feed.OlderRefusal, so
// that 0.1.0 stops at start with that sentence instead of running on a
// schema it does not know. Nothing else reads it.
var refuseOlder = []string{
	`CREATE FUNCTION feedd_refuse_older() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION '` + feed.OlderRefusal + `';
END $$`,
	`CREATE VIEW feedd_migrations AS SELECT feedd_refuse_older() AS name, now() AS applied_at`,
}

// records readies the record of migrations and returns the names of those
// the database lacks, in order. The first start on a database of feedd
// 0.1.0 moves its record (the table feedd_migrations) into
// feedd_schema_migrations and leaves refuseOlder in its place. It refuses,
// changing nothing, a database of a development build before 0.1.0
// (errPreRelease) and one that a newer feedd migrated, which holds
// migrations this one does not know (feed.NewerSchemaError).
func (db *DB) records(ctx context.Context, names []string) ([]string, error) {
	var pending []string
	err := db.tx(ctx, func(tx pgx.Tx) error {
		pending = nil
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return err
		}
		// Created under the lock: two CREATE TABLE IF NOT EXISTS racing
		// each other can still fail on the catalog's unique index.
		if _, err := tx.Exec(ctx, recordsTable); err != nil {
			return err
		}
		var old string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT relkind::text FROM pg_class WHERE oid = to_regclass('feedd_migrations')), '')`).Scan(&old); err != nil {
			return err
		}
		if old == "r" {
			if _, err := tx.Exec(ctx, `INSERT INTO feedd_schema_migrations (name, release, applied_at)
				SELECT name, '0.1.0', applied_at FROM feedd_migrations ON CONFLICT DO NOTHING`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DROP TABLE feedd_migrations`); err != nil {
				return err
			}
		}
		if old != "v" {
			for _, q := range refuseOlder {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
		}
		rows, err := tx.Query(ctx, `SELECT name, release FROM feedd_schema_migrations ORDER BY name`)
		if err != nil {
			return err
		}
		applied := map[string]bool{}
		newer := &feed.NewerSchemaError{File: "the database"}
		var name, release string
		_, err = pgx.ForEachRow(rows, []any{&name, &release}, func() error {
			applied[name] = true
			if !slices.Contains(names, name) {
				newer.Migrations = append(newer.Migrations, name)
				newer.Releases = append(newer.Releases, release)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(applied) > 0 && !applied[baseline] {
			return errPreRelease
		}
		if len(newer.Migrations) > 0 {
			return newer
		}
		for _, name := range names {
			if !applied[name] {
				pending = append(pending, name)
			}
		}
		return nil
	})
	return pending, err
}

// migrateFile applies the migration name and records it, in one
// transaction, unless another process just did.
func (db *DB) migrateFile(ctx context.Context, name string) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM feedd_schema_migrations WHERE name = $1)`, name).Scan(&done); err != nil {
			return err
		} else if done {
			return nil
		}
		body, err := fs.ReadFile(migrationFS, name)
		if err != nil {
			return err
		}
		// No arguments: pgx sends it with the simple protocol, which runs
		// a file of several statements.
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO feedd_schema_migrations (name, release) VALUES ($1, $2)`, name, feed.Release)
		return err
	})
}

// MigrateRiver applies River's own migrations (its job tables) with
// rivermigrate. River runs each of its migrations in a transaction of its
// own and takes no lock, so MigrateRiver holds a session advisory lock on a
// separate connection meanwhile: concurrent starts wait for each other
// instead of racing.
func (db *DB) MigrateRiver(ctx context.Context) error {
	lock, err := pgx.ConnectConfig(ctx, db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	// Closing the connection ends the session and releases the lock.
	defer lock.Close(context.WithoutCancel(ctx))
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1)`, riverMigrateLockKey); err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(db.Pool), nil)
	if err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	return nil
}

// tx runs fn in a transaction and commits it if fn returns nil; a
// transaction aborted by a deadlock or a serialization failure runs again
// (at most txAttempts in all), so fn sets its results afresh on each run.
func (db *DB) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for range txAttempts {
		if err = db.tx1(ctx, fn); !retryable(err) {
			return err
		}
	}
	return err
}

// txAttempts bounds how often tx runs a transaction that PostgreSQL
// aborted to break a deadlock or a serialization conflict.
const txAttempts = 3

// retryable reports whether err aborted a transaction that may simply run
// again: a deadlock PostgreSQL broke (40P01), a serialization failure
// (40001). Concurrent likes, unlikes and deletions of one post lock its
// row and its notification group's, and may meet so.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// tx1 runs fn in one transaction (tx's doc).
func (db *DB) tx1(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		db.flushNotices(tx, false)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		db.flushNotices(tx, false)
		return err
	}
	db.flushNotices(tx, true)
	return nil
}

func (db *DB) enqueue(ctx context.Context, tx pgx.Tx, jobs ...feed.Job) error {
	if db.Enqueue == nil {
		return errors.New("postgres: no job queue configured")
	}
	return db.Enqueue(ctx, tx, jobs...)
}

// scanEntries reads (score, post id) rows as inbox entries.
func scanEntries(rows pgx.Rows, err error) ([]feed.Entry, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (feed.Entry, error) {
		var e feed.Entry
		err := row.Scan(&e.Score, &e.PostID)
		return e, err
	})
}
