package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// cacheState returns, for the one connection of pool, the statements it
// keeps and the free ones of query.
func cacheState(t *testing.T, pool *sql.DB, query string) (kept, free int) {
	t.Helper()
	conn, err := pool.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		kept, free = c.kept, len(c.free[query])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept, free
}

func openCachedFile(t *testing.T) *sql.DB {
	t.Helper()
	pool, err := openCached(dsn(filepath.Join(t.TempDir(), "cache.db"), false, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1)
	t.Cleanup(func() {
		if err := pool.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if _, err := pool.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

// TestStatementCacheReuses: a statement run many times, in and out of
// transactions, by Exec, Query and QueryRow, is prepared once.
func TestStatementCacheReuses(t *testing.T) {
	pool := openCachedFile(t)
	const ins = `INSERT INTO t (k, v) VALUES (?, ?)`
	const sel = `SELECT v FROM t WHERE k = ?`
	kept0, _ := cacheState(t, pool, ins)
	for i := range 50 {
		if _, err := pool.Exec(ins, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 100; i++ {
		if _, err := tx.Exec(ins, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		var v string
		if err := pool.QueryRow(sel, i).Scan(&v); err != nil || v != fmt.Sprint("v", i) {
			t.Fatalf("row %d: %q, %v", i, v, err)
		}
	}
	kept, free := cacheState(t, pool, ins)
	if kept-kept0 != 2 || free != 1 {
		t.Errorf("kept %d more statements, %d free for the insert; want 2 (insert, select) and 1", kept-kept0, free)
	}
}

// TestStatementCacheNested: a statement run again while its rows are still
// being read (a second caller of the same text) gets a statement of its
// own, and neither reading disturbs the other.
func TestStatementCacheNested(t *testing.T) {
	pool := openCachedFile(t)
	for i := range 10 {
		if _, err := pool.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	const q = `SELECT k FROM t WHERE k >= ? ORDER BY k`
	tx, err := pool.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.Query(q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var k int
		if err := outer.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
		var n int
		inner, err := tx.Query(q, k)
		if err != nil {
			t.Fatal(err)
		}
		for inner.Next() {
			n++
		}
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 10-k {
			t.Errorf("from %d: %d rows, want %d", k, n, 10-k)
		}
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("outer read %v, want 0-9", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, free := cacheState(t, pool, q); free != 2 {
		t.Errorf("%d free statements of the query, want 2 (the outer one and the inner one)", free)
	}
}

// TestStatementCacheBounded: past maxCached statements a connection keeps
// no more, and the statements it does not keep still run.
func TestStatementCacheBounded(t *testing.T) {
	pool := openCachedFile(t)
	for i := range maxCached + 20 {
		var n int
		if err := pool.QueryRow(fmt.Sprintf(`SELECT count(*) + %d FROM t`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("query %d: %d, %v", i, n, err)
		}
	}
	if kept, _ := cacheState(t, pool, ""); kept != maxCached {
		t.Errorf("kept %d statements, want the most, %d", kept, maxCached)
	}
}

// TestStatementCacheErrors: a statement that fails (a constraint) is put
// back reset and runs again; a text that does not parse is not kept.
func TestStatementCacheErrors(t *testing.T) {
	pool := openCachedFile(t)
	const ins = `INSERT INTO t (k, v) VALUES (?, ?)`
	if _, err := pool.Exec(ins, 1, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ins, 1, "b"); err == nil {
		t.Fatal("a duplicate key was inserted")
	}
	if _, err := pool.Exec(ins, 2, "c"); err != nil {
		t.Fatalf("the statement after its failure: %v", err)
	}
	kept0, _ := cacheState(t, pool, "")
	if _, err := pool.Exec(`INSERT INTO nowhere VALUES (1)`); err == nil {
		t.Fatal("an insert into a missing table ran")
	}
	if kept, _ := cacheState(t, pool, ""); kept != kept0 {
		t.Errorf("a statement that did not prepare is kept (%d -> %d)", kept0, kept)
	}
}
