package fanout_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	"github.com/feedd/feedd/sqlite"
)

// flakyInbox fails or stalls writes on demand, to cut a fan-out job off.
type flakyInbox struct {
	feed.Inbox
	calls   atomic.Int64
	failAt  int64 // the call number from which Deliver fails...
	failFor int64 // ...for this many calls
	block   chan struct{}
}

func (f *flakyInbox) Deliver(ctx context.Context, e feed.Entry, ids []int64) error {
	n := f.calls.Add(1)
	if f.failAt > 0 && n >= f.failAt && n < f.failAt+f.failFor {
		return errors.New("injected inbox failure")
	}
	if f.block != nil && n >= f.failAt {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.Inbox.Deliver(ctx, e, ids)
}

type world struct {
	db     *sqlite.DB
	inbox  *sqlite.Inbox
	author int64
	users  []int64
}

func newWorld(t *testing.T, followers int) *world {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := fanout.Migrate(ctx, riversqlite.New(db.Write)); err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, inbox: &sqlite.Inbox{DB: db}}
	// Follows enqueue jobs too; until the test's queue exists, drop them.
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	now := time.Now()
	a, err := db.FindOrCreateUser(ctx, "13800000000", "author", now)
	if err != nil {
		t.Fatal(err)
	}
	w.author = a.ID
	// The followers and their follows in one transaction each (the
	// importer's batches, then its counts): what fan-out reads, written at
	// a fraction of the cost of a transaction a user.
	users := make([]*feed.User, followers)
	follows := make([]feed.ImportFollow, followers)
	for i := range users {
		id := a.ID + 1 + int64(i)
		users[i] = &feed.User{ID: id, Phone: fmt.Sprintf("139%08d", i), NickName: "f", CreatedAt: now, ActiveAt: now}
		follows[i] = feed.ImportFollow{FollowerID: id, FolloweeID: a.ID, CreatedAt: now}
		w.users = append(w.users, id)
	}
	none := func(skips []feed.ImportSkip) []feed.ImportCheckpoint {
		if len(skips) > 0 {
			t.Errorf("the world's rows were skipped: %v", skips)
		}
		return nil
	}
	if err := db.ImportUsers(ctx, users, none); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportFollows(ctx, follows, none); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FinishImport(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) queue(t *testing.T, ib feed.Inbox) *fanout.Queue[*sql.Tx] {
	t.Helper()
	return w.queueWorkers(t, ib, 4)
}

func (w *world) queueWorkers(t *testing.T, ib feed.Inbox, workers int) *fanout.Queue[*sql.Tx] {
	t.Helper()
	q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: workers, PollInterval: 20 * time.Millisecond},
		&fanout.Deps{Follows: w.db, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: ib, BatchSize: 50, SplitSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	w.db.Enqueue = q.EnqueueTx
	return q
}

// holders returns how many inboxes hold post id.
func (w *world) holders(t *testing.T, id int64) int {
	var n int
	if err := w.db.Read.QueryRow(`SELECT count(*) FROM inbox WHERE post_id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (w *world) waitHolders(t *testing.T, id int64, want int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.holders(t, id) != want {
		if time.Now().After(deadline) {
			t.Fatalf("post %d in %d inboxes, want %d", id, w.holders(t, id), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) publish(t *testing.T) *feed.Post {
	t.Helper()
	p := &feed.Post{UserID: w.author, Title: "t", Content: "c", CreatedAt: time.Now().Truncate(time.Millisecond)}
	if err := w.db.CreatePost(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFanoutSplitsAndDelivers: a large audience is split into batch jobs
// and every follower and the author get the post once; a delete removes it.
func TestFanoutSplitsAndDelivers(t *testing.T) {
	w := newWorld(t, 1000)
	q := w.queue(t, w.inbox)
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	p := w.publish(t)
	w.waitHolders(t, p.ID, 1001)
	small := newWorldPostFor(t, w)
	w.waitHolders(t, small, 1001)
	if err := w.db.DeletePost(ctx, p.ID, w.author); err != nil {
		t.Fatal(err)
	}
	w.waitHolders(t, p.ID, 0)
}

func newWorldPostFor(t *testing.T, w *world) int64 { return w.publish(t).ID }

// TestFanoutRetriesAfterError: inbox writes fail part way; the job is
// retried and completes with each entry once.
func TestFanoutRetriesAfterError(t *testing.T) {
	w := newWorld(t, 700)
	ib := &flakyInbox{Inbox: w.inbox, failAt: 4, failFor: 3}
	q := w.queue(t, ib)
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	p := w.publish(t)
	w.waitHolders(t, p.ID, 701)
}

// TestFanoutResumesAfterCancel: the queue is stopped while a job is in the
// middle of its writes (its context cancelled); a new queue on the same
// database finishes the delivery.
func TestFanoutResumesAfterCancel(t *testing.T) {
	w := newWorld(t, 700)
	ib := &flakyInbox{Inbox: w.inbox, failAt: 3, block: make(chan struct{})}
	q := w.queue(t, ib)
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := w.publish(t)
	deadline := time.Now().Add(30 * time.Second)
	for ib.calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("fan-out did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	q.Stop(sctx) // times out on the blocked job, then cancels it
	if n := w.holders(t, p.ID); n == 0 || n >= 701 {
		t.Fatalf("expected a partial fan-out when cancelled, got %d", n)
	}
	q2 := w.queue(t, w.inbox)
	if err := q2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q2.Stop(ctx)
	w.waitHolders(t, p.ID, 701)
}

// overlapInbox holds the first write of a full batch (batchSize followers)
// until another write starts while it is under way, and records whether one
// did.
type overlapInbox struct {
	feed.Inbox
	batchSize  int
	active     atomic.Int64
	held       atomic.Bool
	overlapped chan struct{}
	once       sync.Once
}

func (o *overlapInbox) Deliver(ctx context.Context, e feed.Entry, ids []int64) error {
	if o.active.Add(1) > 1 {
		o.once.Do(func() { close(o.overlapped) })
	}
	defer o.active.Add(-1)
	if len(ids) == o.batchSize && o.held.CompareAndSwap(false, true) {
		// Not a timed assertion: the bound only ends the wait of a job
		// that never starts a second write, and then the test fails.
		select {
		case <-o.overlapped:
		case <-time.After(20 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return o.Inbox.Deliver(ctx, e, ids)
}

// TestFanoutBatchWritesOverlap: a batch job sends its next inbox write
// while the previous one is still under way (one worker, so the two writes
// are of one job), and the fan-out completes with every inbox written once.
func TestFanoutBatchWritesOverlap(t *testing.T) {
	w := newWorld(t, 700)
	ib := &overlapInbox{Inbox: w.inbox, batchSize: 50, overlapped: make(chan struct{})}
	q := w.queueWorkers(t, ib, 1)
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	p := w.publish(t)
	w.waitHolders(t, p.ID, 701)
	select {
	case <-ib.overlapped:
	default:
		t.Fatal("no inbox write started while another was under way: the batch job's writes are a chain")
	}
}

// TestRemovalPurgesCommentsInRuns: a deleted post's removal job purges its
// comments a batch per transaction, and when its budget is spent it
// snoozes (no attempt used) and goes on where it left off; the inboxes
// lose the post once the comments are gone.
func TestRemovalPurgesCommentsInRuns(t *testing.T) {
	w := newWorld(t, 20)
	ctx := context.Background()
	q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 2, PollInterval: 20 * time.Millisecond},
		&fanout.Deps{Follows: w.db, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: w.inbox,
			Comments: w.db, PurgeBudget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	w.db.Enqueue = q.EnqueueTx
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(context.Background()) })
	p := w.publish(t)
	w.waitHolders(t, p.ID, 21)
	const n = 3*feed.PurgeBatch + 100
	if _, err := w.db.Write.Exec(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
		INSERT INTO comments (post_id, user_id, content, created_at, updated_at) SELECT ?, ?, 'c', i, i FROM g`, n, p.ID, w.users[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.db.DeletePost(ctx, p.ID, w.author); err != nil {
		t.Fatal(err)
	}
	w.waitHolders(t, p.ID, 0)
	var left, snoozes, attempt int
	if err := w.db.Read.QueryRow(`SELECT count(*) FROM comments WHERE post_id = ?`, p.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d comments left (%v)", left, err)
	}
	if err := w.db.Read.QueryRow(`SELECT coalesce(json_extract(metadata, '$.snoozes'), 0), attempt FROM river_job
		WHERE json_extract(args, '$.op') = 'remove' AND json_extract(args, '$.post_id') = ?`, p.ID).Scan(&snoozes, &attempt); err != nil {
		t.Fatal(err)
	}
	if snoozes != 3 || attempt != 1 {
		t.Fatalf("the removal job snoozed %d times (attempt %d); want 3 snoozes, one a batch of %d, and attempt 1", snoozes, attempt, feed.PurgeBatch)
	}
}
