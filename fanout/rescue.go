package fanout

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// rescueBatch is how many running jobs RescueRunningSQLite reads at a time.
const rescueBatch = 1000

// RescueRunningSQLite settles every job that the database of exec shows
// running, as River's rescuer would, without waiting --rescue-after, and
// returns how many it made retryable. It is for a process starting on a
// SQLite database whose only worker it is (the embedded default): no job
// can be running anywhere while it starts, so a running job is an orphan of
// a process that died (kill -9, power loss, or the job itself crashing it).
//
// Each such job gets an error recorded for the lost attempt and, while it
// has attempts left (attempt < max_attempts), is scheduled again after
// River's own retry backoff (attempt^4 seconds: 1 s, 16 s, 81 s ...); a job
// that used its last attempt is discarded, logged and counted
// (observe.Discarded), as a job that failed its last attempt is
// (errorHandler). So a job that crashes the process at every run is tried
// max_attempts times in all, further and further apart, then given up. A
// job run twice is harmless (every delivery is idempotent), but with
// workers of another process on the same database this would settle their
// running jobs too: do not call it then.
func RescueRunningSQLite(ctx context.Context, exec riverdriver.Executor, observe Observer, log *slog.Logger) (int, error) {
	policy := &river.DefaultClientRetryPolicy{}
	report := &errorHandler{log: log, observe: observe}
	now := time.Now().UTC()
	// Every running job, whatever its start time (a clock set back since
	// included): none can be running.
	horizon := now.Add(24 * time.Hour)
	retried := 0
	for after := int64(0); ; {
		jobs, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: after, Max: rescueBatch, StuckHorizon: horizon})
		if err != nil || len(jobs) == 0 {
			return retried, err
		}
		p := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
		var discarded []*rivertype.JobRow
		for _, job := range jobs {
			after = job.ID
			e, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: lostAttempt})
			if err != nil {
				return retried, err
			}
			p.ID, p.Error = append(p.ID, job.ID), append(p.Error, e)
			if job.Attempt >= job.MaxAttempts {
				p.State, p.FinalizedAt, p.ScheduledAt = append(p.State, string(rivertype.JobStateDiscarded)), append(p.FinalizedAt, &now), append(p.ScheduledAt, job.ScheduledAt)
				discarded = append(discarded, job)
				continue
			}
			// As River's executor does, a retry due within its scheduler's
			// interval is left available (fetched once it is due), a later
			// one retryable (made available by the scheduler).
			next, state := policy.NextRetry(job), rivertype.JobStateAvailable
			if next.Sub(now) > riverSchedulerInterval {
				state = rivertype.JobStateRetryable
			}
			p.State, p.FinalizedAt, p.ScheduledAt = append(p.State, string(state)), append(p.FinalizedAt, nil), append(p.ScheduledAt, next)
			retried++
		}
		if _, err := exec.JobRescueMany(ctx, p); err != nil {
			return retried, err
		}
		for _, job := range discarded {
			report.report(job, lostAttempt)
		}
	}
}

// riverSchedulerInterval is how often River's scheduler makes due
// retryable jobs available (its default; feedd does not change it).
const riverSchedulerInterval = 5 * time.Second

// lostAttempt is the error recorded for an attempt that a process's end cut off.
const lostAttempt = "the process running the job ended during it (crash, kill or power loss); settled at the next start"
