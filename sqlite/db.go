// Package sqlite is everything SQLite does for feedd: the embedded store of
// users, posts, follows and likes, the embedded inbox, and the database that
// River's SQLite driver queues fan-out jobs in.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go driver, registered as "sqlite"

	feed "github.com/feedd/feedd"
)

//go:embed migrations/*.sql inbox_migrations/*.sql
var migrationFS embed.FS

// migrations is the directory of one kind of database file's migrations,
// applied in the order of their names: feedd.db's (migrations/) or
// inbox.db's (inbox_migrations/). Each starts with 001_baseline.sql, the
// schema feedd 0.1.0 creates; every later file moves a database forward
// from there (CONTRIBUTING.md, "A migration").
type migrations string

const (
	mainSchema  migrations = "migrations"       // feedd.db
	inboxSchema migrations = "inbox_migrations" // inbox.db: the inboxes alone
)

// baseline is the first migration of every kind of file.
const baseline = "001_baseline.sql"

// errPreRelease refuses a file that has migrations recorded but not the
// baseline: a development build before 0.1.0 made it, and there is no
// upgrade path from those.
var errPreRelease = errors.New("the database was made by a feedd older than 0.1.0 and cannot be upgraded: start from a new data directory")

// DB is an open feedd database. SQLite allows one writer at a time, so it
// keeps two pools on one file: Write, with a single connection whose
// transactions take the write lock at BEGIN (River uses this pool too), and
// Read, with several connections that read concurrently under WAL.
type DB struct {
	Path  string
	Write *sql.DB
	Read  *sql.DB

	// Enqueue inserts durable jobs (feed.FanoutJob, feed.RemoveJob,
	// feed.FollowJob) in tx. It is set by the wiring once the queue exists;
	// a store without it refuses every change that needs a job (a post, a
	// delete, a follow or unfollow that changes the graph, a block that
	// removes follows), so none is ever committed without its job.
	Enqueue func(ctx context.Context, tx *sql.Tx, jobs ...feed.Job) error
	// Enqueued, when set, is called after the commit of every transaction
	// in which Enqueue inserted jobs, with those jobs: the wiring wakes
	// the workers of their queues with it.
	Enqueued func(jobs []feed.Job)

	enqueuedIn sync.Map // *sql.Tx -> *[]feed.Job: the jobs Enqueue inserted in the transaction

	// Notify tells the transactions of likes, follows, blocks, mutes,
	// moderation and deletes how to record notifications (notify.go).
	Notify feed.NotifySettings
	// Notified, when set, is called after the commit of every transaction
	// that created, changed or removed notification groups: the wiring
	// publishes them as live events.
	Notified func([]feed.Notice)

	noticesIn sync.Map // *sql.Tx -> *[]feed.Notice of the transaction

	// Regenerated is set by OpenInbox on an inbox.db that it found did
	// not belong to its feedd.db and emptied (see DB.pair).
	Regenerated bool

	// commit queues feedd's own writes (commit.go): only the one running
	// them waits for the writer connection, the others wait in order, and
	// those queued together share a commit. River's queries (fetch,
	// complete) use the pool directly, so the job queue never waits behind
	// more than one batch of API writes. Were the API's writes queued in
	// the pool, which hands the connection to a random one of its waiters,
	// the workers' fetch would wait its turn among all of them: under load
	// the fan-out stopped while the API still said yes (BENCHMARKS.md, "Overload").
	commit committer
}

// Options tune an opened database.
type Options struct {
	// Synchronous is SQLite's synchronous level: "FULL" (the default: a
	// committed transaction survives a power loss, as WAL mode syncs the
	// log at every commit) or "NORMAL" (faster: the last commits before a
	// power loss may be lost, though the database stays consistent). With
	// FULL, writes made at the same time share commits, and so the sync
	// (commit.go).
	Synchronous string
	// Bulk tunes the writer connection for a bulk load (feedd import): a
	// page cache of 512 MiB instead of SQLite's 2 MiB, and a WAL checkpoint
	// every 100,000 pages (400 MiB) instead of every 1,000. A load that
	// inserts into large B-trees out of key order reads each page back
	// from the file otherwise, and copies each page it dirtied into the
	// database at every checkpoint (feedtest.BenchImportFollows measures
	// both; BENCHMARKS.md, "Importing from hmdp").
	Bulk bool
}

