package main

import (
	"testing"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchNotify runs a small `feedd bench notify` on each database: the
// run itself checks every count (the on phase's group counts every like,
// the off phase records none, the big group counts its bulk actors and the
// likes into it exactly), and the result has every figure.
func TestBenchNotify(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{"notify", "--notify-likes", "100", "--notify-big-group", "2000", "--notify-reads", "10"}
			if backend == "postgres" {
				args = append(args, "--database-url", testenv.PostgresURL(t))
			}
			out := runBenchJSON(t, args...)
			if out["backend"] != backend || out["big_group_count"].(float64) != 2100 {
				t.Fatalf("backend %v, big group count %v; want %s and 2100", out["backend"], out["big_group_count"], backend)
			}
			for _, f := range []string{"on_likes_per_s", "off_likes_per_s", "on_p99_ms", "off_p99_ms", "big_group_like_p99_ms", "page_3_actors_p50_ms", "page_big_group_p50_ms", "page_p50_ratio"} {
				if x, ok := out[f].(float64); !ok || x <= 0 {
					t.Errorf("%s = %v, want a positive number", f, out[f])
				}
			}
		})
	}
}

// TestBenchPush runs a small `feedd bench push`: every push arrives once,
// the first are decrypted and their VAPID JWT checked, and the result has
// its figure.
func TestBenchPush(t *testing.T) {
	out := runBenchJSON(t, "push", "--push-groups", "30", "--push-subscriptions", "2", "--runs", "2")
	if out["backend"] != "sqlite" || out["checked"].(float64) != 60 {
		t.Fatalf("backend %v, checked %v; want sqlite and 60", out["backend"], out["checked"])
	}
	if x, ok := out["pushes_per_s"].(float64); !ok || x <= 0 {
		t.Fatalf("pushes_per_s = %v", out["pushes_per_s"])
	}
}
