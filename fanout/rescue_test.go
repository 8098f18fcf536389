package fanout_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
)

// TestRescueRunningSQLiteCap: a job that crashes its process at every
// run (left running at each start) is tried again after a growing wait
// while it has attempts left, then discarded and counted, never run at
// once forever.
func TestRescueRunningSQLiteCap(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 1)
	const maxAttempts = 4
	q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 0, MaxAttempts: maxAttempts}, &fanout.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := w.db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueTx(ctx, tx, feed.FanoutJob{PostID: 7, Score: 1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	var lastWait time.Duration
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		// What River's fetch writes when a worker takes the job; then the
		// process dies.
		if _, err := w.db.Write.Exec(`UPDATE river_job SET state = 'running', attempt = ?, attempted_at = datetime('now', 'subsec')`, attempt); err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		n, err := fanout.RescueRunningSQLite(ctx, riversqlite.New(w.db.Write).GetExecutor(), obs, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		var state string
		var scheduled time.Time
		var errs int
		if err := w.db.Read.QueryRow(`SELECT state, scheduled_at, coalesce(json_array_length(errors), 0) FROM river_job`).Scan(&state, &scheduled, &errs); err != nil {
			t.Fatal(err)
		}
		if errs != attempt {
			t.Fatalf("attempt %d: %d errors recorded, want one per crash", attempt, errs)
		}
		if attempt < maxAttempts {
			wait := scheduled.Sub(before)
			if n != 1 || (state != "retryable" && state != "available") || wait < 500*time.Millisecond || wait <= lastWait {
				t.Fatalf("attempt %d of %d: rescued %d, state %s, next run in %v (previous wait %v); want it run again after a longer wait",
					attempt, maxAttempts, n, state, wait, lastWait)
			}
			lastWait = wait
			if c := obs.count("feed_post"); c != 0 {
				t.Fatalf("attempt %d: %d discarded counted", attempt, c)
			}
			continue
		}
		if n != 0 || state != "discarded" || obs.count("feed_post") != 1 {
			t.Fatalf("last attempt: rescued %d, state %s, discarded counted %d; want discarded and counted once", n, state, obs.count("feed_post"))
		}
	}
}
