package main

import (
	"testing"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchComments runs a small `feedd bench comments` on each database:
// the run itself checks the counts (every comment of a throughput run
// counted, first pages full) and that the big post's comments are purged
// after its delete; the result has every figure.
func TestBenchComments(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{"comments", "--runs", "1", "--comments-n", "200", "--comments-users", "50", "--comments-big", "3000", "--comments-reads", "10"}
			if backend == "postgres" {
				args = append(args, "--database-url", testenv.PostgresURL(t))
			}
			out := runBenchJSON(t, args...)
			if out["backend"] != backend || out["big_count"].(float64) != 3009 || out["purged"].(float64) != 0 {
				t.Fatalf("backend %v, big count %v, left after the purge %v; want %s, 3009 (3000 and 3 replies to each of 3 threads), 0",
					out["backend"], out["big_count"], out["purged"], backend)
			}
			for _, f := range []string{"comments_per_s", "comment_p99_ms", "top_big_p50_ms", "top_small_p50_ms", "top_p50_ratio", "new_big_p50_ms", "new_small_p50_ms", "new_p50_ratio", "delete_ms", "purged_ms"} {
				if x, ok := out[f].(float64); !ok || x <= 0 {
					t.Errorf("%s = %v, want a positive number", f, out[f])
				}
			}
		})
	}
}
