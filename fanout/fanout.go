// Package fanout is feedd's durable background work on River: delivering a
// new post to its audience's inboxes (fan-out on write) and removing a deleted
// post from them. Jobs are inserted in the transaction that commits the post,
// so a committed post is always delivered and a rolled-back one never is.
//
// A post job first writes the author's own inbox, then pages the audience by
// follower id (keyset, never OFFSET). A small audience is delivered by the
// post job itself; a large one is split into batch jobs of SplitSize
// followers each, one follower-id range per job, so that every worker
// process shares the work. Small posts run at a higher priority than the
// batches of a big one, so a celebrity's fan-out never holds up everyone
// else's (Stream-Framework's prioritised fan-out).
//
// Every step is idempotent: an inbox entry is (post score, post id), so a job
// cut off anywhere (process killed, context cancelled, error) is retried and
// writes the same entries again, never a second copy. Batch jobs are unique by
// their arguments, so a retried post job does not queue its batches twice.
package fanout

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	feed "github.com/feedd/feedd"
)

// Operations a job applies to inboxes.
const (
	OpAdd    = "add"
	OpRemove = "remove"
)

// Job priorities: River works lower numbers first.
const (
	priorityPost  = 1
	priorityBatch = 2
)

// PostArgs is the job for one post: deliver it (OpAdd) or remove it
// (OpRemove) from the inboxes of its author and audience.
type PostArgs struct {
	Op       string `json:"op"`
	PostID   int64  `json:"post_id"`
	AuthorID int64  `json:"author_id"`
	Score    int64  `json:"score"`
}

// Kind implements river.JobArgs.
func (PostArgs) Kind() string { return "feed_post" }

// BatchArgs is one slice of a large audience: the followers of AuthorID
// with ids in (After, Upto].
type BatchArgs struct {
	Op       string `json:"op"`
	PostID   int64  `json:"post_id"`
	AuthorID int64  `json:"author_id"`
	Score    int64  `json:"score"`
	After    int64  `json:"after"`
	Upto     int64  `json:"upto"`
	Since    int64  `json:"since,omitempty"` // skip followers inactive since (ms)
}

// Kind implements river.JobArgs.
func (BatchArgs) Kind() string { return "feed_batch" }

// Deps is what the workers read and write.
type Deps struct {
	// Every store is required; every backend provides them all.
	Follows feed.FollowStore
	Inbox   feed.Inbox
	Users   feed.UserStore
	Social  feed.SocialStore
	Outbox  feed.Outbox
	// Media, when set, is swept by the periodic media_sweep job every
	// MediaSweepEvery (default 5 minutes) in the processes that work jobs.
	Media           MediaSweeper
	MediaSweepEvery time.Duration
	// Comments, when set, has the comments of a removed post purged by its
	// removal job, in transactions of feed.PurgeBatch comments.
	Comments feed.CommentStore
	// Reposts, when set, has the reposts of a removed post purged by its
	// removal job, in transactions of feed.PurgeRepostBatch reposts, each
	// enqueuing the removal of its entry.
	Reposts feed.RepostStore
	// PurgeBudget is how long one run of a removal job purges comments
	// before it snoozes and comes back (default purgeBudget).
	PurgeBudget time.Duration
	// PullThreshold: an author with at least this many followers is put in
	// pull mode (0: never); they leave it below 9/10 of it.
	PullThreshold int
	// Backfill is how many of an author's newest posts a new follower gets
	// in their inbox (default feed.DefaultBackfill; never more than InboxCap).
	Backfill int
	// InboxCap is the entries an inbox keeps (default feed.DefaultInboxCap).
	InboxCap int
	// ActiveWindow: followers not seen for this long are skipped by fan-out
	// (0: nobody is skipped); their inbox is regenerated when they return.
	ActiveWindow time.Duration
	Now          func() time.Time
	// BatchSize is how many followers one inbox write covers (default 1000).
	BatchSize int
	// SplitSize is the most followers one job delivers to; larger audiences
	// are split into batch jobs of this size (default 10000).
	SplitSize int
	// Observe is told of deliveries and their lag (feedd's metrics); nil:
	// nobody is.
	Observe Observer
	// Events, when set, is told of every entry a post job writes to or
	// removes from inboxes (one Publish per inbox write) and of every post
	// of a pull-mode author, for live timeline streams.
	Events feed.EventService
	// Push sends push jobs (feed.Service); nil: they are dropped.
	Push Pusher
	Log  *slog.Logger
	// Trace logs the stages of each post job (--trace-posts); nil: nothing.
	Trace *feed.Tracer
	// Unavailable reports whether an error is the database out of reach,
	// and Ping whether it is back: a job cut off by an outage runs again
	// once it is (outage.go). Either nil: such a job fails and River
	// retries it.
	Unavailable func(error) bool
	Ping        func(context.Context) error

	// Erase works an erasure for about budget and reports whether it is
	// done (feed.Service.EraseWork); nil: erase jobs fail.
	Erase func(ctx context.Context, erasureID int64, budget time.Duration) (done bool, err error)

	wake *Wake // Config.Wake, notified after the workers insert batch jobs
}

