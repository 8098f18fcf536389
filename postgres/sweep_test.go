package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedd/feedd/rank"
)

// TestExpiredRowsSwept checks that what expires in the database is deleted
// by the writes that add more of it, so that none of these tables grows
// without bound: login codes (by SaveCode), rate counters (by Count) and
// ranked scrolls' snapshots (by SaveSnapshot); sessions have
// TestSessionSweepClock. Rows still in force are kept.
func TestExpiredRowsSwept(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-time.Hour).UnixMilli()
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}

	// 150 expired codes past their resend window and one in force: each
	// SaveCode sweeps up to 100.
	exec(`INSERT INTO login_codes (phone, code_hash, sent_at, expires_at) SELECT 'old' || g, 'h', $1, $1 FROM generate_series(1, 150) g`, old)
	exec(`INSERT INTO login_codes (phone, code_hash, sent_at, expires_at) VALUES ('live', 'h', $1, $2)`, now.UnixMilli(), now.Add(time.Minute).UnixMilli())
	for i, left := range []int{50, 0} {
		if err := db.SaveCode(ctx, fmt.Sprint("new", i), "h", now, 2*time.Minute, time.Minute); err != nil {
			t.Fatal(err)
		}
		if n := count(`SELECT count(*) FROM login_codes WHERE phone LIKE 'old%'`); n != left {
			t.Fatalf("after SaveCode %d: %d expired codes, want %d", i+1, n, left)
		}
	}
	if n := count(`SELECT count(*) FROM login_codes WHERE phone IN ('live', 'new0', 'new1')`); n != 3 {
		t.Fatalf("%d of the 3 codes in force kept", n)
	}

	// Rate counters: 150 ended windows and one running.
	exec(`INSERT INTO rate_counts (key, window_end, n) SELECT 'old' || g, $1, 1 FROM generate_series(1, 150) g`, old)
	exec(`INSERT INTO rate_counts (key, window_end, n) VALUES ('live', $1, 1)`, now.Add(time.Minute).UnixMilli())
	for i, left := range []int{50, 0} {
		if _, _, err := db.Count(ctx, "counting", time.Minute, now, 1); err != nil {
			t.Fatal(err)
		}
		if n := count(`SELECT count(*) FROM rate_counts WHERE key LIKE 'old%'`); n != left {
			t.Fatalf("after Count %d: %d ended windows, want %d", i+1, n, left)
		}
	}
	if n := count(`SELECT count(*) FROM rate_counts WHERE key IN ('live', 'counting')`); n != 2 {
		t.Fatalf("%d of the 2 running windows kept", n)
	}

	// Snapshots: expired ones of other users go with any save; another
	// user's one in force stays.
	exec(`INSERT INTO rank_snapshots (id, user_id, items, created_at, expires_at) SELECT 'old' || g, g, '[]', $1, $1 FROM generate_series(1, 150) g`, old)
	exec(`INSERT INTO rank_snapshots (id, user_id, items, created_at, expires_at) VALUES ('live', 7, '[]', $1, $2)`, now.UnixMilli(), now.Add(time.Minute).UnixMilli())
	if err := db.SaveSnapshot(ctx, 9, "new", []rank.Item{{PostID: 1}}, now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM rank_snapshots WHERE id LIKE 'old%'`); n != 0 {
		t.Fatalf("%d expired snapshots left after a save", n)
	}
	if n := count(`SELECT count(*) FROM rank_snapshots WHERE id IN ('live', 'new')`); n != 2 {
		t.Fatalf("%d of the 2 snapshots in force kept", n)
	}
}

// TestRescueStuckJobs: a job running for longer than the horizon is made
// available again at once; one that started since, or that used its last
// attempt, is left alone.
func TestRescueStuckJobs(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	insert := func(attempt, maxAttempts int, attempted time.Time) int64 {
		t.Helper()
		var id int64
		err := db.Pool.QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state, attempt, attempted_at, scheduled_at)
			VALUES ('{}', 'feed_post', $1, 1, 'default', 'running', $2, $3, $3) RETURNING id`, maxAttempts, attempt, attempted).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	now := time.Now()
	orphan := insert(1, 25, now.Add(-time.Minute))
	recent := insert(1, 25, now.Add(-time.Second))
	last := insert(25, 25, now.Add(-time.Minute))
	n, err := db.RescueStuckJobs(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("rescued %d jobs, want 1", n)
	}
	for id, want := range map[int64]string{orphan: "available", recent: "running", last: "running"} {
		var state string
		if err := db.Pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state != want {
			t.Errorf("job %d: %s, want %s", id, state, want)
		}
	}
}
