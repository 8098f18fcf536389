package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Request bodies against the real server (docs/API.md, "Hardening (both
// APIs)"): read only once the request is admitted and authenticated, and
// all of them within --body-memory.

// partialBody opens a connection from local and sends a POST of a body
// declared as declared bytes, of which only sent are sent; the returned
// channel gets the first line of the answer ("" if the connection ends
// without one).
func partialBody(t *testing.T, base, local, path, auth string, declared, sent int) <-chan string {
	t.Helper()
	conn := dialFrom(t, base, local)
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, strings.TrimPrefix(base, "http://"), declared)
	if auth != "" {
		fmt.Fprintf(&head, "Authorization: %s\r\n", auth)
	}
	head.WriteString("\r\n")
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answer <- strings.TrimSpace(line)
	}()
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	if sent > 0 {
		// Written from a goroutine: the server may stop reading (and
		// answer) before all of it is taken.
		go conn.Write(bytes.Repeat([]byte(" "), sent))
	}
	return answer
}

// answerWithin waits for an answer line.
func answerWithin(t *testing.T, a <-chan string, d time.Duration, what string) string {
	t.Helper()
	select {
	case line := <-a:
		return line
	case <-time.After(d):
		t.Fatalf("%s: no answer within %v", what, d)
	}
	return ""
}

// TestBodyReadAfterAuth: a request to a route that needs a login, with a
// token that is no session and a body of 1 MB declared but never sent, is
// answered 401 at once, on both APIs: its body is not waited for (before,
// it was read first, and answered 408 after --body-timeout).
func TestBodyReadAfterAuth(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--body-timeout", "20s")
	for _, c := range []struct{ path, auth string }{
		{"/blog", "no-such-token"},
		{"/v1/posts", "Bearer no-such-token"},
		{"/v1/posts", ""},
	} {
		line := answerWithin(t, partialBody(t, s.base, "127.0.0.2", c.path, c.auth, 1_000_000, 10), 10*time.Second, c.path)
		if !strings.Contains(line, " 401 ") {
			t.Errorf("POST %s with %q and a body not sent: %q, want 401 before the body", c.path, c.auth, line)
		}
	}
}

// TestBodyMemoryBounded: with --body-memory 1MiB, four clients of one
// user sending 520 KiB of 600 KB bodies and stopping there cannot make the
// server hold more than the budget: all but one are refused at once with
// 503 and Retry-After, while another user's small post goes through.
func TestBodyMemoryBounded(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--body-memory", "1MiB", "--body-timeout", "20s")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	atok, otok := attacker.login("13900000001"), owner.login("13900000002")
	var answers []<-chan string
	for range 4 {
		answers = append(answers, partialBody(t, s.base, "127.0.0.2", "/blog", atok, 600_000, 520<<10))
		time.Sleep(100 * time.Millisecond)
	}
	refused := 0
	for i, a := range answers[1:] {
		line := answerWithin(t, a, 10*time.Second, fmt.Sprintf("partial body %d", i+2))
		if !strings.Contains(line, " 503 ") {
			t.Fatalf("partial body %d while the budget is held: %q, want 503", i+2, line)
		}
		refused++
	}
	resp, body := owner.raw("POST", "/blog", otok, map[string]string{"title": "small", "content": "fits"})
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("another user's small post while the budget is held: %d %s", resp.StatusCode, body)
	}
	// Over the budget, a body sent whole is refused with Retry-After too.
	resp, body = attacker.raw("POST", "/v1/posts", "Bearer "+atok, strings.Repeat(" ", 600_000))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"busy"`) {
		t.Fatalf("a 600 KB body while the budget is held: %d %s %s, want 503 busy with Retry-After", resp.StatusCode, resp.Header, body)
	}
	t.Logf("%d of 4 partial bodies refused", refused)
}
