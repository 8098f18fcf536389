package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/feedd/feedd/fanout"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/sqlite"
)

// The fan-out lag read from River's table: 0 with nothing waiting, the age
// of the oldest waiting post job otherwise; batch jobs (a big audience's)
// and jobs scheduled for later do not count.
func TestQueueLag(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		db, err := sqlite.Open(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkQueueLag(t, riversqlite.New(db.Write), func(ctx context.Context) (time.Duration, error) { return queueLagSQL(ctx, db.Read) },
			func(ctx context.Context, id int64, d time.Duration) error {
				_, err := db.Write.ExecContext(ctx, `UPDATE river_job SET scheduled_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?) WHERE id = ?`,
					fmt.Sprintf("%+.3f seconds", -d.Seconds()), id)
				return err
			})
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(t.Context(), testenv.PostgresURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkQueueLag(t, riverpgxv5.New(db.Pool), func(ctx context.Context) (time.Duration, error) { return queueLagPG(ctx, db.Pool) },
			func(ctx context.Context, id int64, d time.Duration) error {
				_, err := db.Pool.Exec(ctx, `UPDATE river_job SET scheduled_at = now() - make_interval(secs => $1) WHERE id = $2`, d.Seconds(), id)
				return err
			})
	})
}

// checkQueueLag inserts jobs through driver and reads the lag with read;
// backdate makes a job's scheduled_at d ago (River schedules a job given a
// time of its own instead of making it available).
func checkQueueLag[TTx any](t *testing.T, driver riverdriver.Driver[TTx], read func(context.Context) (time.Duration, error),
	backdate func(ctx context.Context, id int64, d time.Duration) error) {
	ctx := t.Context()
	if err := fanout.Migrate(ctx, driver); err != nil {
		t.Fatal(err)
	}
	q, err := fanout.New(driver, fanout.Config{}, &fanout.Deps{}) // insert-only
	if err != nil {
		t.Fatal(err)
	}
	lagIs := func(what string, lo, hi time.Duration) {
		t.Helper()
		lag, err := read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if lag < lo || lag > hi {
			t.Errorf("%s: lag %v, want %v to %v", what, lag, lo, hi)
		}
	}
	lagIs("no jobs", 0, 0)
	// insert inserts a job made available age ago (0: now; < 0: scheduled
	// for -age from now).
	insert := func(args river.JobArgs, priority int, age time.Duration) {
		t.Helper()
		opts := &river.InsertOpts{Priority: priority}
		if age < 0 {
			opts.ScheduledAt = time.Now().Add(-age)
		}
		res, err := q.Client.Insert(ctx, args, opts)
		if err != nil {
			t.Fatal(err)
		}
		if age > 0 {
			if err := backdate(ctx, res.Job.ID, age); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(fanout.BatchArgs{Op: fanout.OpAdd, PostID: 1, AuthorID: 1, Upto: 10}, 2, time.Minute)
	insert(fanout.PostArgs{Op: fanout.OpAdd, PostID: 2, AuthorID: 1}, 1, -time.Hour)
	lagIs("only a batch job and a job scheduled for later", 0, 0)
	insert(fanout.PostArgs{Op: fanout.OpAdd, PostID: 3, AuthorID: 1}, 1, 0)
	lagIs("a post job just inserted", 0, time.Second)
	insert(fanout.PostArgs{Op: fanout.OpAdd, PostID: 4, AuthorID: 1}, 1, 3*time.Second)
	insert(fanout.PostArgs{Op: fanout.OpAdd, PostID: 5, AuthorID: 1}, 1, time.Second)
	lagIs("post jobs waiting 3 s and 1 s", 3*time.Second, 13*time.Second)
}
