package fanout

// What fan-out tells others: the metrics (Observer) and live timeline
// streams (Deps.Events).

import (
	"context"
	"time"

	feed "github.com/feedd/feedd"
)

// Observer is told what fan-out delivered. Its methods must be cheap and
// safe for concurrent use.
type Observer interface {
	// Delivered: entries inbox entries were written, one per inbox: of new
	// posts (the author's own included) and of an author's recent posts
	// pushed when they leave pull mode. A retried write counts again.
	Delivered(entries int)
	// Lag: a job finished delivering a new post, lag after the post's
	// creation time (its score). A post delivered by one job is observed
	// once; a split audience once per batch job, the post's lag being
	// the largest.
	Lag(lag time.Duration)
	// FirstLag: the first follower of a new post got it, lag after the
	// post's creation time. Observed once per post that has followers to
	// push to (the first batch of its first job), when it is first written.
	FirstLag(lag time.Duration)
	// Discarded: a job of kind (a River job kind, such as "feed_batch")
	// failed its last attempt and will not run again: some inboxes miss
	// its post (the log says which post).
	Discarded(kind string)
	// Pushed: a push job ended a try with outcome (feed.PushOutcome's
	// name: sent, skipped, gone, retry, refused).
	Pushed(outcome string)
}

// observeLag tells Observe the lag of a finished delivery of a new post.
func (d *Deps) observeLag(op string, score int64) {
	if d.Observe == nil || op != OpAdd {
		return
	}
	d.Observe.Lag(max(d.now().Sub(time.UnixMilli(score)), 0))
}

// observeFirstLag tells Observe the lag of a new post's first follower.
func (d *Deps) observeFirstLag(op string, score int64) {
	if d.Observe == nil || op != OpAdd {
		return
	}
	d.Observe.FirstLag(max(d.now().Sub(time.UnixMilli(score)), 0))
}

// publish tells live streams that op was applied to entry e in the
// timelines of users (and, when author is not 0, of the pull-mode
// followers of author). Streams are best effort: a failed publish is
// logged and never fails the job, whose inbox writes are done.
func (d *Deps) publish(ctx context.Context, op string, e feed.Entry, users []int64, author int64) {
	if d.Events == nil || (len(users) == 0 && author == 0) {
		return
	}
	kind := feed.EventPost
	if op == OpRemove {
		kind = feed.EventDelete
	}
	err := d.Events.Publish(ctx, feed.Event{Kind: kind, Entry: e, Users: users, Author: author})
	if err != nil && ctx.Err() == nil {
		d.Log.Warn("publish timeline event", "post_id", e.PostID, "kind", kind, "error", err)
	}
	if d.Trace.Enabled() {
		d.Trace.Stage(e.PostID, "event published", "kind", kind, "users", len(users), "error", err)
	}
}
