package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
)

// End-to-end checks of the input, HTTP, readiness and block rules against
// the real server (docs/API.md, "Hardening (both APIs)").

// TestBadInputRefusedE2E: each bad input is refused by both
// APIs, and nothing is stored.
func TestBadInputRefusedE2E(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir())
	p := s.from("127.0.0.2")
	tok := p.login(abusePhone(1))
	bad := map[string]string{
		"tag in title":     `{"title":"<img src=x onerror=alert(1)>","content":"c"}`,
		"invalid UTF-8":    "{\"title\":\"a\xffb\",\"content\":\"c\"}",
		"lone surrogate":   `{"title":"a\ud800b","content":"c"}`,
		"NUL in title":     `{"title":"a\u0000b","content":"c"}`,
		"RLO in title":     `{"title":"abc\u202etxt","content":"c"}`,
		"NUL in content":   `{"title":"t","content":"a\u0000b"}`,
		"javascript image": `{"title":"t","content":"c","images":"javascript:alert(1)"}`,
		"quote in image":   `{"title":"t","content":"c","images":"/a.png\"><img src=x>"}`,
		"ten images":       `{"title":"t","content":"c","images":"` + strings.TrimSuffix(strings.Repeat("/a.png,", 10), ",") + `"}`,
	}
	for name, body := range bad {
		if r := p.do("POST", "/blog", tok, body); r.Status != 200 || r.Success {
			t.Errorf("%s: POST /blog = %d %s, want a refusal", name, r.Status, r.Raw)
		}
		// The native API takes images as an array.
		v1 := strings.Replace(body, `"images":"`+strings.TrimSuffix(strings.Repeat("/a.png,", 10), ",")+`"`, `"images":[`+strings.TrimSuffix(strings.Repeat(`"/a.png",`, 10), ",")+`]`, 1)
		v1 = strings.Replace(v1, `"images":"javascript:alert(1)"`, `"images":["javascript:alert(1)"]`, 1)
		v1 = strings.Replace(v1, `"images":"/a.png\"><img src=x>"`, `"images":["/a.png\"><img src=x>"]`, 1)
		resp, raw := p.raw("POST", "/v1/posts", "Bearer "+tok, v1)
		if resp.StatusCode != 400 || !strings.Contains(string(raw), `"invalid"`) {
			t.Errorf("%s: POST /v1/posts = %d %s, want 400", name, resp.StatusCode, raw)
		}
	}
	for _, ok := range []string{`{"title":"a < b","content":"c"}`, `{"title":"I <3 Go","content":"c","images":"https://h/a.png,https://h/b.png"}`} {
		if r := p.do("POST", "/blog", tok, ok); !r.Success {
			t.Errorf("POST /blog %s: %s", ok, r.Raw)
		}
	}
	var mine []blog
	r := p.do("GET", "/blog/of/me?current=1", tok, nil)
	json.Unmarshal(r.Data, &mine)
	if len(mine) != 2 {
		t.Fatalf("%d posts stored, want the 2 good ones: %s", len(mine), r.Raw)
	}
}

// TestHTTPHardeningE2E: JSON 404 for a non-canonical path (no redirect),
// 405 with Allow, nosniff everywhere, no-store on authenticated answers.
func TestHTTPHardeningE2E(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir())
	p := s.from("127.0.0.2")
	tok := p.login(abusePhone(1))
	for _, tc := range []struct {
		method, path, auth string
		status             int
		allow              string
	}{
		{"GET", "/blog/../user/me", tok, 404, ""},
		{"GET", "//user/me", tok, 404, ""},
		{"GET", "/v1/posts/../me", "Bearer " + tok, 404, ""},
		{"GET", "/v1", "", 404, ""},
		{"PATCH", "/blog/1", tok, 405, "GET, HEAD, DELETE"},
		{"POST", "/v1/me", "Bearer " + tok, 405, "GET, HEAD"},
		{"GET", "/user/me", tok, 200, ""},
		{"GET", "/v1/me", "Bearer " + tok, 200, ""},
		{"GET", "/blog/hot?current=1", "", 200, ""},
		{"GET", "/healthz", "", 200, ""},
	} {
		resp, raw := p.raw(tc.method, tc.path, tc.auth, nil)
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow || !json.Valid(raw) {
			t.Errorf("%s %s = %d Allow %q %q, want %d Allow %q with a JSON body", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), raw, tc.status, tc.allow)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q", tc.method, tc.path, got)
		}
		if cc := resp.Header.Get("Cache-Control"); (tc.auth != "") != (cc == "no-store") {
			t.Errorf("%s %s (auth %v): Cache-Control %q", tc.method, tc.path, tc.auth != "", cc)
		}
	}
}

