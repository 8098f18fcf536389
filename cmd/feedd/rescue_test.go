package main

import (
	"database/sql"
	"path/filepath"
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

// TestEmbeddedRestartDiscardsAtCap: a job that was running on its last
// attempt when the process died (a job that crashes its process at every
// run gets there) is not run again at the next start but discarded, logged
// and counted in feedd_fanout_jobs_discarded_total; one with attempts left
// is scheduled again after River's backoff, not at once.
func TestEmbeddedRestartDiscardsAtCap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts a feedd process")
	}
	dir := t.TempDir()
	seedFollowers(t, dir, "13800000001", 3)
	p := startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "1")
	c := p.client(t)
	tok := c.login("13800000001")
	var last, first int64
	c.must("POST", "/blog", tok, map[string]any{"title": "one", "content": "c"}, &first)
	c.must("POST", "/blog", tok, map[string]any{"title": "two", "content": "c"}, &last)
	ro := openRead(t, dir)
	waitFor(t, "both posts' jobs", func() bool {
		return count(t, ro, `SELECT count(*) FROM river_job WHERE kind = 'feed_post' AND state = 'completed'`) == 2
	})
	p.stop(t)

	// As the process would leave them had it died running them: the first
	// post's job on its last attempt, the second's on its first.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "feedd.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, j := range []struct {
		post    int64
		attempt string
	}{{first, "max_attempts"}, {last, "1"}} {
		if _, err := db.Exec(`UPDATE river_job SET state = 'running', attempt = `+j.attempt+`, attempted_at = datetime('now', 'subsec'), finalized_at = NULL
			WHERE kind = 'feed_post' AND json_extract(args, '$.post_id') = ?`, j.post); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	p = startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workers", "1")
	state := func(post int64) (string, time.Time) {
		var s string
		var at time.Time
		if err := ro.QueryRow(`SELECT state, scheduled_at FROM river_job WHERE kind = 'feed_post' AND json_extract(args, '$.post_id') = ?`, post).Scan(&s, &at); err != nil {
			t.Fatal(err)
		}
		return s, at
	}
	if s, _ := state(first); s != "discarded" {
		t.Fatalf("the job on its last attempt is %s after the restart, want discarded", s)
	}
	if p.logs.find("fan-out job failed for good", nil) == nil {
		t.Fatal("the discarded job is not logged")
	}
	if n := value(scrape(t, "http://"+p.admin), "feedd_fanout_jobs_discarded_total", "kind", "feed_post"); n != 1 {
		t.Fatalf("feedd_fanout_jobs_discarded_total{kind=feed_post} = %v, want 1", n)
	}
	if s, at := state(last); s == "running" || at.Before(start) {
		t.Fatalf("the job with attempts left is %s, due %v (restart at %v); want it scheduled after a backoff", s, at, start)
	}
	waitFor(t, "the job with attempts left to run again", func() bool { s, _ := state(last); return s == "completed" })
	p.stop(t)
}
