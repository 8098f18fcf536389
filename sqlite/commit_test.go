package sqlite

// Group commit (commit.go) is tested from inside the package: the tests
// hold the writer with one write, queue others behind it in a known order,
// and look at what each caller gets and what the file keeps.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openCommitTest opens a fresh feedd.db with a table of its own, gc (k
// unique), and gc_child, whose parent is a row of gc.
func openCommitTest(t *testing.T) *DB {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE gc (k TEXT PRIMARY KEY, writer INTEGER NOT NULL)`,
		`CREATE TABLE gc_child (k TEXT PRIMARY KEY, parent TEXT NOT NULL REFERENCES gc (k))`,
	} {
		if _, err := db.exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func insert(ctx context.Context, tx *sql.Tx, k string, writer int) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO gc (k, writer) VALUES (?, ?)`, k, writer)
	return err
}

// keys returns the keys of gc as the read pool sees them.
func keys(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	out, err := readKeys(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readKeys(ctx context.Context, db *DB) (map[string]bool, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT k FROM gc`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// holdWriter starts a write that keeps the writer until release is
// called, and returns once it runs: writes started meanwhile queue.
func holdWriter(t *testing.T, db *DB) (release func(), done <-chan error) {
	t.Helper()
	started, hold, out := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		out <- db.tx(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(started)
			<-hold
			return insert(context.Background(), tx, "held", 0)
		})
	}()
	<-started
	return sync.OnceFunc(func() { close(hold) }), out
}

// queued waits until n writes wait in db's queue.
func queued(t *testing.T, db *DB, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		db.commit.mu.Lock()
		got := len(db.commit.queue)
		db.commit.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
	}
}

// recv is the result on ch, or a failure after a while: a write that never
// returns is a bug, not a hung test.
func recv(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("a write did not return")
		return nil
	}
}

// start runs fn as a write in a goroutine of its own, once the k writes
// before it are queued, and returns its result's channel.
func start(t *testing.T, db *DB, k int, ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) <-chan error {
	t.Helper()
	queued(t, db, k)
	out := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				out <- fmt.Errorf("panic: %v", p)
			}
		}()
		out <- db.tx(ctx, fn)
	}()
	queued(t, db, k+1)
	return out
}

func TestGroupCommitBatch(t *testing.T) {
	db := openCommitTest(t)
	db.commit.work = time.Hour // one batch, however slow the machine
	ctx := t.Context()
	release, held := holdWriter(t, db)
	commits := db.commit.commits.Load()

	errOwn := errors.New("refused by its function")
	var sawA, aCommitted bool
	var cancelledRan atomic.Bool
	a := start(t, db, 0, ctx, func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "a", 1) })
	dup := start(t, db, 1, ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert(ctx, tx, "dup-1", 2); err != nil {
			return err
		}
		return insert(ctx, tx, "a", 2) // a UNIQUE violation: a's row is there
	})
	c := start(t, db, 2, ctx, func(ctx context.Context, tx *sql.Tx) error {
		// a's row, uncommitted, is in this transaction and not yet on disk.
		var n, m int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM gc WHERE k = 'a'`).Scan(&n); err != nil {
			return err
		}
		if err := db.Read.QueryRowContext(ctx, `SELECT count(*) FROM gc WHERE k = 'a'`).Scan(&m); err != nil {
			return err
		}
		sawA, aCommitted = n == 1, m == 1
		return insert(ctx, tx, "c", 3)
	})
	cctx, cancel := context.WithCancel(ctx)
	cancelled := start(t, db, 3, cctx, func(ctx context.Context, tx *sql.Tx) error {
		cancelledRan.Store(true)
		return insert(ctx, tx, "cancelled", 4)
	})
	cancel()
	if err := recv(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("write cancelled while queued: %v, want context.Canceled", err)
	}
	own := start(t, db, 3, ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert(ctx, tx, "own", 5); err != nil {
			return err
		}
		return errOwn
	})
	panics := start(t, db, 4, ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert(ctx, tx, "panic", 6); err != nil {
			return err
		}
		panic("write 6")
	})
	// Read-your-writes: e's caller sees its row (and those before it) as
	// soon as it returns.
	var seen map[string]bool
	e := start(t, db, 5, ctx, func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "e", 7) })
	eDone := make(chan error, 1)
	go func() {
		err := <-e
		if err == nil {
			seen, err = readKeys(ctx, db)
		}
		eDone <- err
	}()

	release()
	if err := recv(t, held); err != nil {
		t.Fatalf("held write: %v", err)
	}
	for name, ch := range map[string]<-chan error{"a": a, "c": c, "e": eDone} {
		if err := recv(t, ch); err != nil {
			t.Errorf("write %s: %v", name, err)
		}
	}
	if err := recv(t, dup); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("write violating UNIQUE: %v, want its constraint error", err)
	}
	if err := recv(t, own); !errors.Is(err, errOwn) {
		t.Errorf("write refused by its function: %v, want %v", err, errOwn)
	}
	if err := recv(t, panics); err == nil || !strings.Contains(err.Error(), "panic: write 6") {
		t.Errorf("panicking write: %v, want its panic in its own goroutine", err)
	}
	if cancelledRan.Load() {
		t.Error("the write cancelled while queued ran")
	}
	if !sawA || aCommitted {
		t.Errorf("c saw a in its transaction: %v, a committed before c ran: %v; want one shared transaction", sawA, aCommitted)
	}
	want := map[string]bool{"held": true, "a": true, "c": true, "e": true}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("rows seen by e's caller on return: %v, want %v", seen, want)
	}
	if got := keys(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows: %v, want %v (none of a failed write's)", got, want)
	}
	if n := db.commit.commits.Load() - commits; n != 2 {
		t.Errorf("%d commits for the held write and the five queued behind it, want 2", n)
	}
}

