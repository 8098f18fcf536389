package main

import (
	"strings"
	"testing"
)

// TestBenchRankNDCG runs `feedd bench rank` on small communities of
// different shapes and seeds (feedd is told only the likes) and checks the
// quality property of the ranked timeline: its first page scores NDCG@10
// at least 1.3 times the chronological page's, and at least 0.5. It checks
// no timing (BENCHMARKS.md has the latencies).
func TestBenchRankNDCG(t *testing.T) {
	t.Parallel()
	for _, world := range []string{
		"--rank-seed 11 --rank-viewers 10 --rank-authors 20 --rank-follows 10 --rank-favourites 2 --rank-before 8 --rank-after 4",
		"--rank-seed 12 --rank-viewers 10 --rank-authors 30 --rank-follows 20 --rank-favourites 5 --rank-p-fav 0.3 --rank-p-other 0.1 --rank-before 6 --rank-after 3",
		"--rank-seed 13 --rank-viewers 10 --rank-authors 15 --rank-follows 15 --rank-favourites 1 --rank-p-fav 0.6 --rank-before 10 --rank-after 8",
	} {
		t.Run(strings.Fields(world)[1], func(t *testing.T) {
			out := runBenchJSON(t, append([]string{"rank", "--rank-rounds", "1"}, strings.Fields(world)...)...)
			ranked, chrono := out["ndcg_ranked"].(float64), out["ndcg_chrono"].(float64)
			if ranked < 0.5 || ranked < 1.3*chrono {
				t.Fatalf("world %s: NDCG@10 ranked %.3f, chronological %.3f: want ranked >= 0.5 and >= 1.3x", world, ranked, chrono)
			}
			for _, f := range []string{"ranked_p50_ms", "ranked_p99_ms", "chrono_p50_ms", "chrono_p99_ms", "ranked_next_p99_ms", "ranked_first_p50_ms", "chrono_first_p50_ms", "likes"} {
				if x, ok := out[f].(float64); !ok || x <= 0 {
					t.Errorf("%s = %v, want a positive number", f, out[f])
				}
			}
			t.Logf("NDCG@10 ranked %.3f chronological %.3f", ranked, chrono)
		})
	}
}

// TestBenchRankReposts runs `feedd bench rank` with reposts: a post a
// viewer's favourite reposted is relevant to the viewer too, which only
// the reposts feature tells; the first pages are scored with it and
// without it. It checks the figures are there, and that the feature does
// not make the ranking worse here.
func TestBenchRankReposts(t *testing.T) {
	out := runBenchJSON(t, "rank", "--rank-rounds", "1", "--rank-seed", "11", "--rank-viewers", "10", "--rank-authors", "20", "--rank-follows", "10",
		"--rank-favourites", "2", "--rank-before", "8", "--rank-after", "4", "--rank-reposts", "3")
	with, without := out["ndcg_ranked"].(float64), out["ndcg_ranked_without_reposts"].(float64)
	if out["reposts"].(float64) != 60 || with <= 0 || without <= 0 || with < without {
		t.Fatalf("reposts %v, NDCG@10 with the reposts feature %.3f, without %.3f", out["reposts"], with, without)
	}
	t.Logf("NDCG@10 ranked %.3f, without the reposts feature %.3f", with, without)
}
