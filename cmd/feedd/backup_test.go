package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

// TestSQLiteOnlineBackup is docs/operations.md's SQLite backup: VACUUM
// INTO on the database of a running feedd, while it keeps taking writes,
// gives a complete database (the job queue included) that opens on its own.
func TestSQLiteOnlineBackup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, "--data", dir)
	author := s.login("13800000001")
	for i := range 5 {
		s.must("POST", "/blog", author, map[string]any{"title": fmt.Sprint("p", i), "content": "x"}, nil)
	}
	live, err := sql.Open("sqlite", filepath.Join(dir, "feedd.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	backup := filepath.Join(t.TempDir(), "backup.db")
	done := make(chan struct{})
	go func() { // writes go on during the backup
		defer close(done)
		for i := range 5 {
			s.do("POST", "/blog", author, map[string]any{"title": fmt.Sprint("q", i), "content": "x"})
		}
	}()
	if _, err := live.ExecContext(context.Background(), "VACUUM INTO ?", backup); err != nil {
		t.Fatalf("VACUUM INTO: %v", err)
	}
	<-done

	cp, err := sql.Open("sqlite", backup)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var check string
	if err := cp.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the backup: %q %v", check, err)
	}
	var posts, jobs int
	if err := cp.QueryRow("SELECT count(*) FROM posts").Scan(&posts); err != nil {
		t.Fatal(err)
	}
	if err := cp.QueryRow("SELECT count(*) FROM river_job WHERE kind = 'feed_post'").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	// A snapshot: at least the 5 posts made before, each with its job.
	if posts < 5 || posts > 10 || jobs != posts {
		t.Fatalf("backup holds %d posts and %d post jobs", posts, jobs)
	}
}
