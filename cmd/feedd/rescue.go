package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/feedd/feedd/postgres"
)

// rescueInterval is how often a process working jobs on PostgreSQL looks
// for the jobs of dead workers.
const rescueInterval = time.Second

// rescueLoop makes the jobs running for longer than after available again,
// every rescueInterval until ctx ends (postgres.DB.RescueStuckJobs).
func rescueLoop(ctx context.Context, db *postgres.DB, after time.Duration, log *slog.Logger) {
	t := time.NewTicker(rescueInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := db.RescueStuckJobs(ctx, after)
		if err != nil && ctx.Err() == nil {
			log.Debug("rescue jobs of dead workers", "error", err)
		} else if n > 0 {
			log.Warn("jobs of a dead worker retried", "jobs", n, "running_for_over", after)
		}
	}
}