// The defaults of Deps: a field that is zero or negative has its default
// (max(v, 0) keeps negative values on the default, as cmp.Or alone would not).
func (d *Deps) batchSize() int { return cmp.Or(max(d.BatchSize, 0), 1000) }
func (d *Deps) splitSize() int { return cmp.Or(max(d.SplitSize, 0), 10000) }
func (d *Deps) inboxCap() int  { return feed.InboxCapOr(d.InboxCap) }
func (d *Deps) backfill() int  { return feed.BackfillSize(d.Backfill, d.InboxCap) }

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// since is the activity horizon of a delivery made for time at (ms):
// followers last active more than ActiveWindow before it are skipped (0:
// none is). A post's delivery takes it from the post's score, not the
// clock, so that every attempt of its job computes the same batch jobs'
// arguments, which River's uniqueness by arguments then inserts once.
func (d *Deps) since(at int64) int64 { return feed.ActiveSince(at, d.ActiveWindow) }

// audience returns a keyset page of authorID's followers, only those active
// since `since` (ms) when it is not 0.
func (d *Deps) audience(ctx context.Context, authorID, after int64, limit int, since int64) ([]int64, error) {
	if since > 0 {
		return d.Social.ActiveFollowersAfter(ctx, authorID, after, limit, time.UnixMilli(since))
	}
	return d.Follows.FollowersAfter(ctx, authorID, after, limit)
}

// purgeBudget is how long one run of a removal job purges comments
// before it lets the job go and come back (purgeComments).
const purgeBudget = 5 * time.Second

// purgeComments removes the comments of deleted post postID, a batch per
// transaction (PurgeComments), so that a post with 100,000 comments goes
// without one huge transaction, and then its reposts (PurgeReposts, each
// batch enqueuing its entries' removals). It stops after purgeBudget (or
// half the job's time left) and reports whether none is left: the job
// then snoozes, which costs no attempt, and starts over where the last
// batch left off, well within its timeout whatever the post's size and
// the load.
func (d *Deps) purgeComments(ctx context.Context, postID int64) (bool, error) {
	budget := cmp.Or(max(d.PurgeBudget, 0), purgeBudget)
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	start := time.Now()
	purge := func(batch int, f func(ctx context.Context, postID int64, limit int) (int, error)) (bool, error) {
		for {
			n, err := f(ctx, postID, batch)
			if err != nil {
				return false, err
			}
			if n < batch {
				return true, nil
			}
			if time.Since(start) > budget {
				return false, nil
			}
		}
	}
	if d.Comments != nil {
		if done, err := purge(feed.PurgeBatch, d.Comments.PurgeComments); !done || err != nil {
			return done, err
		}
	}
	if d.Reposts != nil {
		return purge(feed.PurgeRepostBatch, d.Reposts.PurgeReposts)
	}
	return true, nil
}

type postWorker[TTx any] struct {
	river.WorkerDefaults[PostArgs]
	deps *Deps
}

func (w *postWorker[TTx]) Work(ctx context.Context, job *river.Job[PostArgs]) error {
	if t := w.deps.Trace; t.Enabled() {
		// inserted: the job's created_at (the inserting transaction's start,
		// by the database's clock); fetched: when River locked it for this
		// worker (attempted_at). Their gap is the notification and the fetch.
		var fetched int64
		if job.AttemptedAt != nil {
			fetched = job.AttemptedAt.UnixMicro()
		}
		t.Stage(job.Args.PostID, "job started", "op", job.Args.Op, "job_id", job.ID, "attempt", job.Attempt,
			"inserted_us", job.CreatedAt.UnixMicro(), "fetched_us", fetched)
	}
	err := runThroughOutage(ctx, w.deps, func() error { return w.work(ctx, job) })
	if t := w.deps.Trace; t.Enabled() {
		t.Stage(job.Args.PostID, "job done", "op", job.Args.Op, "job_id", job.ID, "error", err)
	}
	return outcome(w.deps, job.JobRow, err)
}

