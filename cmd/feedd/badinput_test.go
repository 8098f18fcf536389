package main

import (
	"cmp"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// snapshot returns the domain state of the SQLite database in dir: every
// row that a refused request must leave alone. Login codes are compared
// without their try counter, which a wrong code is documented to advance.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	db := openRead(t, dir)
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, phone, nick_name, icon, fans, followee FROM users ORDER BY id`,
		`SELECT id, user_id, shop_id, title, images, content, liked, comments, created_at, updated_at FROM posts ORDER BY id`,
		`SELECT post_id, user_id FROM likes ORDER BY id`,
		`SELECT follower_id, followee_id FROM follows ORDER BY 1, 2`,
		`SELECT user_id, score, post_id FROM inbox ORDER BY 1, 2, 3`,
		`SELECT phone, code_hash, sent_at, expires_at FROM login_codes ORDER BY phone`,
		`SELECT user_id FROM sessions ORDER BY token_hash`,
		// media_sweep is periodic (it runs on start and when the clock moves).
		`SELECT kind, args FROM river_job WHERE kind <> 'media_sweep' ORDER BY id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		fmt.Fprintf(&b, "%s\n", q)
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%v\n", vals)
		}
		rows.Close()
	}
	return b.String()
}

// TestBadInput sends every bad input of API.md and checks the documented
// refusal and that the database is unchanged afterwards.
func TestBadInput(t *testing.T) {
	clk := useClock(t)
	dir := t.TempDir()
	s := startServer(t, "--data", dir)
	a, b := s.login("13800000001"), s.login("13800000002")
	aID, bID := s.me(a), s.me(b)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", aID), b, nil, nil)
	var postID int64
	s.must("POST", "/blog", a, map[string]any{"title": "t", "content": "c"}, &postID)
	s.must("PUT", fmt.Sprintf("/blog/like/%d", postID), b, nil, nil)
	waitFor(t, "fan-out", func() bool { return len(s.scrollAll(b, 10)) == 1 })
	// A code requested for a third phone, not yet used.
	s.must("POST", "/user/code?phone=13800000003", "", nil, nil)
	logoutTok := s.login("13800000004")
	s.must("POST", "/user/logout", logoutTok, nil, nil)

	// Every background write done: the jobs (the fan-out, the like's
	// notification) finished.
	jobsSettled := func() {
		t.Helper()
		db := openRead(t, dir)
		waitFor(t, "every job finished", func() bool {
			var n int
			err := db.QueryRow(`SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&n)
			return err == nil && n == 0
		})
		db.Close()
	}
	jobsSettled()
	before := snapshot(t, dir)

	long := func(n int) string { return strings.Repeat("x", n) }
	p := fmt.Sprintf
	const missing = "999999"
	type tc struct {
		method, path, token string
		body                any
		status              int // 0: 200 with success:false
	}
	cases := []tc{
		// feed cursor
		{"GET", "/blog/of/follow", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=abc", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=-5", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=0", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=1.5", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=99999999999999999999", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&offset=-1", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&offset=x", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&offset=99999999999999999999", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&offset=2000000", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&size=0", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&size=51", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&size=-1", b, nil, 0},
		{"GET", "/blog/of/follow?lastId=100&size=ten", b, nil, 0},
		// posts
		{"GET", "/blog/abc", b, nil, 0},
		{"GET", "/blog/-1", b, nil, 0},
		{"GET", "/blog/0", b, nil, 0},
		{"GET", "/blog/99999999999999999999", b, nil, 0},
		{"GET", "/blog/" + missing, b, nil, 0},
		{"DELETE", "/blog/" + missing, a, nil, 0},
		{"DELETE", "/blog/abc", a, nil, 0},
		{"DELETE", p("/blog/%d", postID), b, nil, 0},
		{"PUT", "/blog/like/" + missing, b, nil, 0},
		{"PUT", "/blog/like/-3", b, nil, 0},
		{"GET", "/blog/likes/" + missing, b, nil, 0},
		{"GET", "/blog/likes/x", b, nil, 0},
		{"POST", "/blog", a, "{not json", 0},
		{"POST", "/blog", a, "", 0},
		{"POST", "/blog", a, `{"title":"t","content":"c"} {"x":1}`, 0},
		{"POST", "/blog", a, `["t","c"]`, 0},
		{"POST", "/blog", a, `{"title":5,"content":"c"}`, 0},
		{"POST", "/blog", a, `{"title":"t","content":"c","shopId":"seven"}`, 0},
		{"POST", "/blog", a, `{"title":"t","content":"c","images":["a"]}`, 0},
		{"POST", "/blog", a, map[string]any{"title": "", "content": "c"}, 0},
		{"POST", "/blog", a, map[string]any{"title": "  ", "content": "c"}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t", "content": ""}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t"}, 0},
		{"POST", "/blog", a, map[string]any{"title": long(256), "content": "c"}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t", "content": long(2049)}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t", "content": "c", "images": long(2049)}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t", "content": "c", "shopId": -1}, 0},
		{"POST", "/blog", a, map[string]any{"title": "t", "content": long(2 << 20)}, 413},
		// pages
		{"GET", "/blog/of/me?current=0", a, nil, 0},
		{"GET", "/blog/of/me?current=-1", a, nil, 0},
		{"GET", "/blog/of/me?current=x", a, nil, 0},
		{"GET", "/blog/of/user?current=1", a, nil, 0},
		{"GET", "/blog/of/user?id=x", a, nil, 0},
		{"GET", p("/blog/of/user?id=%d&current=0", aID), a, nil, 0},
		{"GET", "/blog/hot?current=x", "", nil, 0},
		// follows and users
		{"PUT", p("/follow/%d/true", aID), a, nil, 0},
		{"PUT", "/follow/" + missing + "/true", a, nil, 0},
		{"PUT", "/follow/abc/true", a, nil, 0},
		{"PUT", p("/follow/%d/yes", bID), a, nil, 0},
		{"GET", "/follow/or/not/abc", a, nil, 0},
		{"GET", "/follow/common/abc", a, nil, 0},
		{"GET", "/follow/common/" + missing, a, nil, 0},
		{"GET", "/user/abc", a, nil, 0},
		{"GET", "/user/" + missing, a, nil, 0},
		{"GET", "/user/info/-1", a, nil, 0},
		{"GET", "/user/info/" + missing, a, nil, 0},
		// login
		{"POST", "/user/code", "", nil, 0},
		{"POST", "/user/code?phone=123", "", nil, 0},
		{"POST", "/user/code?phone=12800000000", "", nil, 0},
		{"POST", "/user/code?phone=138000000011", "", nil, 0},
		{"POST", "/user/code?phone=13800000003", "", nil, 0}, // again within 60 s
		{"POST", "/user/login", "", map[string]string{"phone": "12345", "code": "123456"}, 0},
		{"POST", "/user/login", "", map[string]string{"phone": "13800000005", "code": "123456"}, 0}, // never requested
		{"POST", "/user/login", "", map[string]any{"phone": 13800000003, "code": "123456"}, 0},
		{"POST", "/user/login", "", "{", 0},
		// login required
		{"GET", "/user/me", "", nil, 401},
		{"GET", "/user/me", "not-a-token", nil, 401},
		{"GET", "/user/me", logoutTok, nil, 401},
		{"POST", "/blog", "", map[string]any{"title": "t", "content": "c"}, 401},
		{"GET", "/blog/of/follow?lastId=100", "", nil, 401},
		{"PUT", p("/follow/%d/true", aID), "bogus", nil, 401},
		{"PUT", p("/blog/like/%d", postID), "", nil, 401},
		{"DELETE", p("/blog/%d", postID), "", nil, 401},
		{"POST", "/user/logout", "", nil, 401},
	}
	for _, c := range cases {
		r := s.do(c.method, c.path, c.token, c.body)
		want := cmp.Or(c.status, 200)
		if r.Status != want || r.Success || r.ErrorMsg == "" {
			t.Errorf("%s %s %.60v: got %d %s, want %d and a refusal", c.method, c.path, c.body, r.Status, r.Raw, want)
		}
		if want == 401 && r.ErrorMsg != "login required" {
			t.Errorf("%s %s: 401 body %s", c.method, c.path, r.Raw)
		}
	}

	// Codes: a wrong code, an expired one and a burned one are refused.
	rec := s.logs.wait(t, "login code", map[string]string{"phone": "13800000003"})
	good := rec["code"].(string)
	wrong := "000000"
	if good == wrong {
		wrong = "111111"
	}
	for i := 0; i < 5; i++ {
		if r := s.do("POST", "/user/login", "", map[string]string{"phone": "13800000003", "code": wrong}); r.Success {
			t.Fatal("wrong code accepted")
		}
	}
	if r := s.do("POST", "/user/login", "", map[string]string{"phone": "13800000003", "code": good}); r.Success {
		t.Fatal("burned code accepted")
	}
	// A fresh code (after the resend wait) expires after 2 minutes.
	clk.shift.Store(int64(61 * time.Second))
	s.must("POST", "/user/code?phone=13800000006", "", nil, nil)
	rec = s.logs.wait(t, "login code", map[string]string{"phone": "13800000006"})
	clk.shift.Store(int64(61*time.Second + 2*time.Minute + time.Second))
	if r := s.do("POST", "/user/login", "", map[string]string{"phone": "13800000006", "code": rec["code"].(string)}); r.Success {
		t.Fatal("expired code accepted")
	}
	clk.shift.Store(0)

	jobsSettled()
	after := snapshot(t, dir)
	// The two code requests above added rows of their own; compare the rest.
	strip := func(s string) string {
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.Contains(line, "13800000006") && !strings.Contains(line, "13800000003") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(before) != strip(after) {
		t.Fatalf("refused requests changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