// A caller whose context ends while its write runs in a shared batch (here
// in the middle of a long statement) does not interrupt it: SQLite would
// roll back the whole transaction, the batch's other writes with it. Every
// write runs once; the cancelled caller's write is committed once or not
// at all, and the batch's other writes are committed.
func TestGroupCommitCallerLeaves(t *testing.T) {
	db := openCommitTest(t)
	db.commit.work = time.Hour
	ctx := t.Context()
	release, held := holdWriter(t, db)
	var runsA, runsB, runsC atomic.Int32
	commits := db.commit.commits.Load()
	a := start(t, db, 0, ctx, func(ctx context.Context, tx *sql.Tx) error {
		runsA.Add(1)
		return insert(ctx, tx, "a", 1)
	})
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := start(t, db, 1, bctx, func(ctx context.Context, tx *sql.Tx) error {
		runsB.Add(1)
		time.AfterFunc(2*time.Millisecond, cancel)
		// Long enough to be under way when its caller leaves.
		_, err := tx.ExecContext(ctx, `INSERT INTO gc (k, writer)
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
			SELECT 'b', count(*) FROM n`)
		return err
	})
	c := start(t, db, 2, ctx, func(ctx context.Context, tx *sql.Tx) error {
		runsC.Add(1)
		return insert(ctx, tx, "c", 3)
	})
	release()
	if err := recv(t, held); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan error{"a": a, "c": c} {
		if err := recv(t, ch); err != nil {
			t.Errorf("write %s: %v", name, err)
		}
	}
	errB := recv(t, b)
	if bctx.Err() == nil {
		t.Fatal("b's caller was not cancelled while its write ran")
	}
	got := keys(t, db)
	if errB == nil != got["b"] {
		t.Errorf("the cancelled caller got %v, and its row is there: %v; want committed with no error or not at all", errB, got["b"])
	}
	if !got["a"] || !got["c"] {
		t.Errorf("rows %v, want a and c", got)
	}
	if ra, rb, rc := runsA.Load(), runsB.Load(), runsC.Load(); ra != 1 || rb != 1 || rc != 1 {
		t.Errorf("the writes ran %d, %d and %d times, want once each", ra, rb, rc)
	}
	if n := db.commit.commits.Load() - commits; n != 2 {
		t.Errorf("%d commits for the held write and the three behind it, want 2", n)
	}
}

// When SQLite rolls the transaction back in the middle of a batch (a full
// disk or an I/O error does; here a write's own ROLLBACK), the writes
// started in it get an error and none of their rows is kept, each having
// run once; the writes not started yet are committed in the next batch.
func TestGroupCommitLost(t *testing.T) {
	db := openCommitTest(t)
	db.commit.work = time.Hour
	ctx := t.Context()
	release, held := holdWriter(t, db)
	var runs [3]atomic.Int32
	a := start(t, db, 0, ctx, func(ctx context.Context, tx *sql.Tx) error {
		runs[0].Add(1)
		return insert(ctx, tx, "a", 1)
	})
	lost := start(t, db, 1, ctx, func(ctx context.Context, tx *sql.Tx) error {
		runs[1].Add(1)
		if err := insert(ctx, tx, "lost", 2); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `ROLLBACK`)
		return err
	})
	c := start(t, db, 2, ctx, func(ctx context.Context, tx *sql.Tx) error {
		runs[2].Add(1)
		return insert(ctx, tx, "c", 3)
	})
	release()
	if err := recv(t, held); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan error{"a": a, "lost": lost} {
		if err := recv(t, ch); err == nil || !strings.Contains(err.Error(), "savepoint") {
			t.Errorf("write %s of the lost transaction: %v, want its loss", name, err)
		}
	}
	if err := recv(t, c); err != nil {
		t.Errorf("write c, not started in the lost transaction: %v", err)
	}
	if got := keys(t, db); got["a"] || got["lost"] || !got["c"] {
		t.Errorf("rows %v, want c only", got)
	}
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("write %d ran %d times, want once", i, n)
		}
	}
}

