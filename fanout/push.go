package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	feed "github.com/feedd/feedd"
)

// QueuePush is the queue of push jobs (PushArgs): each waits on a push
// service's answer over the network, so they have workers of their own
// (pushWorkersPer per worker) and never hold up deliveries to inboxes.
const (
	QueuePush      = "push"
	pushWorkersPer = 4
)

// Retries of a push the push service did not take (429, 5xx, no answer):
// after the service's Retry-After when it sent one (at most pushWaitMax),
// otherwise doubling from pushWaitFirst; a push is given up after
// pushRetries retries.
const (
	pushWaitFirst = 5 * time.Second
	pushWaitMax   = time.Hour
	pushRetries   = 10
)

// PushArgs is the job of one notification group to one push subscription.
type PushArgs struct {
	SubscriptionID int64 `json:"subscription_id"`
	UserID         int64 `json:"user_id"`
	GroupID        int64 `json:"group_id"`
}

// Kind implements river.JobArgs.
func (PushArgs) Kind() string { return "feed_push" }

// Pusher delivers push jobs: feed.Service.DeliverPush.
type Pusher interface {
	DeliverPush(ctx context.Context, j feed.PushJob) (feed.PushOutcome, time.Duration, error)
}

type pushWorker struct {
	river.WorkerDefaults[PushArgs]
	deps *Deps
}

// Timeout bounds one push: a push service that does not answer in time
// is tried again later.
func (w *pushWorker) Timeout(*river.Job[PushArgs]) time.Duration { return 30 * time.Second }

func (w *pushWorker) Work(ctx context.Context, job *river.Job[PushArgs]) error {
	d := w.deps
	if d.Push == nil {
		return nil // this process sends no pushes: the job is done
	}
	a := job.Args
	out, wait, err := d.Push.DeliverPush(ctx, feed.PushJob{SubscriptionID: a.SubscriptionID, UserID: a.UserID, GroupID: a.GroupID})
	if err != nil {
		return err // the store's: River retries with its backoff
	}
	if d.Observe != nil {
		d.Observe.Pushed(out.String())
	}
	if out != feed.PushRetry {
		if out == feed.PushRefused {
			d.Log.Warn("push refused for good", "job_id", job.ID, "subscription_id", a.SubscriptionID, "group_id", a.GroupID)
		}
		return nil
	}
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	if meta.Snoozes >= pushRetries {
		d.Log.Warn("push given up after retries", "job_id", job.ID, "subscription_id", a.SubscriptionID, "group_id", a.GroupID, "retries", meta.Snoozes)
		return river.JobCancel(fmt.Errorf("push service did not take the message after %d retries", meta.Snoozes))
	}
	return river.JobSnooze(pushWait(meta.Snoozes, wait))
}

// pushWait is the wait before retry n+1 of a push: the push service's
// Retry-After when it said one, else doubling from pushWaitFirst; at
// most pushWaitMax.
func pushWait(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, pushWaitMax)
	}
	return min(pushWaitFirst<<min(n, 10), pushWaitMax)
}
