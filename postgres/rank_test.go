package postgres_test

import (
	"testing"

	"github.com/feedd/feedd/feedtest"
)

// TestRankFactsFollows: feedtest.CheckRankFactsFollows.
func TestRankFactsFollows(t *testing.T) {
	db, _ := openWithJobs(t)
	feedtest.CheckRankFactsFollows(t, db, func(viewer int64, n int) {
		if _, err := db.Pool.Exec(t.Context(), `INSERT INTO follows (follower_id, followee_id, created_at)
			SELECT $1, (1::bigint << 41) + i, 1 FROM generate_series(1, $2) i`, viewer, n); err != nil {
			t.Fatal(err)
		}
	})
}
