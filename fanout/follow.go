package fanout

import (
	"context"
	"math"

	"github.com/riverqueue/river"

	feed "github.com/feedd/feedd"
)

// FollowArgs is the job that follows a change of the follow graph: a new
// follower gets the followee's recent posts in their inbox (backfill), an
// ex-follower loses them. It also moves the followee between push and pull
// mode when their audience crossed the threshold.
type FollowArgs struct {
	FollowerID int64 `json:"follower_id"`
	FolloweeID int64 `json:"followee_id"`
	Follow     bool  `json:"follow"`
}

// Kind implements river.JobArgs.
func (FollowArgs) Kind() string { return "feed_follow" }

type followWorker struct {
	river.WorkerDefaults[FollowArgs]
	deps *Deps
}

func (w *followWorker) Work(ctx context.Context, job *river.Job[FollowArgs]) error {
	return outcome(w.deps, job.JobRow, runThroughOutage(ctx, w.deps, func() error { return w.work(ctx, job.Args) }))
}

func (w *followWorker) work(ctx context.Context, a FollowArgs) error {
	d := w.deps
	mode, err := d.settleMode(ctx, a.FolloweeID)
	if err != nil {
		return err
	}
	// Jobs of one pair may run out of order (follow, unfollow, follow in
	// quick succession): an unfollow acts only if the follow is still gone;
	// a follow copies only if it still stands, and otherwise removes, as
	// its unfollow's job did: that job may have run while this one's
	// earlier attempt was between its check and its copy.
	following, err := d.Follows.IsFollowing(ctx, a.FollowerID, a.FolloweeID)
	if err != nil || (!a.Follow && following) {
		return err
	}
	if following {
		if mode == feed.PullMode {
			return nil // merged at read time; nothing to copy
		}
		es, err := d.Outbox.Entries(ctx, []int64{a.FolloweeID}, feed.AtMost(math.MaxInt64), d.backfill())
		if err != nil {
			return storeErr(err)
		}
		// The mode is read again after the outbox: a post job settles its
		// author's mode before it writes the outbox, so a post seen above
		// whose author has meanwhile entered pull mode is not copied.
		if mode, err = d.mode(ctx, a.FolloweeID); err != nil || mode == feed.PullMode {
			return err
		}
		if err := d.Inbox.Add(ctx, a.FollowerID, es); err != nil {
			return storeErr(err)
		}
		// An unfollow committed since the check above has its own job,
		// which may have removed the posts before the copy: look again.
		if following, err = d.Follows.IsFollowing(ctx, a.FollowerID, a.FolloweeID); err != nil || following {
			return err
		}
	}
	return removeFollowee(ctx, d, a.FollowerID, a.FolloweeID)
}

// entriesRemover is an Inbox that removes many entries from one user's
// inbox in one call (redis.Inbox.RemoveEntries: one round trip, and on a
// packed inbox one rewrite of its body, where a Remove per entry costs a
// round trip and a rewrite each).
type entriesRemover interface {
	RemoveEntries(ctx context.Context, userID int64, entries []feed.Entry) error
}

// removeFollowee takes followeeID's posts out of followerID's inbox. An
// inbox holds at most InboxCap entries, so the followee's newest InboxCap
// posts cover it.
func removeFollowee(ctx context.Context, d *Deps, followerID, followeeID int64) error {
	es, err := d.Outbox.Entries(ctx, []int64{followeeID}, feed.AtMost(math.MaxInt64), d.inboxCap())
	if err != nil {
		return storeErr(err)
	}
	if r, ok := d.Inbox.(entriesRemover); ok {
		err := r.RemoveEntries(ctx, followerID, es)
		if err != nil && ctx.Err() == nil {
			return storeErr(err)
		}
		return err
	}
	for _, e := range es {
		if err := apply(ctx, d, OpRemove, e, []int64{followerID}); err != nil {
			return err
		}
	}
	return nil
}

// mode returns authorID's distribution mode for a new post, entering pull
// mode first if the audience has reached the threshold.
func (d *Deps) mode(ctx context.Context, authorID int64) (feed.Mode, error) {
	mode, _, err := d.author(ctx, authorID)
	return mode, err
}

// author is mode, with the audience size it was decided on (one read of
// the user).
func (d *Deps) author(ctx context.Context, authorID int64) (feed.Mode, int, error) {
	if d.PullThreshold <= 0 {
		return feed.PushMode, 0, nil
	}
	u, err := d.Users.User(ctx, authorID)
	if err != nil {
		return feed.PushMode, 0, err
	}
	if feed.EntersPull(u.Mode, u.Fans, d.PullThreshold) {
		if err := d.Social.SetMode(ctx, authorID, feed.PullMode); err != nil {
			return feed.PushMode, 0, err
		}
		d.Log.Info("author enters pull mode", "author_id", authorID, "fans", u.Fans)
		return feed.PullMode, u.Fans, nil
	}
	return u.Mode, u.Fans, nil
}

// settleMode moves authorID between push and pull mode when their audience
// crossed the threshold (entering at PullThreshold, leaving below 9/10 of
// it, so an audience hovering at the line does not flap).
//
// Entering is immediate: readers start merging the outbox, where every post
// already is. Leaving goes through LeavingPullMode: while the author's
// newest posts are pushed to every follower, posts are both pushed and
// merged, so none is missing from any feed at any moment; then push mode. A
// job cut off while leaving is retried and resumes from LeavingPullMode.
func (d *Deps) settleMode(ctx context.Context, authorID int64) (feed.Mode, error) {
	mode, fans, err := d.author(ctx, authorID)
	if err != nil || mode == feed.PushMode || d.PullThreshold <= 0 {
		return mode, err
	}
	if mode == feed.PullMode {
		if feed.StaysPull(fans, d.PullThreshold) {
			return feed.PullMode, nil
		}
		if err := d.Social.SetMode(ctx, authorID, feed.LeavingPullMode); err != nil {
			return mode, err
		}
	}
	d.Log.Info("author leaves pull mode", "author_id", authorID, "fans", fans)
	es, err := d.Outbox.Entries(ctx, []int64{authorID}, feed.AtMost(math.MaxInt64), d.backfill())
	if err != nil {
		return mode, storeErr(err)
	}
	since := d.since(d.now().UnixMilli())
	for after := int64(0); ; {
		ids, err := d.audience(ctx, authorID, after, d.splitSize(), since)
		if err != nil {
			return mode, err
		}
		for _, e := range es {
			if err := deliver(ctx, d, OpAdd, e, ids, false); err != nil {
				return mode, err
			}
		}
		if len(ids) < d.splitSize() {
			break
		}
		after = ids[len(ids)-1]
	}
	if err := d.Social.SetMode(ctx, authorID, feed.PushMode); err != nil {
		return mode, err
	}
	return feed.PushMode, nil
}
