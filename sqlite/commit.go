package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// Group commit: SQLite has one writer per file, and with synchronous=FULL
// each commit waits for an fsync of the WAL. One transaction per write put
// every concurrent small write (a login, a like, a follow) in line for its
// own fsync. Here the writes waiting for the writer share one: the writes
// queued while a commit is in flight run together in the next transaction,
// each inside a SAVEPOINT of its own, and the batch commits once. A write
// whose function fails is rolled back to its savepoint alone; each caller
// returns only after the commit of its batch (so what it wrote is durable
// and visible to every later read) with its own function's error, or the
// commit's. A write that finds no other waiting runs alone, at once, in a
// transaction of its own, without a savepoint, exactly as before: nothing
// ever waits for company.
//
// A shared batch runs every write's statements detached from its caller's
// cancellation (the context each function is given keeps the caller's
// values, not its deadline): SQLite answers an interrupted statement by
// rolling the whole transaction back, which would take the other writes
// of the batch with it. A caller whose context ends once its write has
// started still gets that write's result when the batch is done; a write
// therefore runs once, and is either committed or not at all.
//
// The batch is capped (maxBatch writes, maxBatchWork of their running
// time), so a long write such as a fan-out delivery keeps the others'
// latency bounded, and River's own queries (which take the writer
// connection from the pool directly) wait at most one batch.

const (
	// maxBatch is the most writes that share one commit.
	maxBatch = 64
	// maxBatchWork is how long a batch's writes may run before it commits
	// without the ones still waiting, which go first in the next batch.
	maxBatchWork = 10 * time.Millisecond
)

// write is one caller's write transaction waiting for, or in, a batch.
type write struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan result // buffered: a turn to lead, then the result

	// Set by the leader that runs it (leaders follow one another).
	err      error // fn's result in the batch
	panicked any   // what fn panicked with
}

type result struct {
	lead     bool // run the queue's next batch, then wait again
	err      error
	panicked any
}

// committer is the queue of a DB's writes. At most one goroutine leads:
// it runs batches from the front of the queue, and when its own write is
// finished it makes the first write still waiting the leader, if any.
type committer struct {
	mu      sync.Mutex
	queue   []*write
	leading bool

	commits atomic.Int64  // transactions committed
	work    time.Duration // maxBatchWork unless set (tests)
}

// tx runs fn once in a write transaction, sharing the transaction and
// its commit with other writes waiting for the writer (see Group commit
// above), and returns once the transaction is committed: fn's error if fn
// failed (its changes then undone, and none of the others'), else the
// commit's error. ctx ending while the write waits for its turn returns
// ctx's error, and the write is not made; once it has started, the write
// runs to its end. fn runs its statements with the context it is given:
// ctx itself when the write runs alone, ctx without its cancellation in a
// shared batch.
func (db *DB) tx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &write{ctx: ctx, fn: fn, done: make(chan result, 1)}
	c := &db.commit
	c.mu.Lock()
	c.queue = append(c.queue, w)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	wait := ctx.Done()
	for {
		if lead {
			// The leader's write is first in the queue, so its batch
			// finishes it.
			db.runBatch()
			c.mu.Lock()
			c.handOff()
			c.mu.Unlock()
		}
		select {
		case r := <-w.done:
			if r.lead {
				lead = true
				continue
			}
			if r.panicked != nil {
				panic(r.panicked)
			}
			return r.err
		case <-wait:
			if c.leave(w) {
				return ctx.Err()
			}
			wait = nil // in a batch already: its result comes
		}
		lead = false
	}
}

// handOff makes the first waiting write the leader, or ends leading. c.mu held.
func (c *committer) handOff() {
	if len(c.queue) == 0 {
		c.leading = false
		return
	}
	c.queue[0].done <- result{lead: true}
}

// leave takes w out of the queue, passing the leader's role on if w had just been
// given it, and reports whether w was still queued (not in a batch).
func (c *committer) leave(w *write) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queue {
		if q != w {
			continue
		}
		c.queue = append(c.queue[:i:i], c.queue[i+1:]...)
		select {
		case <-w.done: // a turn to lead (a queued write gets nothing else)
			c.handOff()
		default:
		}
		return true
	}
	return false
}

