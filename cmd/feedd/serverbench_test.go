package main

import (
	"testing"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchServer runs a small `feedd bench server` on each database: the
// run checks that every batch item was done, that each retry of a foreign
// id answered the first post, and that concurrent retries of one made one
// post; the result has every figure.
func TestBenchServer(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			args := []string{"server", "--runs", "2", "--server-users", "120", "--server-pairs", "300", "--server-publishes", "40", "--server-retries", "10"}
			if backend == "postgres" {
				args = append(args, "--database-url", testenv.PostgresURL(t))
			}
			out := runBenchJSON(t, args...)
			if out["backend"] != backend || out["retries_created"].(float64) != 1 || len(out["follow_batch_runs_s"].([]any)) != 2 {
				t.Fatalf("backend %v, retries created %v, follow runs %v", out["backend"], out["retries_created"], out["follow_batch_runs_s"])
			}
			for _, f := range []string{"upsert_users_per_s", "upsert_batch_p50_ms", "follow_batch_s", "follow_pairs_per_s", "publish_per_s", "publish_p50_ms", "retry_p50_ms"} {
				if x, ok := out[f].(float64); !ok || x <= 0 {
					t.Errorf("%s = %v, want a positive number", f, out[f])
				}
			}
		})
	}
}
