package fanout

import (
	"context"
	"database/sql"
)

// RescueRunningSQLite makes every job that the database shows running
// available again, at once, and returns how many there were. It is for a
// process starting on a SQLite database whose only worker it is (the
// embedded default): no job can be running anywhere while it starts, so a
// running job is an orphan of a process that died (kill -9, power loss),
// and waiting --rescue-after for River's rescuer would only delay its
// deliveries. A job run twice is harmless (every delivery is idempotent),
// but with workers of another process on the same database this would
// start a second run of their jobs: do not call it then.
func RescueRunningSQLite(ctx context.Context, db *sql.DB) (int64, error) {
	// The same state and scheduled_at River's own retry writes.
	res, err := db.ExecContext(ctx, `UPDATE river_job SET state = 'available', scheduled_at = datetime('now', 'subsec')
		WHERE state = 'running'`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
