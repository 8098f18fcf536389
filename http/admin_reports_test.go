package http

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/sqlite"
)

// TestAdminReports drives the moderation handlers of AdminRoutes, mounted
// on a mux of their own as the admin listener mounts them, over the real
// service on SQLite: three reports hide a post, the list shows it, restore
// and hide act on it, bad ids are refused; and none of them is reachable
// on the public API.
func TestAdminReports(t *testing.T) {
	ctx := t.Context()
	db, err := sqlite.OpenFile(ctx, filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil } // no fan-out needed
	svc := &feed.Service{Users: db, Auth: db, Posts: db, Follows: db, Social: db, Inbox: &sqlite.Inbox{DB: db},
		Outbox: &sqlite.Outbox{DB: db}, Filters: db, Ranks: db, Snapshots: db}
	var users []int64
	for i := range 4 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("1380000000%d", i), fmt.Sprintf("u%d", i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u.ID)
	}
	p, err := svc.Publish(ctx, users[0], feed.PostInput{Title: "t", Content: "c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users[1:] {
		if err := svc.Report(ctx, u, p.ID, "spam from "+fmt.Sprint(u)); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := testServer(t)
	s.Service = svc
	mux := http.NewServeMux()
	for pattern, h := range s.AdminRoutes() {
		mux.Handle(pattern, h)
	}
	admin := httptest.NewServer(mux)
	t.Cleanup(admin.Close)
	do := func(method, path string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, admin.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, body, want)
		}
		return body
	}
	list := func() V1Page[V1ReportedPost] {
		var page V1Page[V1ReportedPost]
		if err := json.Unmarshal(do("GET", "/admin/reports?limit=10", 200), &page); err != nil {
			t.Fatal(err)
		}
		return page
	}
	want := V1ReportedPost{PostID: p.ID, AuthorID: users[0], Title: "t", Reports: 3, LastReason: fmt.Sprintf("spam from %d", users[3]), Hidden: true}
	if page := list(); len(page.Data) != 1 || page.Data[0] != want || page.NextCursor != nil {
		t.Fatalf("reports after three reports = %+v, want [%+v]", page, want)
	}
	do("POST", fmt.Sprintf("/admin/posts/%d/restore", p.ID), 204)
	if page := list(); len(page.Data) != 0 {
		t.Fatalf("reports after restore = %+v, want none (restoring clears them)", page)
	}
	do("POST", fmt.Sprintf("/admin/posts/%d/hide", p.ID), 204)
	if page := list(); len(page.Data) != 1 || !page.Data[0].Hidden || page.Data[0].Reports != 0 {
		t.Fatalf("reports after hide = %+v, want the post hidden with no reports", page)
	}
	for _, bad := range []string{"0", "abc", "-1"} {
		if body := do("POST", "/admin/posts/"+bad+"/hide", 400); !strings.Contains(string(body), `"invalid"`) {
			t.Errorf("hide %s: %s", bad, body)
		}
	}
	do("POST", "/admin/posts/999999/hide", 404)
	do("GET", "/admin/reports?limit=0", 400)
	do("GET", "/admin/reports?cursor=x", 400)

	// The public API does not serve them.
	for pattern := range s.AdminRoutes() {
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.ReplaceAll(path, "{id}", fmt.Sprint(p.ID))
		if w := serve(s, method, path, ""); w.Code != 404 {
			t.Errorf("public %s %s = %d, want 404", method, path, w.Code)
		}
	}
}