// TestReadyz: 200 while the database takes writes; with a Redis that does
// not answer, 503 naming redis while /healthz (liveness) stays 200.
func TestReadyz(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	p := s.from("127.0.0.2")
	if r := p.do("GET", "/readyz", "", nil); r.Status != 200 || !r.Success {
		t.Fatalf("readyz = %d %s", r.Status, r.Raw)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	s2 := startServer(t, "--data", t.TempDir(), "--redis-url", "redis://"+dead+"/0")
	p2 := s2.from("127.0.0.2")
	r := p2.do("GET", "/readyz", "", nil)
	if r.Status != 503 || r.Success || !strings.Contains(r.ErrorMsg, "redis") || strings.Contains(r.ErrorMsg, "database") {
		t.Fatalf("readyz with Redis down = %d %s, want 503 naming redis only", r.Status, r.Raw)
	}
	if r := p2.do("GET", "/healthz", "", nil); r.Status != 200 {
		t.Fatalf("healthz with Redis down = %d %s, want 200", r.Status, r.Raw)
	}
}

// TestBlocksE2E: once B blocks A, A cannot read B's posts (compatible:
// "post not found"; /v1: 404), does not find them in B's list, cannot like
// them, and A's likes of B's posts are gone.
func TestBlocksE2E(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir())
	bob, al := s.from("127.0.0.3"), s.from("127.0.0.2")
	b, a := bob.login(abusePhone(1)), al.login(abusePhone(2))
	var bID int64
	var me struct{ ID int64 }
	json.Unmarshal(bob.do("GET", "/user/me", b, nil).Data, &me)
	bID = me.ID
	json.Unmarshal(al.do("GET", "/user/me", a, nil).Data, &me)
	aID := me.ID
	var post int64
	json.Unmarshal(bob.do("POST", "/blog", b, map[string]any{"title": "t", "content": "c"}).Data, &post)
	if r := al.do("PUT", fmt.Sprintf("/blog/like/%d", post), a, nil); !r.Success {
		t.Fatal(r.Raw)
	}
	if resp, raw := bob.raw("PUT", fmt.Sprintf("/v1/blocks/%d", aID), "Bearer "+b, nil); resp.StatusCode != 204 {
		t.Fatalf("block: %d %s", resp.StatusCode, raw)
	}
	if r := al.do("GET", fmt.Sprintf("/blog/%d", post), a, nil); r.Success || r.ErrorMsg != "post not found" {
		t.Errorf("A reads B's post: %s", r.Raw)
	}
	if resp, raw := al.raw("GET", fmt.Sprintf("/v1/posts/%d", post), "Bearer "+a, nil); resp.StatusCode != 404 {
		t.Errorf("A reads B's post on /v1: %d %s", resp.StatusCode, raw)
	}
	var list []blog
	r := al.do("GET", fmt.Sprintf("/blog/of/user?id=%d&current=1", bID), a, nil)
	json.Unmarshal(r.Data, &list)
	if !r.Success || len(list) != 0 {
		t.Errorf("A lists B's posts: %s", r.Raw)
	}
	if r := al.do("PUT", fmt.Sprintf("/blog/like/%d", post), a, nil); r.Success || r.ErrorMsg != "post not found" {
		t.Errorf("A likes B's post: %s", r.Raw)
	}
	if resp, raw := al.raw("PUT", fmt.Sprintf("/v1/posts/%d/like", post), "Bearer "+a, nil); resp.StatusCode != 404 {
		t.Errorf("A likes B's post on /v1: %d %s", resp.StatusCode, raw)
	}
	var got blog
	json.Unmarshal(bob.do("GET", fmt.Sprintf("/blog/%d", post), b, nil).Data, &got)
	if got.Liked == nil || *got.Liked != 0 {
		t.Errorf("B's post after the block has likes %v, want 0 (A's like removed)", got.Liked)
	}
}
