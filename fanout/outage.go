package fanout

import (
	"context"
	"errors"
	"time"
)

// A job cut off by a database outage (PostgreSQL restarting) waits for the
// database and runs again within the same attempt, instead of failing: a
// failed attempt is recorded only once River's completer reaches the
// database again, which it retries after 1, 2, 4 ... s, and the retry is
// fetched after that, seconds after the database's return
// (docs/operations.md, "When PostgreSQL restarts", has the measured case).
// Every job is idempotent, so running it again from the start writes
// nothing twice.

// outageChecks are how often, and outageReruns how many times, a job cut
// off by an outage looks for the database and runs again; past them (or
// the job's timeout) the error goes to River, which retries the job.
const (
	outageCheck  = 100 * time.Millisecond
	outageReruns = 3
)

// runThroughOutage runs work, and again each time it fails because the
// database is out of reach (Deps.Unavailable) once Deps.Ping finds it back.
// Inbox store failures are left to outcome (they snooze).
func runThroughOutage(ctx context.Context, d *Deps, work func() error) error {
	err := work()
	for range outageReruns {
		var ie *inboxError
		if err == nil || d.Unavailable == nil || d.Ping == nil || errors.As(err, &ie) || !d.Unavailable(err) || ctx.Err() != nil {
			return err
		}
		d.Log.Warn("database unavailable; the fan-out job runs again once it is back", "error", err)
		for {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(outageCheck):
			}
			if d.Ping(ctx) == nil {
				break
			}
		}
		err = work()
	}
	return err
}