// runBatch runs the writes at the front of the queue in one transaction,
// puts those it did not start (past maxBatchWork) back at the front, and
// sends every other write of the batch its result, the leader's own
// included.
func (db *DB) runBatch() {
	c := &db.commit
	c.mu.Lock()
	n := min(len(c.queue), maxBatch)
	batch := make([]*write, n)
	copy(batch, c.queue)
	c.queue = append(c.queue[:0:0], c.queue[n:]...)
	c.mu.Unlock()

	done := db.commitBatch(batch)

	c.mu.Lock()
	c.queue = append(batch[done:len(batch):len(batch)], c.queue...)
	c.mu.Unlock()
	for _, w := range batch[:done] {
		w.done <- result{err: w.err, panicked: w.panicked}
	}
}

// commitBatch runs batch in one transaction and sets the results of its
// first done writes, at least one; the writes after those were not started.
func (db *DB) commitBatch(batch []*write) (done int) {
	if len(batch) == 1 {
		// Alone: no savepoint, and the caller's context, as a transaction
		// of its own would have.
		w := batch[0]
		tx, err := db.Write.BeginTx(w.ctx, nil)
		if err != nil {
			w.err = err
			return 1
		}
		defer db.enqueuedIn.Delete(tx)
		if w.err = runFn(w, w.ctx, tx); w.err != nil {
			tx.Rollback()
			db.flushNotices(tx, false)
			return 1
		}
		w.err = db.commitTx(tx)
		db.woken(tx, w.err)
		return 1
	}
	// Shared: the transaction and its savepoint statements belong to no
	// caller, and each write runs with its caller's context detached.
	bg := context.Background()
	fail := func(ws []*write, err error) { // those whose own result was a success
		for _, w := range ws {
			if w.err == nil {
				w.err = err
			}
		}
	}
	tx, err := db.Write.BeginTx(bg, nil)
	if err != nil {
		fail(batch, err)
		return len(batch)
	}
	defer db.enqueuedIn.Delete(tx)
	work := db.commit.work
	if work == 0 {
		work = maxBatchWork
	}
	start := time.Now()
	done = len(batch)
	for i, w := range batch {
		if i > 0 && time.Since(start) > work {
			done = i
			break
		}
		if w.err = w.ctx.Err(); w.err != nil {
			continue // its caller left before it started: not made
		}
		_, err := tx.ExecContext(bg, `SAVEPOINT write`)
		if err == nil {
			mark := db.noticeMark(tx)
			if w.err = runFn(w, context.WithoutCancel(w.ctx), tx); w.err != nil {
				db.noticeUndo(tx, mark) // its savepoint is rolled back
				_, err = tx.ExecContext(bg, `ROLLBACK TO write`)
			}
		}
		if err == nil {
			_, err = tx.ExecContext(bg, `RELEASE write`)
		}
		if err != nil {
			// SQLite failed and rolled the transaction back (a full disk,
			// an I/O error): every write started in it is lost, and those
			// not started yet go to the next batch.
			tx.Rollback()
			db.flushNotices(tx, false)
			fail(batch[:i+1], fmt.Errorf("sqlite: write transaction lost: %w", err))
			return i + 1
		}
	}
	err = db.commitTx(tx)
	if err != nil {
		fail(batch[:done], err)
	}
	db.woken(tx, err)
	return done
}

func (db *DB) commitTx(tx *sql.Tx) error {
	err := tx.Commit()
	if err == nil {
		db.commit.commits.Add(1)
	}
	return err
}

// runFn runs w's function in tx with ctx, turning a panic into an error
// here (the panic is raised again in w's own goroutine).
func runFn(w *write, ctx context.Context, tx *sql.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.panicked = p
			err = errPanicked
		}
	}()
	return w.fn(ctx, tx)
}

var errPanicked = errors.New("sqlite: write function panicked")

// woken tells the wiring that jobs were committed in tx, if they were, and
// hands the notifications of its writes on (or drops them if the commit
// failed).
func (db *DB) woken(tx *sql.Tx, commitErr error) {
	db.flushNotices(tx, commitErr == nil)
	if js, ok := db.enqueuedIn.Load(tx); ok && commitErr == nil && db.Enqueued != nil {
		db.Enqueued(*js.(*[]feed.Job))
	}
}