// BusyTimeout is how long a statement waits for a lock another process
// holds (an operator's sqlite3 in a write transaction) before it fails with
// SQLITE_BUSY, which the API answers 503 (Unavailable). Within feedd the
// writer is one connection, so only other processes make it wait; their
// writes take milliseconds. A write may wait for a few such timeouts when
// the job queue's queries, on the same writer, wait their turn too: short
// enough that the answer comes well within the server's 30 s write
// timeout.
const BusyTimeout = 5 * time.Second

func dsn(path string, readOnly bool, o Options) string {
	sync := "FULL"
	if o.Synchronous == "NORMAL" {
		sync = "NORMAL"
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_txlock", "immediate")
		if o.Bulk {
			q.Add("_pragma", "cache_size(-524288)") // KiB
			q.Add("_pragma", "wal_autocheckpoint(100000)")
		}
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database file feedd.db in dir and
// applies the migrations, with the default Options.
func Open(ctx context.Context, dir string) (*DB, error) {
	return OpenOptions(ctx, dir, Options{})
}

// OpenOptions is Open with options. The directory is made private (0700)
// and the database's files (feedd.db, -wal, -shm) are 0600 whatever the
// umask: they hold phone numbers and sessions.
func OpenOptions(ctx context.Context, dir string, o Options) (*DB, error) {
	return openPrivate(ctx, dir, "feedd.db", o, mainSchema)
}

// openPrivate opens (creating if needed) the database file name in dir,
// private as OpenOptions says, and applies the migrations of schema.
func openPrivate(ctx context.Context, dir, name string, o Options, schema migrations) (*DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make data directory private: %w", err)
	}
	path := filepath.Join(dir, name)
	// SQLite gives the -wal and -shm files the mode of the database file,
	// so creating that one 0600 first covers all three.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create database file: %w", err)
	}
	err = f.Chmod(0o600)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("make database file private: %w", err)
	}
	db, err := openFile(ctx, path, o, schema)
	if err != nil {
		return nil, err
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(side); err == nil && fi.Mode().Perm() != 0o600 {
			if err := os.Chmod(side, 0o600); err != nil {
				db.Close()
				return nil, fmt.Errorf("make %s private: %w", side, err)
			}
		}
	}
	return db, nil
}

// OpenFile opens the database at path and applies the migrations.
func OpenFile(ctx context.Context, path string) (*DB, error) {
	return openFile(ctx, path, Options{}, mainSchema)
}

func openFile(ctx context.Context, path string, o Options, schema migrations) (*DB, error) {
	w, err := openCached(dsn(path, false, o))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	db := &DB{Path: path, Write: w}
	if err := db.migrate(ctx, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	r, err := openCached(dsn(path, true, o))
	if err != nil {
		w.Close()
		return nil, err
	}
	n := max(4, runtime.GOMAXPROCS(0)*2)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.Read = r
	return db, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.Read.Close(), db.Write.Close())
}

