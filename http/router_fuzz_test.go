package http_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/sqlite"
)

// codeBox is a feed.CodeSender that keeps the last code.
type codeBox struct {
	mu   sync.Mutex
	code string
}

func (c *codeBox) SendCode(_ context.Context, _, code string, _ time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.code = code
	return nil
}

// fuzzEndpoints are the routes that read a body, in both APIs.
var fuzzEndpoints = []struct{ method, path string }{
	{"POST", "/blog"},
	{"POST", "/user/login"},
	{"POST", "/v1/posts"},
	{"POST", "/v1/auth/login"},
	{"POST", "/v1/auth/code"},
	{"PUT", "/blog/like/1"},
	{"PUT", "/v1/following/1"},
	{"POST", "/user/code?phone=13800000009"},
}

// FuzzRouterBodies sends arbitrary bodies, logged in or not, through the
// real router onto a real SQLite-backed service in a temporary directory:
// no answer is a 500, every answer with a body is JSON, and every answer
// has X-Content-Type-Options: nosniff.
func FuzzRouterBodies(f *testing.F) {
	f.Add(uint8(0), []byte(`{"title":"t","content":"c","images":"/a.png"}`), true)
	f.Add(uint8(1), []byte(`{"phone":"13800000001","code":"123456"}`), false)
	f.Add(uint8(2), []byte(`{"title":"<img src=x>","content":"c","images":["javascript:x"]}`), true)
	f.Add(uint8(3), []byte("{\"phone\":\"\xff\"}"), false)
	f.Add(uint8(2), []byte(`{"title":"\ud800","content":"c"}`), true)

	db, err := sqlite.Open(context.Background(), f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	codes := &codeBox{}
	svc := &feed.Service{
		Users: db, Auth: db, Posts: db, Follows: db, Social: db,
		Inbox: &sqlite.Inbox{DB: db}, Outbox: &sqlite.Outbox{DB: db}, Codes: codes, Filters: db,
	}
	srv := httptest.NewServer((&feedhttp.Server{Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	f.Cleanup(srv.Close)
	ctx := context.Background()
	if err := svc.SendCode(ctx, "13800000001"); err != nil {
		f.Fatal(err)
	}
	token, err := svc.Login(ctx, "13800000001", codes.code)
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, which uint8, body []byte, authed bool) {
		ep := fuzzEndpoints[int(which)%len(fuzzEndpoints)]
		req, err := http.NewRequest(ep.method, srv.URL+ep.path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if authed {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s %q: %d %s", ep.method, ep.path, body, resp.StatusCode, raw)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s %s: no nosniff", ep.method, ep.path)
		}
		if len(raw) > 0 && !json.Valid(raw) {
			t.Fatalf("%s %s %q: answer is not JSON: %q", ep.method, ep.path, body, raw)
		}
	})
}
