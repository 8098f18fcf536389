package sqlite_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/feedd/feedd/sqlite"
)

// TestUnavailable: the errors of a lock held by another connection past
// the busy timeout, and of a database that may not grow, are outages; a
// statement's own failure is not.
func TestUnavailable(t *testing.T) {
	db := open(t)
	ctx := t.Context()
	// Another connection, waiting for no lock, finds the writer's.
	other, err := sql.Open("sqlite", "file:"+db.Path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := db.Write.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	_, busy := other.ExecContext(ctx, `INSERT INTO ready_probe (id, at) VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET at = 0`)
	tx.Rollback()
	if busy == nil || !sqlite.Unavailable(busy) {
		t.Errorf("a write under another connection's lock: %v, Unavailable false", busy)
	}

	// The writer may not grow: a write that needs a page is SQLITE_FULL.
	var pages int64
	if err := db.Write.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	_, full := db.Write.ExecContext(ctx, `CREATE TABLE filler AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 10000) SELECT i, randomblob(100) AS b FROM n`)
	if full == nil || !sqlite.Unavailable(full) {
		t.Errorf("a write past max_page_count: %v, Unavailable false", full)
	}
	if _, err := db.Write.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}

	// A statement's own error is a fault.
	_, bad := db.Write.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
	if bad == nil || sqlite.Unavailable(bad) {
		t.Errorf("a statement on a missing table: %v, Unavailable true", bad)
	}
	if sqlite.Unavailable(nil) {
		t.Error("Unavailable(nil)")
	}
}