func (w *postWorker[TTx]) work(ctx context.Context, job *river.Job[PostArgs]) error {
	a := job.Args
	d := w.deps
	e := feed.Entry{PostID: a.PostID, Score: a.Score}
	if a.Op == OpRemove {
		// The comments and reposts first: a job snoozed for more of them
		// removes the post from the inboxes once, at the end.
		if done, err := d.purgeComments(ctx, a.PostID); err != nil {
			return err
		} else if !done {
			return river.JobSnooze(0)
		}
	}
	// The mode is settled before the outbox is written (see followWorker).
	mode := feed.PushMode
	if a.Op == OpAdd {
		var err error
		if mode, err = d.mode(ctx, a.AuthorID); err != nil {
			return err
		}
	}
	var err error
	if a.Op == OpAdd {
		err = d.Outbox.Add(ctx, a.AuthorID, e)
	} else {
		err = d.Outbox.Remove(ctx, a.AuthorID, e)
	}
	if err != nil {
		return storeErr(err)
	}
	author := []int64{a.AuthorID}
	if !feed.Pushed(mode) {
		if err := apply(ctx, d, a.Op, e, author); err != nil {
			return err
		}
		// Readers merge the author's outbox; their streams subscribe to it.
		d.publish(ctx, a.Op, e, author, a.AuthorID)
		d.observeLag(a.Op, a.Score)
		return nil
	}
	var since int64
	if a.Op == OpAdd {
		since = d.since(a.Score)
	}
	split := d.splitSize()
	boundary, err := d.Follows.NthFollowerAfter(ctx, a.AuthorID, 0, split)
	if err != nil {
		return err
	}
	if boundary == 0 {
		// The whole audience fits in one job: deliver it here, the
		// author's own inbox in the first write (one inbox transaction or
		// pipeline for a small audience, not two).
		ids, err := d.audience(ctx, a.AuthorID, 0, split, since)
		if err != nil {
			return err
		}
		first := min(d.batchSize(), len(ids))
		err = deliver(ctx, d, a.Op, e, append(author, ids[:first]...), true)
		if err != nil && !refused(err) {
			return err
		}
		if first > 0 {
			d.observeFirstLag(a.Op, a.Score)
		}
		if err2 := deliver(ctx, d, a.Op, e, ids[first:], true); err2 != nil {
			return err2
		} else if err != nil {
			return err
		}
		d.observeLag(a.Op, a.Score)
		return nil
	}
	// A refusal of the author's own inbox does not hold up the audience's.
	authorErr := apply(ctx, d, a.Op, e, author)
	if authorErr != nil && !refused(authorErr) {
		return authorErr
	}
	d.publish(ctx, a.Op, e, author, 0)
	// A large audience: one batch job per SplitSize followers after the
	// first, the ranges' boundaries found by index probes rather than by
	// reading the audience. This job delivers the first range itself, while
	// it finds the others and inserts their jobs: the first followers get
	// the post without waiting for a batch job's insert and fetch, and this
	// job's worker delivers instead of waiting on inserts (BENCHMARKS.md
	// "Fan-out").
	client, err := river.ClientFromContextSafely[TTx](ctx)
	if err != nil {
		return err
	}
	own := newFlight(ctx, 1)
	first := BatchArgs{Op: a.Op, PostID: a.PostID, AuthorID: a.AuthorID, Score: a.Score, After: 0, Upto: boundary, Since: since}
	if err := own.run(func(ctx context.Context) error {
		if err := deliverRange(ctx, d, first); err != nil {
			return err
		}
		d.observeLag(a.Op, a.Score)
		return nil
	}); err != nil {
		return own.wait(err)
	}
	if err := own.wait(insertRanges(own.ctx, client, d, first)); err != nil {
		return err
	}
	return authorErr
}

type batchWorker struct {
	river.WorkerDefaults[BatchArgs]
	deps *Deps
}

func (w *batchWorker) Work(ctx context.Context, job *river.Job[BatchArgs]) error {
	err := runThroughOutage(ctx, w.deps, func() error { return w.work(ctx, job) })
	if err == nil {
		w.deps.observeLag(job.Args.Op, job.Args.Score)
	}
	return outcome(w.deps, job.JobRow, err)
}

func (w *batchWorker) work(ctx context.Context, job *river.Job[BatchArgs]) error {
	return deliverRange(ctx, w.deps, job.Args)
}

// deliver applies op to ids in inbox writes of BatchSize users, publishing
// each write to live streams when publish is set. A refused write
// (refusedError) does not stop the others: its error is returned once
// every write was made.
func deliver(ctx context.Context, d *Deps, op string, e feed.Entry, ids []int64, publish bool) error {
	size := d.batchSize()
	var failed error
	for len(ids) > 0 {
		n := min(size, len(ids))
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := apply(ctx, d, op, e, ids[:n]); err != nil {
			if !refused(err) {
				return err
			}
			failed = cmp.Or(failed, err)
		}
		if publish {
			d.publish(ctx, op, e, ids[:n], 0)
		}
		ids = ids[n:]
	}
	return failed
}

// apply applies op to the inboxes of ids in one write. Its error is
// storeErr's: an outage, or a refusal, which the store may have answered
// for some of the inboxes only (a pipeline writes the others).
func apply(ctx context.Context, d *Deps, op string, e feed.Entry, ids []int64) error {
	var err error
	switch op {
	case OpAdd:
		if err = d.Inbox.Deliver(ctx, e, ids); err == nil && d.Observe != nil {
			d.Observe.Delivered(len(ids))
		}
	case OpRemove:
		err = d.Inbox.Remove(ctx, e, ids)
	default:
		return fmt.Errorf("fanout: unknown op %q", op)
	}
	if d.Trace.Enabled() {
		d.Trace.Stage(e.PostID, "inboxes written", "op", op, "users", len(ids), "error", err)
	}
	if err != nil && ctx.Err() == nil {
		return storeErr(err)
	}
	return err
}
