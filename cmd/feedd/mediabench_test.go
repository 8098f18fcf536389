package main

import (
	"os"
	"testing"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchMedia runs a small `feedd bench media` on each image store:
// uploads, the big uploads' peak memory, and previews read from feedd and,
// from the files, from nginx serving the same files.
func TestBenchMedia(t *testing.T) {
	for _, store := range []string{"files", "s3"} {
		t.Run(store, func(t *testing.T) {
			args := []string{"media", "--media-uploads", "3", "--media-concurrency", "2", "--media-photo-mp", "0.2", "--media-big-clients", "2",
				"--media-big-rounds", "2", "--media-big-mp", "1", "--media-previews", "4", "--media-read-concurrency", "4", "--duration", "300ms"}
			if store == "s3" {
				b := testenv.S3Bucket(t)
				args = append(args, "--media-s3", b.URL, "--media-s3-access-key", b.AccessKey, "--media-s3-secret-key-file", writeSecret(t, b.SecretKey), "--media-nginx", "")
			} else {
				nginx := os.Getenv(testenv.EnvNginx)
				if nginx == "" {
					if os.Getenv("CI") == "true" {
						t.Fatalf("%s is not set; under CI=true no test skips for a missing nginx (run scripts/test.sh)", testenv.EnvNginx)
					}
					t.Skipf("%s is not set; run the tests with scripts/test.sh", testenv.EnvNginx)
				}
				args = append(args, "--media-nginx", nginx)
			}
			out := runBenchJSON(t, args...)
			if out["store"] != store {
				t.Fatalf("store %v, want %s", out["store"], store)
			}
			fields := []string{"uploads_per_s", "upload_p50_ms", "upload_p99_ms", "rss_before_mb", "previews_per_s", "preview_bytes", "photo_bytes", "big_bytes"}
			if store == "files" {
				fields = append(fields, "nginx_previews_per_s", "feedd_over_nginx")
			}
			for _, f := range fields {
				if x, ok := out[f].(float64); !ok || x <= 0 {
					t.Errorf("%s = %v, want a positive number", f, out[f])
				}
			}
			if peaks, ok := out["big_peak_rss_mb"].([]any); !ok || len(peaks) != 2 || peaks[0].(float64) <= 0 {
				t.Errorf("big_peak_rss_mb = %v, want 2 rounds", out["big_peak_rss_mb"])
			}
		})
	}
}