// migrate applies the migrations of schema that the file has not seen,
// each in a transaction of its own that records it in
// feedd_schema_migrations, after records has readied that record and
// checked that this feedd may open the file.
func (db *DB) migrate(ctx context.Context, schema migrations) error {
	names, err := fs.Glob(migrationFS, string(schema)+"/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	pending, err := db.records(ctx, schema, names)
	if err != nil {
		return err
	}
	for _, name := range pending {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// recordsTable is the record of the migrations a file has applied: each
// one's name, the release of the feedd that applied it (feed.Release) and
// when (Unix ms; 0 when feedd 0.1.0 applied it).
const recordsTable = `CREATE TABLE IF NOT EXISTS feedd_schema_migrations (
    name       TEXT    PRIMARY KEY,
    release    TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)`

// refuseOlder takes the place of feedd 0.1.0's record of migrations, the
// table feedd_migrations: a view that calls a function SQLite does not
// have, named by the sentence feedd.OlderRefusal, so that 0.1.0 stops at
// start with "no such function: this database was upgraded by feedd 0.2.0
// or later ..." instead of running on a schema it does not know. Nothing
// else reads it; ALTER TABLE and the sqlite3 shell work as without it.
const refuseOlder = `CREATE VIEW feedd_migrations AS SELECT [` + feed.OlderRefusal + `]() AS name`

// records readies the record of migrations and returns the names of
// those the file lacks, in order. The first start on a file of feedd 0.1.0
// moves its record (the table feedd_migrations) into
// feedd_schema_migrations and leaves refuseOlder in its place. It refuses,
// changing nothing, a file of a development build before 0.1.0
// (errPreRelease) and one that a newer feedd migrated, which holds
// migrations this one does not know (feed.NewerSchemaError).
func (db *DB) records(ctx context.Context, schema migrations, names []string) ([]string, error) {
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, recordsTable); err != nil {
		return nil, err
	}
	var old string
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT type FROM sqlite_schema WHERE name = 'feedd_migrations'), '')`).Scan(&old); err != nil {
		return nil, err
	}
	if old == "table" {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO feedd_schema_migrations (name, release, applied_at)
			SELECT name, '0.1.0', 0 FROM feedd_migrations`); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `DROP TABLE feedd_migrations`); err != nil {
			return nil, err
		}
	}
	if old != "view" {
		if _, err := tx.ExecContext(ctx, refuseOlder); err != nil {
			return nil, err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, release FROM feedd_schema_migrations ORDER BY name`)
	if err != nil {
		return nil, err
	}
	applied := map[string]bool{}
	newer := &feed.NewerSchemaError{File: filepath.Base(db.Path)}
	for rows.Next() {
		var name, release string
		if err := rows.Scan(&name, &release); err != nil {
			rows.Close()
			return nil, err
		}
		applied[name] = true
		if !slices.Contains(names, name) {
			newer.Migrations = append(newer.Migrations, name)
			newer.Releases = append(newer.Releases, release)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(applied) > 0 && !applied[string(schema)+"/"+baseline] {
		return nil, errPreRelease
	}
	if len(newer.Migrations) > 0 {
		return nil, newer
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	var pending []string
	for _, name := range names {
		if !applied[name] {
			pending = append(pending, name)
		}
	}
	return pending, nil
}

// migrateFile applies the migration name and records it, in one
// transaction, unless another process on the same file just did.
func (db *DB) migrateFile(ctx context.Context, name string) error {
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM feedd_schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	body, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO feedd_schema_migrations (name, release, applied_at) VALUES (?, ?, ?)`,
		name, feed.Release, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// read runs a query on the read pool. Its connections keep their
// prepared statements (stmtcache.go): SQLite spends much of a small query
// parsing and planning its text, a large share of feedd's CPU under a
// feed-read load (BENCHMARKS.md, "Overload").
func (db *DB) read(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.Read.QueryContext(ctx, query, args...)
}

// readRow is read for one row.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	return db.Read.QueryRowContext(ctx, query, args...)
}

// exec runs one write statement, as a transaction of tx.
func (db *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// idList encodes ids as a JSON array: queries take a whole list as one
// parameter and expand it with json_each, so a batch is one statement.
func idList(ids []int64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// scanEntries reads (score, post id) rows as inbox entries.
func scanEntries(rows *sql.Rows, err error) ([]feed.Entry, error) {
	return scanEntriesMax(rows, err, -1)
}

// scanEntriesMax is scanEntries of at most max rows (all when negative).
func scanEntriesMax(rows *sql.Rows, err error, max int) ([]feed.Entry, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []feed.Entry{}
	for len(out) != max && rows.Next() {
		var e feed.Entry
		if err := rows.Scan(&e.Score, &e.PostID); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
