package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The guards of docs/API.md ("Hardening (both APIs)", "Limits") and
// docs/operations.md ("The admin listener", "Secrets"), end to end against
// the real server, with distinct loopback clients.

// dialFrom opens a TCP connection to the server at base from the
// loopback address local, closed when the test ends.
func dialFrom(t *testing.T, base, local string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// slowBody opens a connection from local and sends a POST whose body of
// 100 bytes trickles at one byte a second until stop is closed; the
// returned channel gets the first line of the answer, if any.
func slowBody(t *testing.T, base, local, path, auth string, stop <-chan struct{}) <-chan string {
	t.Helper()
	conn := dialFrom(t, base, local)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
		path, strings.TrimPrefix(base, "http://"), auth)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answer <- strings.TrimSpace(line)
	}()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; i < 30; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	return answer
}

// TestSlowBodiesKeepNoWriteSlot: twenty connections trickling bodies at one
// byte a second (more than --max-writes) do not stop another user's posts,
// and are answered 408 once --body-timeout has passed.
func TestSlowBodiesKeepNoWriteSlot(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--max-writes", "16", "--body-timeout", "3s")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	atok, otok := attacker.login("13900000001"), owner.login("13900000002")
	stop := make(chan struct{})
	defer close(stop)
	var answers []<-chan string
	for range 20 {
		answers = append(answers, slowBody(t, s.base, "127.0.0.2", "/blog", atok, stop))
	}
	time.Sleep(300 * time.Millisecond) // all twenty are in their handlers
	for i := range 10 {
		r := owner.do("POST", "/blog", otok, map[string]string{"title": fmt.Sprintf("t%d", i), "content": "c"})
		if r.Status != 200 || !r.Success {
			t.Fatalf("post %d of another user while slow bodies trickle: %d %s", i, r.Status, r.Raw)
		}
	}
	for i, a := range answers {
		select {
		case line := <-a:
			if !strings.Contains(line, " 408 ") {
				t.Fatalf("slow body %d answered %q, want 408", i, line)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("slow body %d not answered within 15s (--body-timeout 3s)", i)
		}
	}
}

// originRequest sends an unsafe request as a browser would, with the given
// Origin, Sec-Fetch-Site (each left out when empty), Host and content type.
func (p *peer) originRequest(method, url, host, origin, site, ctype, body string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestCrossOrigin: cross-site writes are refused on both APIs and the
// admin listener; the web client behind its own nginx (Origin
// http://localhost:8080, Host 127.0.0.1:8081) and clients without Origin
// (curl, servers) get through; /v1 bodies must be JSON.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--allowed-origins", "http://localhost:8080")
	p := s.from("127.0.0.2")
	evil := "https://evil.example"
	for _, c := range []struct{ path, ctype, body string }{
		{"/user/code?phone=13900000009", "text/plain", ""},
		{"/v1/auth/code", "text/plain", `{"phone":"13900000009"}`},
	} {
		for _, site := range []string{"cross-site", ""} {
			st, raw := p.originRequest("POST", s.base+c.path, "", evil, site, c.ctype, c.body)
			if st != 403 || !strings.Contains(raw, "cross-origin") {
				t.Errorf("POST %s from %s (Sec-Fetch-Site %q): %d %s, want 403", c.path, evil, site, st, raw)
			}
		}
	}
	if n := s.logs.count("login code"); n != 0 {
		t.Fatalf("%d codes sent for cross-site requests", n)
	}
	// The web client behind nginx: proxy_pass hands feedd its own Host.
	for i, site := range []string{"same-origin", "cross-site", ""} {
		phone := fmt.Sprintf("1390000001%d", i)
		st, raw := p.originRequest("POST", s.base+"/user/code?phone="+phone, "127.0.0.1:8081", "http://localhost:8080", site, "", "")
		if st != 200 || !strings.Contains(raw, `"success":true`) {
			t.Errorf("web client behind nginx (Sec-Fetch-Site %q): %d %s", site, st, raw)
		}
		phone = fmt.Sprintf("1390000002%d", i)
		st, raw = p.originRequest("POST", s.base+"/v1/auth/code", "127.0.0.1:8081", "http://localhost:8080", site, "application/json", `{"phone":"`+phone+`"}`)
		if st != 204 {
			t.Errorf("/v1 from the web client behind nginx (Sec-Fetch-Site %q): %d %s", site, st, raw)
		}
	}
	// curl and servers: no Origin, no Sec-Fetch-Site.
	tok := p.login("13900000001")
	if st, raw := p.originRequest("POST", s.base+"/v1/posts", "", "", "", "application/json", `{"title":"t","content":"c"}`); st != 401 {
		t.Errorf("POST /v1/posts without Origin nor token: %d %s, want 401 (past the cross-origin check)", st, raw)
	}
	c := p.v1()
	me := c.me(tok).ID
	var post apiPost
	c.want(201, "POST", "/v1/posts", tok, map[string]string{"title": "t", "content": "c"}, &post)
	posts := func() int {
		var page apiPage[apiPost]
		c.want(200, "GET", "/v1/users/{id}/posts", tok, nil, &page, me)
		return len(page.Data)
	}
	// /v1 bodies in another media type: 415, nothing written.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		req, _ := http.NewRequest("POST", s.base+"/v1/posts", strings.NewReader(`{"title":"t","content":"c"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := p.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 415 || !strings.Contains(string(raw), `"unsupported_media_type"`) || !strings.Contains(string(raw), "application/json") {
			t.Errorf("POST /v1/posts with Content-Type %q: %d %s, want 415", ct, resp.StatusCode, raw)
		}
	}
	if n := posts(); n != 1 {
		t.Errorf("%d posts after one accepted and three refused", n)
	}
	// The admin listener: a page of another site cannot hide a post.
	hide := fmt.Sprintf("%s/admin/posts/%d/hide", s.admin, post.ID)
	for _, site := range []string{"cross-site", ""} {
		if st, raw := p.originRequest("POST", hide, "", evil, site, "text/plain", "x"); st != 403 {
			t.Errorf("admin hide from %s (Sec-Fetch-Site %q): %d %s, want 403", evil, site, st, raw)
		}
	}
	hidden := func() bool { // GET /admin/reports lists hidden posts
		_, raw := p.originRequest("GET", s.admin+"/admin/reports", "", "", "", "", "")
		return strings.Contains(raw, fmt.Sprintf(`"post_id":%d`, post.ID)) && strings.Contains(raw, `"hidden":true`)
	}
	if hidden() {
		t.Errorf("the post was hidden by a cross-site request")
	}
	if st, raw := p.originRequest("POST", hide, "", "", "", "", ""); st != 204 {
		t.Errorf("admin hide by an operator's curl: %d %s", st, raw)
	}
	if !hidden() {
		t.Errorf("the operator's hide did not hide the post")
	}
}

