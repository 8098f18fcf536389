package main

import (
	"testing"
	"time"
)

// TestEmbeddedRestartRescuesAtOnce kills the embedded default with SIGKILL
// while it fans a post out, restarts it with --rescue-after 2m, and checks that the orphaned job's deliveries are all made
// long before that: the embedded process is its database's only worker and
// takes its orphans back at start.
func TestEmbeddedRestartRescuesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a feedd process")
	}
	const followers = 2000
	dir := t.TempDir()
	seedFollowers(t, dir, "13800000001", followers)
	ro := openRead(t, dir)
	deliveries := func(postID int64) int {
		return count(t, ro, `SELECT count(*) FROM inbox WHERE post_id = ?`, postID)
	}
	// One follower per inbox write and one job for the whole audience: the
	// job is still running when the process dies.
	p := startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "2", "--fanout-batch", "1", "--job-timeout", "1m", "--rescue-after", "2m")
	c := p.client(t)
	tok := c.login("13800000001")
	var postID int64
	c.must("POST", "/blog", tok, map[string]any{"title": "to everyone", "content": "hello"}, &postID)
	deadline := time.Now().Add(30 * time.Second)
	for deliveries(postID) < followers/10 {
		if time.Now().After(deadline) {
			t.Fatalf("fan-out did not start: %d deliveries", deliveries(postID))
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.kill()
	atKill := deliveries(postID)
	if atKill >= followers+1 {
		t.Fatalf("fan-out finished before the kill (%d deliveries); slow it down", atKill)
	}
	if n := count(t, ro, `SELECT count(*) FROM river_job WHERE state = 'running'`); n == 0 {
		t.Fatal("no job left running by the killed process")
	}
	t.Logf("killed with %d of %d deliveries made", atKill, followers+1)

	restart := time.Now()
	p = startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "2", "--job-timeout", "1m", "--rescue-after", "2m")
	// Far less than --rescue-after: only a rescue at start gets here.
	deadline = time.Now().Add(60 * time.Second)
	for deliveries(postID) < followers+1 {
		if time.Now().After(deadline) {
			t.Fatalf("orphaned deliveries not done after restart: %d of %d", deliveries(postID), followers+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("every orphaned delivery done %.2f s after the restart began", time.Since(restart).Seconds())
	if n := count(t, ro, `SELECT count(*) FROM (SELECT user_id FROM inbox WHERE post_id = ? GROUP BY user_id HAVING count(*) > 1)`, postID); n != 0 {
		t.Fatalf("%d users hold the post more than once", n)
	}
	p.stop(t)
}