// When the batch's commit fails, every write of the batch gets its error,
// and none is kept.
func TestGroupCommitFailedCommit(t *testing.T) {
	db := openCommitTest(t)
	db.commit.work = time.Hour
	ctx := t.Context()
	release, held := holdWriter(t, db)
	a := start(t, db, 0, ctx, func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "a", 1) })
	b := start(t, db, 1, ctx, func(ctx context.Context, tx *sql.Tx) error {
		// A foreign key checked at COMMIT: the whole commit fails.
		if _, err := tx.ExecContext(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO gc_child (k, parent) VALUES ('orphan', 'nobody')`)
		return err
	})
	release()
	if err := recv(t, held); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan error{"a": a, "b": b} {
		if err := recv(t, ch); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Errorf("write %s: %v, want the commit's foreign key error", name, err)
		}
	}
	if got := keys(t, db); got["a"] {
		t.Errorf("rows %v: a's row was kept though its commit failed", got)
	}
	// The writer is clean again.
	if err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "after", 3) }); err != nil {
		t.Fatalf("write after a failed commit: %v", err)
	}
}

// Many writers at once, some failing on purpose: each caller gets its own
// result, and after reopening the file it holds every acknowledged write's
// rows and none of a failed one's.
func TestGroupCommitConcurrent(t *testing.T) {
	db := openCommitTest(t)
	ctx := t.Context()
	if _, err := db.exec(ctx, `INSERT INTO gc (k, writer) VALUES ('taken', -1)`); err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 40
	errOwn := errors.New("refused by its function")
	commits := db.commit.commits.Load()
	var (
		mu    sync.Mutex
		acked = map[string]bool{"taken": true}
		lost  []string
		wg    sync.WaitGroup
		oks   atomic.Int64
	)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range each {
				id := g*each + i
				k1, k2 := fmt.Sprintf("w%d-1", id), fmt.Sprintf("w%d-2", id)
				kind := rng.IntN(4)
				wctx := ctx
				if kind == 3 {
					c, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(2000))*time.Microsecond)
					defer cancel()
					wctx = c
				}
				err := db.tx(wctx, func(ctx context.Context, tx *sql.Tx) error {
					if err := insert(ctx, tx, k1, id); err != nil {
						return err
					}
					switch kind {
					case 1:
						return insert(ctx, tx, "taken", id) // UNIQUE violation
					case 2:
						return errOwn
					}
					return insert(ctx, tx, k2, id)
				})
				var want bool
				switch kind {
				case 0:
					want = err == nil
				case 1:
					want = err != nil && strings.Contains(err.Error(), "UNIQUE")
				case 2:
					want = errors.Is(err, errOwn)
				case 3:
					want = true // done in time, or not
				}
				mu.Lock()
				if !want {
					t.Errorf("write %d (kind %d): %v", id, kind, err)
				}
				if err == nil {
					acked[k1], acked[k2] = true, true
					oks.Add(1)
				} else {
					lost = append(lost, k1, k2)
				}
				mu.Unlock()
			}
		}()
	}
	all := make(chan error)
	go func() { wg.Wait(); close(all) }()
	recv(t, all)
	n := db.commit.commits.Load() - commits
	if n >= oks.Load() {
		t.Errorf("%d commits for %d acknowledged writes: no commit was shared", n, oks.Load())
	}
	t.Logf("%d acknowledged writes in %d commits", oks.Load(), n)

	path := db.Path
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := keys(t, db)
	for k := range acked {
		if !got[k] {
			t.Errorf("acknowledged row %s missing after reopening", k)
		}
	}
	for _, k := range lost {
		if got[k] {
			t.Errorf("row %s of a failed write is there", k)
		}
	}
	if len(got) != len(acked) {
		t.Errorf("%d rows after reopening, want %d", len(got), len(acked))
	}
}

// A batch takes at most maxBatch writes, and stops taking more once its
// writes have run for the work cap: the rest go first in the next batch.
func TestGroupCommitCapped(t *testing.T) {
	db := openCommitTest(t)
	ctx := t.Context()
	for _, c := range []struct {
		work    time.Duration
		writes  int
		commits int64
	}{
		{time.Hour, maxBatch + 6, 2},
		{time.Nanosecond, 3, 3}, // each write past the first is over the cap
	} {
		db.commit.work = c.work
		release, held := holdWriter(t, db)
		commits := db.commit.commits.Load()
		var order []int
		var results []<-chan error
		for i := range c.writes {
			results = append(results, start(t, db, i, ctx, func(ctx context.Context, tx *sql.Tx) error {
				order = append(order, i) // writes run one at a time, by the leader
				return insert(ctx, tx, fmt.Sprintf("cap-%d-%d", c.writes, i), i)
			}))
		}
		release()
		if err := recv(t, held); err != nil {
			t.Fatal(err)
		}
		for i, ch := range results {
			if err := recv(t, ch); err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		}
		if n := db.commit.commits.Load() - commits - 1; n != c.commits {
			t.Errorf("work cap %v, %d writes: %d commits, want %d", c.work, c.writes, n, c.commits)
		}
		for i, k := range order {
			if k != i {
				t.Fatalf("writes ran in the order %v, want the order they queued in", order)
			}
		}
		db.exec(ctx, `DELETE FROM gc WHERE k = 'held'`)
	}
}
