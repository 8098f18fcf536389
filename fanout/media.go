package fanout

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// MediaSweeper removes the images nobody uses any more
// (feed.Service.SweepMedia).
type MediaSweeper interface {
	SweepMedia(ctx context.Context) (n int, more bool, err error)
}

// MediaSweepArgs is the periodic job of the media's lifecycle
// (docs/operations.md, "Images"): uploads no post has shown for
// --media-orphan-ttl, the blobs of uploads that died half way, and the
// objects of removed blobs. River's leader inserts it every
// Deps.MediaSweepEvery, at most one at a time, on every engine.
type MediaSweepArgs struct{}

// Kind implements river.JobArgs.
func (MediaSweepArgs) Kind() string { return "media_sweep" }

// mediaSweepBudget is how long one run sweeps before it leaves the rest to
// the next run (well within --job-timeout's default).
const mediaSweepBudget = 5 * time.Second

type mediaSweepWorker struct {
	river.WorkerDefaults[MediaSweepArgs]
	deps *Deps
}

func (w *mediaSweepWorker) Work(ctx context.Context, job *river.Job[MediaSweepArgs]) error {
	began := time.Now()
	total := 0
	for {
		n, more, err := w.deps.Media.SweepMedia(ctx)
		if err != nil {
			return err
		}
		total += n
		if !more || time.Since(began) > mediaSweepBudget {
			if total > 0 {
				w.deps.Log.Info("media swept", "rows_and_objects", total, "more", more)
			}
			return nil
		}
	}
}

// mediaSweepJob is the periodic job's schedule.
func mediaSweepJob(every time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
		return MediaSweepArgs{}, &river.InsertOpts{
			Priority:    priorityBatch + 1,
			MaxAttempts: 3,
			UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}},
		}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
