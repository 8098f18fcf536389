package fanout

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	feed "github.com/feedd/feedd"
)

// EraseArgs is the job of one user's erasure (feed.EraseJob): it works the
// erasure's steps (feed.Service.EraseWork) for eraseBudget a run, then
// snoozes, which costs no attempt, until the erasure is done. Its progress
// is in the erasure's row, so a run cut off anywhere goes on from there.
type EraseArgs struct {
	ErasureID int64 `json:"erasure_id"`
}

// Kind implements river.JobArgs.
func (EraseArgs) Kind() string { return "feed_erase" }

// Erase timing: a run works for eraseBudget (a step's batch is short),
// well within eraseTimeout, and holds a worker of the default queue no
// longer than a big post's delivery does.
const (
	eraseBudget  = 5 * time.Second
	eraseTimeout = time.Minute
)

// priorityErase: erasures yield to posts and their batches.
const priorityErase = 3

type eraseWorker struct {
	river.WorkerDefaults[EraseArgs]
	deps *Deps
}

// Timeout implements river.Worker: a run's own bound, whatever
// --job-timeout says of deliveries.
func (w *eraseWorker) Timeout(*river.Job[EraseArgs]) time.Duration { return eraseTimeout }

func (w *eraseWorker) Work(ctx context.Context, job *river.Job[EraseArgs]) error {
	if w.deps.Erase == nil {
		return errors.New("fanout: no erasure configured")
	}
	var done bool
	err := runThroughOutage(ctx, w.deps, func() error {
		var err error
		done, err = w.deps.Erase(ctx, job.Args.ErasureID, eraseBudget)
		return err
	})
	if errors.Is(err, feed.ErrUnavailable) {
		err = &inboxError{err} // Redis out of reach: snoozed, no attempt spent
	}
	if err != nil {
		return outcome(w.deps, job.JobRow, err)
	}
	if !done {
		return river.JobSnooze(0)
	}
	return nil
}