// TestAdminListener: the admin listener does not bind a non-loopback
// address without --admin-token; with one, every route wants it; without,
// it answers only loopback or localhost Hosts; /debug/pprof/cmdline shows
// no secret; secrets are read from files.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--admin-addr", "0.0.0.0:0"}, testServeFlags...)
	err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--admin-token") {
		t.Fatalf("admin listener on 0.0.0.0 without a token: %v, want a refusal naming --admin-token", err)
	}

	// No token, loopback: secrets stay out of cmdline; other Hosts refused.
	s := startServer(t, "--data", t.TempDir())
	p := s.from("127.0.0.2")
	st, raw := p.originRequest("GET", s.admin+"/debug/pprof/cmdline", "", "", "", "", "")
	if st != 200 || strings.Contains(raw, "test-secret-of-feedd") || !strings.Contains(raw, "REDACTED") || !strings.Contains(raw, "serve") {
		t.Fatalf("cmdline: %d %q, want the command line with --secret redacted", st, raw)
	}
	if st, raw := p.originRequest("GET", s.admin+"/metrics", "evil.example:8082", "", "", "", ""); st != http.StatusMisdirectedRequest {
		t.Fatalf("admin with Host evil.example: %d %.200s, want 421", st, raw)
	}
	if st, _ := p.originRequest("GET", s.admin+"/metrics", "localhost:8082", "", "", "", ""); st != 200 {
		t.Fatalf("admin with Host localhost: %d", st)
	}

	// Secrets by file; the token on every admin route.
	files := t.TempDir()
	write := func(name, v string) string {
		f := filepath.Join(files, name)
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	both := append(append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, testServeFlags...), "--secret-file", write("secret", "s"))
	if err := run(t.Context(), both, func(string) string { return "" }, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("--secret and --secret-file: %v, want a refusal", err)
	}
	s2 := startServer(t, "--data", t.TempDir(), "--secret", "", "--secret-file", write("secret2", "secret-from-a-file"),
		"--admin-token-file", write("token", "admin-token-of-test"))
	p2 := s2.from("127.0.0.2")
	p2.login("13900000001") // codes keyed by the file's secret
	for _, route := range []string{"/metrics", "/debug/pprof/cmdline", "/admin/reports", "/river/"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer admin-token-of-test"} {
			req, _ := http.NewRequest("GET", s2.admin+route, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := p2.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ok := auth == "Bearer admin-token-of-test"
			if ok && resp.StatusCode == 401 || !ok && resp.StatusCode != 401 {
				t.Errorf("GET %s with %q: %d", route, auth, resp.StatusCode)
			}
			if strings.Contains(string(body), "secret-from-a-file") || strings.Contains(string(body), "admin-token-of-test") {
				t.Errorf("GET %s shows a secret", route)
			}
		}
	}
}

