package postgres

import (
	"context"
	"time"
)

// RescueStuckJobs makes the fan-out jobs that have been running for longer
// than after available again, at once, and returns how many there were.
// after is at least the job timeout, so such a job belongs to a worker
// process that died (kill -9, a lost machine): River's own rescuer does the
// same but looks only every 30 s and then leaves the job to its scheduler
// (5 s more), so a killed worker's deliveries waited up to a minute
// (docs/operations.md, "A worker killed during a fan-out"). A job run twice
// is harmless: every delivery is idempotent. Jobs that used their last
// attempt are left to River's rescuer, which discards them.
func (db *DB) RescueStuckJobs(ctx context.Context, after time.Duration) (int64, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE state = 'running' AND attempted_at < now() - make_interval(secs => $1) AND attempt < max_attempts`,
		after.Seconds())
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
