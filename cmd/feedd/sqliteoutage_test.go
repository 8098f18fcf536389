package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/sqlite"
)

// The embedded default when SQLite cannot take a write for the moment
// (docs/operations.md, "When SQLite is busy or full"): 503 unavailable
// with Retry-After on both APIs, counted as a refusal, not logged as a
// fault; and back to normal, without a restart, once it can again.

// holdWriteLock takes the write lock of dir's feedd.db from a connection of
// its own (BEGIN IMMEDIATE, as an operator's sqlite3 would) until release
// (idempotent; called when the test ends at the latest).
func holdWriteLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "feedd.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := db.Conn(t.Context())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		lock.Close()
		db.Close()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := lock.ExecContext(context.Background(), `ROLLBACK`); err != nil {
				t.Errorf("release the write lock: %v", err)
			}
			lock.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// wantUnavailable checks an answer of either API: 503, Retry-After, code
// unavailable (/v1) or the compatible sentence.
func wantUnavailable(t *testing.T, api string, status int, retry, body, what string) {
	t.Helper()
	want := `"errorMsg":"the service is unavailable for a moment; try again"`
	if api == "v1" {
		want = `"code":"unavailable"`
	}
	if status != 503 || retry == "" || !strings.Contains(body, want) {
		t.Errorf("%s (%s): %d Retry-After %q %s, want 503 unavailable with Retry-After", what, api, status, retry, body)
	}
}

// noFault checks that the server logged no request as failed (a fault).
func noFault(t *testing.T, logs *logBuffer) {
	t.Helper()
	if rec := logs.find("request failed", nil); rec != nil {
		t.Errorf("an outage was logged as a fault: %v", rec)
	}
}

// TestSQLiteBusyIs503: another connection holds feedd.db's write lock
// (BEGIN IMMEDIATE, as an operator's sqlite3 would) past the busy timeout
// (sqlite.BusyTimeout, 5 s): a post on either API is answered 503
// unavailable with Retry-After, counted in
// feedd_refusals_total{reason="unavailable"}, and no fault is logged; once
// the lock is released, posts succeed again. (No workers: their job
// fetches would wait for the lock in turn on the same writer; the answers
// come after one to three busy timeouts.)
func TestSQLiteBusyIs503(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, "--data", dir, "--workers", "0")
	p := s.from("127.0.0.2")
	tok := p.login("13900000001")
	before := value(scrape(t, s.admin), "feedd_refusals_total", "reason", "unavailable")

	release := holdWriteLock(t, dir)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		resp, body := p.raw("POST", "/blog", tok, map[string]string{"title": "t", "content": "while locked"})
		wantUnavailable(t, "compatible", resp.StatusCode, resp.Header.Get("Retry-After"), string(body), "POST /blog while another connection holds the write lock")
	})
	wg.Go(func() {
		resp, body := p.raw("POST", "/v1/posts", "Bearer "+tok, map[string]string{"title": "t", "content": "while locked"})
		wantUnavailable(t, "v1", resp.StatusCode, resp.Header.Get("Retry-After"), string(body), "POST /v1/posts while another connection holds the write lock")
	})
	wg.Wait()
	t.Logf("both answered within %v of the lock", time.Since(start))
	release()
	noFault(t, s.logs)
	if got := value(scrape(t, s.admin), "feedd_refusals_total", "reason", "unavailable") - before; got < 2 {
		t.Errorf("feedd_refusals_total{reason=\"unavailable\"} rose by %v, want 2", got)
	}
	if r := p.do("POST", "/blog", tok, map[string]string{"title": "t", "content": "after"}); !r.Success {
		t.Fatalf("post after the lock was released: %s", r.Raw)
	}
}

// TestSQLiteFullIs503: the database can grow no more (its writer's
// max_page_count set to its size: SQLITE_FULL, as a full disk gives):
// posts on either API are answered 503 unavailable with Retry-After, and
// no fault is logged; once it may grow again, posts succeed. The app is
// opened as serve opens it, its API served as serve serves it.
func TestSQLiteFullIs503(t *testing.T) {
	dir := t.TempDir()
	logs := newLogBuffer()
	args := append(append([]string{}, testServeFlags...), "--data", dir, "--log-format", "json", "--admin-addr", "off", "--workers", "0")
	c, err := parseConfig("serve", args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log, err := newLogger(c, logs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := openApp(t.Context(), c, log)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ts := httptest.NewServer(newAPI(c, a).Handler())
	defer ts.Close()
	s := &server{t: t, base: ts.URL, logs: logs}
	p := s.from("127.0.0.2")
	tok := p.login("13900000001")
	t.Cleanup(func() { logs.dumpIfFailed(t) })

	db, ok := a.service.Posts.(*sqlite.DB)
	if !ok {
		t.Fatalf("the embedded default's store is %T", a.service.Posts)
	}
	// The writer is one connection (sqlite.DB.Write): its page limit is
	// the limit of every write.
	var pages int64
	if err := db.Write.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("full ", 400)
	full := false
	for i := 0; i < 50 && !full; i++ {
		resp, body := p.raw("POST", "/blog", tok, map[string]string{"title": fmt.Sprint(i), "content": content})
		if resp.StatusCode == 200 && strings.Contains(string(body), `"success":true`) {
			continue // fitted in free pages
		}
		wantUnavailable(t, "compatible", resp.StatusCode, resp.Header.Get("Retry-After"), string(body), "POST /blog on a full database")
		full = true
	}
	if !full {
		t.Fatal("50 posts fitted in a database that may not grow")
	}
	resp, body := p.raw("POST", "/v1/posts", "Bearer "+tok, map[string]string{"title": "v1", "content": content})
	wantUnavailable(t, "v1", resp.StatusCode, resp.Header.Get("Retry-After"), string(body), "POST /v1/posts on a full database")
	noFault(t, logs)
	if _, err := db.Write.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if r := p.do("POST", "/blog", tok, map[string]string{"title": "t", "content": "after"}); !r.Success {
		t.Fatalf("post once the database may grow: %s", r.Raw)
	}
}