// TestWriteLimitsPerUser: one account toggling a follow 500 times gets at
// most --follow-limit-user of them through, the rest 429 with Retry-After
// (/v1) or the compatible refusal; posts and likes are limited alike; and
// another user's post still reaches its follower (the delay is logged,
// measured, not asserted).
func TestWriteLimitsPerUser(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--follow-limit-user", "60/1m", "--post-limit-user", "5/1m", "--like-limit-user", "3/1m")
	stormer, author, reader := s.from("127.0.0.2"), s.from("127.0.0.3"), s.from("127.0.0.4")
	stok, atok, rtok := stormer.login("13900000001"), author.login("13900000002"), reader.login("13900000003")
	sc, ac, rc := stormer.v1(), author.v1(), reader.v1()
	aID := ac.me(atok).ID
	rc.want(204, "PUT", "/v1/following/{id}", rtok, nil, nil, aID)

	accepted, refused := 0, 0
	storm := time.Now()
	for i := range 500 {
		method := "PUT"
		if i%2 == 1 {
			method = "DELETE"
		}
		r, err := sc.send(method, "/v1/following/{id}", stok, nil, aID)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Status {
		case 204:
			accepted++
		case 429:
			if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Raw), `"rate_limited"`) {
				t.Fatalf("refusal %d: %s %s without Retry-After or code", i, r.Header, r.Raw)
			}
			refused++
		default:
			t.Fatalf("toggle %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if accepted > 60 || refused < 440 {
		t.Fatalf("500 follow toggles: %d accepted, %d refused; want at most 60 accepted", accepted, refused)
	}
	t.Logf("500 follow toggles in %v: %d accepted, %d refused", time.Since(storm), accepted, refused)
	wantWait(t, stormer.do("PUT", fmt.Sprintf("/follow/%d/true", aID), stok, nil), "compatible follow over the limit")

	start := time.Now()
	post := ac.publish(atok, "after the storm")
	rc.waitTimeline(rtok, post.ID)
	t.Logf("another user's post reached its follower %v after 500 follow toggles (%d accepted)", time.Since(start), accepted)

	for i := range 4 { // the fifth post of the minute
		ac.want(201, "POST", "/v1/posts", atok, map[string]string{"title": fmt.Sprint(i), "content": "c"}, nil)
	}
	ac.refused(429, "rate_limited", "POST", "/v1/posts", atok, map[string]string{"title": "6", "content": "c"})
	wantWait(t, author.do("POST", "/blog", atok, map[string]string{"title": "7", "content": "c"}), "compatible post over the limit")
	for range 3 {
		rc.want(204, "PUT", "/v1/posts/{id}/like", rtok, nil, nil, post.ID)
	}
	rc.refused(429, "rate_limited", "DELETE", "/v1/posts/{id}/like", rtok, nil, post.ID)
	// The limits are per user: another user is not refused.
	sc.want(204, "PUT", "/v1/posts/{id}/like", stok, nil, nil, post.ID)
}

