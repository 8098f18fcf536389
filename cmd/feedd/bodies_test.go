package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
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

// stallingBodies is an attacker at local: n connections, each sending the
// head of a POST to path (auth its Authorization, if any) declaring a
// body of declared bytes, then sent bytes of it, then nothing. Each is
// closed and opened anew every renew, and at once when the server answers
// it, as an attacker would to keep its share of the server, at most
// reopen times a renewal. It stops when stop is closed; wg waits for its
// connections to close.
type stallingBodies struct {
	opened, settled atomic.Int64 // connections opened; those whose body was sent, or answered
	mu              sync.Mutex
	answers         map[string]int // status codes answered ("" for none before the renewal)
	wg              sync.WaitGroup
}

func startStallingBodies(t *testing.T, base, local, path, auth string, n, declared, sent int, renew time.Duration, reopen int, stop <-chan struct{}) *stallingBodies {
	a := &stallingBodies{answers: map[string]int{}}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, strings.TrimPrefix(base, "http://"), declared)
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	head += "\r\n"
	body := bytes.Repeat([]byte(" "), sent)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	// one connection until the server answers it or renewal comes; the
	// status answered ("" for none).
	one := func(renewal <-chan time.Time) (string, bool) {
		conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Errorf("attacker's connection: %v", err)
			return "", false
		}
		defer conn.Close()
		a.opened.Add(1)
		answer := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			if f := strings.Fields(line); len(f) > 1 {
				answer <- f[1]
			} else {
				answer <- ""
			}
		}()
		go func() {
			conn.Write([]byte(head))
			conn.Write(body) // fails once the server answered and closed: settled either way
			a.settled.Add(1)
		}()
		select {
		case status := <-answer:
			return status, true
		case <-renewal:
			return "", true
		case <-stop:
			return "", false
		}
	}
	for range n {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for {
				renewal := time.After(renew)
				for range reopen {
					status, ok := one(renewal)
					a.mu.Lock()
					a.answers[status]++
					a.mu.Unlock()
					if !ok {
						return
					}
					if status == "" {
						break // renewal came
					}
				}
				select {
				case <-renewal:
				case <-stop:
					return
				}
			}
		}()
	}
	return a
}

// TestBodyFloodOfOneClient: one client (127.0.0.2) keeps 70 connections
// sending 520 KiB of a declared 1 MiB body and stalling, renewed before
// --body-timeout and at once when refused, first to POST /user/login (a
// route without a login), then, logged in, to POST
// /v1/posts/{id}/comments; meanwhile another user (127.0.0.1) adds 70
// comments: every one is accepted. The login
// bodies are refused 413 unread (a login is a few dozen bytes), and the
// comment bodies past the attacker's share of --body-memory 503 at once,
// never other clients'. A body that stalls is answered 408 at
// --body-timeout.
func TestBodyFloodOfOneClient(t *testing.T) {
	const timeout = 3 * time.Second
	// Each of the flood's requests takes a write slot while it is
	// authenticated, as the victim's do: a write may wait 2 s for its turn
	// (--shed-wait 200ms), so that on a loaded machine (-race) only memory,
	// what this test is about, could refuse the victim.
	s := startServer(t, "--data", t.TempDir(), "--body-timeout", timeout.String(), "--shed-wait", "200ms")
	c := newV1Client(t, s)
	victim := c.login("13900000011")
	post := c.publish(victim, "the attacked post")
	atok := s.from("127.0.0.2").login("13900000012")
	for _, attack := range []struct{ name, path, auth string }{
		{"login bodies", "/user/login", ""},
		{"comment bodies", fmt.Sprintf("/v1/posts/%d/comments", post.ID), "Bearer " + atok},
	} {
		t.Run(attack.name, func(t *testing.T) {
			const conns = 70
			stop := make(chan struct{})
			a := startStallingBodies(t, s.base, "127.0.0.2", attack.path, attack.auth, conns, 1<<20, 520<<10, timeout*9/10, 5, stop)
			defer func() { close(stop); a.wg.Wait() }()
			waitFor(t, "the attacker's bodies sent", func() bool { return a.settled.Load() >= conns })
			accepted := 0
			for i := range conns {
				r, err := c.send("POST", "/v1/posts/{id}/comments", victim, map[string]any{"text": fmt.Sprintf("comment %d", i)}, post.ID)
				switch {
				case err != nil:
					t.Fatalf("comment %d: %v", i, err)
				case r.Status == 201:
					accepted++
				default:
					t.Errorf("comment %d during the flood: %d %s", i, r.Status, r.Raw)
				}
			}
			a.mu.Lock()
			t.Logf("%d of %d comments accepted; the attacker opened %d connections, answered %v", accepted, conns, a.opened.Load(), a.answers)
			a.mu.Unlock()
			if accepted != conns {
				t.Fatalf("%d of %d comments of another client accepted during the flood", accepted, conns)
			}
		})
	}
	// A body that stalls is cut at --body-timeout; sent from an address of
	// its own, whose share of the budget no flood's body still holds.
	start := time.Now()
	line := answerWithin(t, partialBody(t, s.base, "127.0.0.3", "/v1/posts", "Bearer "+atok, 1<<20, 520<<10), timeout+10*time.Second, "a stalled body")
	if !strings.Contains(line, " 408 ") {
		t.Fatalf("a stalled body: %q, want 408", line)
	}
	t.Logf("a stalled body answered %q after %v", line, time.Since(start).Round(time.Millisecond))
}
