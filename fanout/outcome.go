package fanout

// What becomes of a job that failed: inbox store outages snoozed, other
// errors retried by River, logged, and when they used the last attempt
// counted (Observer.Discarded).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	feed "github.com/feedd/feedd"
)

// inboxError marks an inbox or outbox call that failed because the store
// could not be reached (feed.ErrUnavailable: a lost connection, an open
// breaker). Such jobs are snoozed, not failed: a snooze uses no attempt,
// so an outage of any length delays deliveries but never discards them,
// and they all arrive once the store is back.
type inboxError struct{ err error }

func (e *inboxError) Error() string { return "inbox store unavailable: " + e.err.Error() }
func (e *inboxError) Unwrap() error { return e.err }

// refusedError marks an inbox write that the store answered with an error
// (a key of the wrong type, a script error, an entry the layout refuses):
// the same write would fail again. It spends an attempt, and it does not
// stop the job's other writes, so the rest of the audience gets the post;
// a job that keeps getting it fails for good after its last attempt and is
// reported (errorHandler).
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "inbox write refused: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// storeErr is the error of an inbox or outbox call as a job returns it:
// an outage marked for a snooze (inboxError), any other error as a refusal.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, feed.ErrUnavailable):
		return &inboxError{err}
	}
	return &refusedError{err}
}

// refused reports whether err is a refused inbox write (refusedError):
// the job goes on with its other writes, and fails at its end.
func refused(err error) bool {
	var re *refusedError
	return errors.As(err, &re)
}

// snoozeFor is the wait before a job whose inbox writes failed tries again:
// doubling from 250 ms up to 10 s, by how many times it was snoozed.
func snoozeFor(snoozes int) time.Duration {
	return min(250*time.Millisecond<<min(snoozes, 6), 10*time.Second)
}

// outcome turns a job's error into what River should do with it.
func outcome(d *Deps, job *rivertype.JobRow, err error) error {
	var ie *inboxError
	if err == nil || !errors.As(err, &ie) {
		return err
	}
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	wait := snoozeFor(meta.Snoozes)
	d.Log.Warn("inbox store unavailable; fan-out job snoozed", "job_id", job.ID, "kind", job.Kind, "wait", wait, "error", ie.err)
	return river.JobSnooze(wait)
}

// errorHandler logs job failures; a job that has used its last attempt is
// logged at error level with its post id and counted (Observer.Discarded),
// so a lost delivery is never silent.
type errorHandler struct {
	log     *slog.Logger
	observe Observer
}

func (h *errorHandler) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	h.report(job, err.Error())
	return nil
}

func (h *errorHandler) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	h.report(job, fmt.Sprintf("panic: %v\n%s", panicVal, trace))
	return nil
}

func (h *errorHandler) report(job *rivertype.JobRow, msg string) {
	var a struct {
		PostID int64  `json:"post_id"`
		Op     string `json:"op"`
	}
	_ = json.Unmarshal(job.EncodedArgs, &a)
	attrs := []any{"job_id", job.ID, "kind", job.Kind, "op", a.Op, "post_id", a.PostID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "error", msg}
	if job.Attempt >= job.MaxAttempts {
		h.log.Error("fan-out job failed for good", attrs...)
		if h.observe != nil {
			h.observe.Discarded(job.Kind)
		}
		return
	}
	h.log.Warn("fan-out job failed; will retry", attrs...)
}