// streamEnds waits for st to end; it fails the test after within.
func streamEnds(t *testing.T, st *sseStream, within time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-st.events:
			if !ok {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("%s: the stream is still open after %v", what, within)
		}
	}
}

// TestStreamEndsWithSession: a logout (either API) ends the session's live
// stream, a block ends the blocker's stream (not the blocked user's: see
// TestOthersCannotEndStream), within 5 s; stream opens are limited per
// user.
func TestStreamEndsWithSession(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--stream-open-limit-user", "3/1m")
	a, b := s.from("127.0.0.2"), s.from("127.0.0.3")
	atok, btok := a.login("13900000001"), b.login("13900000002")
	ac, bc := a.v1(), b.v1()
	bID := bc.me(btok).ID

	st := ac.openStream(atok, "", "127.0.0.2")
	ac.want(204, "DELETE", "/v1/auth/session", atok, nil, nil)
	ac.refused(401, "unauthorized", "GET", "/v1/me", atok, nil)
	t.Logf("stream ended %v after DELETE /v1/auth/session", streamEnds(t, st, 5*time.Second, "logout"))

	atok = a.login("13900000001")
	st = ac.openStream(atok, "", "127.0.0.2")
	if r := a.do("POST", "/user/logout", atok, nil); !r.Success {
		t.Fatalf("logout: %s", r.Raw)
	}
	streamEnds(t, st, 5*time.Second, "compatible logout")

	atok = a.login("13900000001")
	sa := ac.openStream(atok, "", "127.0.0.2")
	ac.want(204, "PUT", "/v1/blocks/{id}", atok, nil, nil, bID)
	streamEnds(t, sa, 5*time.Second, "the blocker's stream")

	// a has opened 3 streams this minute: the fourth is refused.
	ac.refused(429, "rate_limited", "GET", "/v1/timeline/stream", atok, nil)
}

// TestReadyzCached: a burst of /readyz calls writes the probe row once (not
// once a call), and /readyz still turns 503 soon after the database stops
// taking writes.
func TestReadyzCached(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, "--data", dir)
	p := s.from("127.0.0.2")
	db := openRead(t, dir)
	seen := map[int64]bool{}
	for range 30 {
		if r := p.do("GET", "/readyz", "", nil); r.Status != 200 {
			t.Fatalf("readyz: %d %s", r.Status, r.Raw)
		}
		var at int64
		if err := db.QueryRow(`SELECT at FROM feedd.ready_probe WHERE id = 1`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		seen[at] = true
		time.Sleep(5 * time.Millisecond)
	}
	if len(seen) > 2 {
		t.Fatalf("30 /readyz calls in ~0.3 s wrote the probe %d times, want at most 2", len(seen))
	}

	// Another connection holds the write lock: the probe's write cannot
	// commit, and /readyz must say so.
	holdWriteLock(t, dir)
	start := time.Now()
	for {
		r := p.do("GET", "/readyz", "", nil)
		if r.Status == 503 {
			var body struct{ Data struct{ Failed []string } }
			json.Unmarshal([]byte(r.Raw), &body)
			t.Logf("readyz 503 %v after the database stopped taking writes: %v", time.Since(start), body.Data.Failed)
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("readyz still %d 10 s after the database stopped taking writes", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedactArgs: every form of a secret flag is redacted, other flags are
// kept.
func TestRedactArgs(t *testing.T) {
	in := []string{"feedd", "serve", "--secret", "s1", "-code-webhook-secret=s2", "--admin-token=s3", "-database-url", "postgres://u:pw@h/db",
		"--redis-url=redis://:pw@h:6379", "--workers", "4", "--secret-file", "/run/secret"}
	got := strings.Join(redactArgs(in), " ")
	for _, secret := range []string{"s1", "s2", "s3", "pw"} {
		if strings.Contains(got, secret) {
			t.Errorf("redacted command line %q shows %q", got, secret)
		}
	}
	if !strings.Contains(got, "--workers 4") || !strings.Contains(got, "--secret-file /run/secret") {
		t.Errorf("redacted command line %q lost other flags", got)
	}
}
