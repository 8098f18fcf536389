package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedd/feedd/sqlite"
)

// seedFollowers creates an author (phone) and n followers directly in the
// database in dir, before feedd starts.
func seedFollowers(t *testing.T, dir, phone string, n int) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var author int64
	if err := tx.QueryRow(`INSERT INTO users (phone, nick_name, created_at, active_at) VALUES (?, 'author', 0, ?) RETURNING id`, phone, time.Now().UnixMilli()).Scan(&author); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		var id int64
		if err := tx.QueryRow(`INSERT INTO users (phone, nick_name, created_at, active_at) VALUES (?, ?, 0, ?) RETURNING id`, fmt.Sprintf("1700%07d", i), fmt.Sprintf("f%d", i), time.Now().UnixMilli()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, 0)`, id, author); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`UPDATE users SET fans = ? WHERE id = ?`, n, author); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The inbox file, paired with feedd.db as feedd serve's first start
	// would, so that openRead finds it.
	idb, err := sqlite.OpenInbox(ctx, dir, sqlite.Options{}, db)
	if err != nil {
		t.Fatal(err)
	}
	idb.Close()
}

// openRead opens the embedded databases in dir read-only, as one: inbox.db
// (the inboxes) with feedd.db attached, so that table inbox is inbox.db's
// and every other table feedd.db's.
func openRead(t *testing.T, dir string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.InboxFile)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // ATTACH is the connection's
	db.SetConnMaxLifetime(0)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`ATTACH DATABASE ? AS feedd`, "file:"+filepath.Join(dir, "feedd.db")+"?mode=ro"); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFanoutSurvivesKill publishes to 3000 followers, kills feedd with
// SIGKILL half way through the fan-out, restarts it, and checks that every
// follower (and the author) ends up holding the post exactly once.
func TestFanoutSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a feedd process")
	}
	const followers = 3000
	dir := t.TempDir()
	seedFollowers(t, dir, "13800000001", followers)
	ro := openRead(t, dir)

	// One follower per inbox write and small jobs: a slow fan-out to cut.
	p := startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "2",
		"--poll-interval", "20ms", "--fanout-batch", "1", "--fanout-split", "250")
	c := p.client(t)
	tok := c.login("13800000001")
	var postID int64
	c.must("POST", "/blog", tok, map[string]any{"title": "to everyone", "content": "hello"}, &postID)

	var atKill int
	deadline := time.Now().Add(30 * time.Second)
	for {
		atKill = count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID)
		if atKill > followers/10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fan-out did not start: %d deliveries", atKill)
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.kill()
	atKill = count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID)
	if atKill >= followers+1 {
		t.Fatalf("fan-out finished before the kill (%d deliveries); slow it down", atKill)
	}
	t.Logf("killed with %d of %d deliveries made", atKill, followers+1)

	// Restart with a short rescue window: the killed process's running jobs
	// are orphans and are retried.
	p = startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "4",
		"--poll-interval", "20ms", "--job-timeout", "2s", "--rescue-after", "2s")
	deadline = time.Now().Add(90 * time.Second)
	for count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID) < followers+1 {
		if time.Now().After(deadline) {
			t.Fatalf("fan-out not complete after restart: %d of %d", count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID), followers+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Exactly the audience, each once.
	if n := count(t, ro, `SELECT count(*) FROM (SELECT user_id FROM inbox WHERE post_id = ? GROUP BY user_id HAVING count(*) > 1)`, postID); n != 0 {
		t.Fatalf("%d users hold the post more than once", n)
	}
	if n := count(t, ro, `SELECT count(*) FROM follows f LEFT JOIN inbox i ON i.user_id = f.follower_id AND i.post_id = ?
		WHERE f.followee_id = (SELECT user_id FROM posts WHERE id = ?) AND i.user_id IS NULL`, postID, postID); n != 0 {
		t.Fatalf("%d followers lack the post", n)
	}
	if n := count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID); n != followers+1 {
		t.Fatalf("%d deliveries, want %d", n, followers+1)
	}
	// Unlike the first, the restarted process shuts down gracefully.
	p.stop(t)
}
