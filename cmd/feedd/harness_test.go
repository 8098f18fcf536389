package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects the server's JSON log lines and lets tests wait for one.
type logBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines []map[string]any
	cond  *sync.Cond
}

func newLogBuffer() *logBuffer {
	b := &logBuffer{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	for {
		line, err := b.buf.ReadBytes('\n')
		if err != nil {
			b.buf.Write(line) // incomplete: keep it for the next write
			break
		}
		var rec map[string]any
		if json.Unmarshal(line, &rec) == nil {
			b.lines = append(b.lines, rec)
		}
	}
	b.cond.Broadcast()
	return len(p), nil
}

// dumpIfFailed logs the server's warnings and errors when the test failed.
func (b *logBuffer) dumpIfFailed(t testing.TB) {
	if !t.Failed() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rec := range b.lines {
		if rec["level"] == "WARN" || rec["level"] == "ERROR" || rec["msg"] == "inbox rebuilt" {
			j, _ := json.Marshal(rec)
			t.Logf("server log: %s", j)
		}
	}
}

// find returns the last record matching msg and the attribute filter.
func (b *logBuffer) find(msg string, attrs map[string]string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.lines) - 1; i >= 0; i-- {
		rec := b.lines[i]
		if rec["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range attrs {
			if fmt.Sprint(rec[k]) != v {
				ok = false
			}
		}
		if ok {
			return rec
		}
	}
	return nil
}

func (b *logBuffer) wait(t testing.TB, msg string, attrs map[string]string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if rec := b.find(msg, attrs); rec != nil {
			return rec
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log record %q %v within 30s", msg, attrs)
	return nil
}

// testServeFlags come first in every test server's flags (later flags
// override them): the abuse limits are off, since tests log in many users
// from one address and write much as one user (abuse_test.go and
// guard_test.go turn them on), and the code sender and
// secret that --database-url requires are given.
var testServeFlags = []string{
	"--code-limit-client", "0", "--code-limit-total", "0", "--code-limit-phone", "0", "--login-fail-limit-client", "0",
	"--code-limit-phone-client", "0",
	"--post-limit-user", "0", "--follow-limit-user", "0", "--like-limit-user", "0", "--comment-limit-user", "0", "--repost-limit-user", "0", "--stream-open-limit-user", "0",
	"--delete-limit-user", "0", "--block-limit-user", "0", "--mute-limit-user", "0", "--muted-word-limit-user", "0", "--notification-limit-user", "0",
	"--edit-limit-user", "0",
	"--code-sender", "log", "--secret", "test-secret-of-feedd",
}

// testServeEnv is testServeFlags for processes started by startProc.
var testServeEnv = []string{
	"FEED_CODE_LIMIT_CLIENT=0", "FEED_CODE_LIMIT_TOTAL=0", "FEED_CODE_LIMIT_PHONE=0", "FEED_LOGIN_FAIL_LIMIT_CLIENT=0",
	"FEED_CODE_LIMIT_PHONE_CLIENT=0",
	"FEED_POST_LIMIT_USER=0", "FEED_FOLLOW_LIMIT_USER=0", "FEED_LIKE_LIMIT_USER=0", "FEED_COMMENT_LIMIT_USER=0", "FEED_REPOST_LIMIT_USER=0", "FEED_STREAM_OPEN_LIMIT_USER=0",
	"FEED_DELETE_LIMIT_USER=0", "FEED_BLOCK_LIMIT_USER=0", "FEED_MUTE_LIMIT_USER=0", "FEED_MUTED_WORD_LIMIT_USER=0", "FEED_NOTIFICATION_LIMIT_USER=0",
	"FEED_EDIT_LIMIT_USER=0",
	"FEED_CODE_SENDER=log", "FEED_SECRET=test-secret-of-feedd",
}

// server is a feedd started in-process through run, as main starts it.
type server struct {
	t     testing.TB
	base  string
	admin string // base URL of the admin listener
	logs  *logBuffer
	stop  func()
}

// startServer runs feedd with args (plus a loopback port 0 and JSON logs)
// and waits until /healthz answers.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	logs := newLogBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = append(append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--log-format", "json", "--poll-interval", "20ms"}, testServeFlags...), args...)
	go func() { done <- run(ctx, args, func(string) string { return "" }, io.Discard, logs) }()
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" {
		if rec := logs.find("listening", nil); rec != nil {
			addr = rec["addr"].(string)
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("feedd exited before listening: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("feedd did not start listening within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := &server{t: t, base: "http://" + addr, logs: logs}
	if rec := logs.find("admin listening", nil); rec != nil {
		s.admin = "http://" + rec["addr"].(string)
	}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("feedd returned %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("feedd did not stop within 30s")
			}
		})
	}
	t.Cleanup(s.stop)
	t.Cleanup(func() { logs.dumpIfFailed(t) })
	resp, err := http.Get(s.base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	return s
}

// reply is the compatible envelope as a client reads it.
type reply struct {
	Status   int
	Success  bool            `json:"success"`
	ErrorMsg string          `json:"errorMsg"`
	Data     json.RawMessage `json:"data"`
	Raw      string
}

func (s *server) do(method, path, token string, body any) reply {
	s.t.Helper()
	rd := bodyReader(body)
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("authorization", token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Raw: string(raw)}
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("%s %s: body is not the envelope: %q", method, path, raw)
	}
	return r
}

// must performs a request that has to succeed and decodes its data into v.
func (s *server) must(method, path, token string, body any, v any) {
	s.t.Helper()
	r := s.do(method, path, token, body)
	if r.Status != 200 || !r.Success {
		s.t.Fatalf("%s %s: status %d body %s", method, path, r.Status, r.Raw)
	}
	if v != nil {
		if err := json.Unmarshal(r.Data, v); err != nil {
			s.t.Fatalf("%s %s: data %s: %v", method, path, r.Data, err)
		}
	}
}

// login logs phone in, reading the code from the server's JSON log as a
// developer's script would.
func (s *server) login(phone string) string {
	s.t.Helper()
	s.must("POST", "/user/code?phone="+phone, "", nil, nil)
	rec := s.logs.wait(s.t, "login code", map[string]string{"phone": phone})
	var token string
	s.must("POST", "/user/login", "", map[string]string{"phone": phone, "code": rec["code"].(string)}, &token)
	return token
}

func (s *server) me(token string) int64 {
	var u struct{ ID int64 }
	s.must("GET", "/user/me", token, nil, &u)
	return u.ID
}

// blog is the part of a Blog the tests read.
type blog struct {
	ID       int64  `json:"id"`
	UserID   int64  `json:"userId"`
	Name     string `json:"name"`
	Icon     *string
	IsLike   *bool `json:"isLike"`
	Liked    *int  `json:"liked"`
	Title    string
	Content  string
	Images   *string
	Created  string `json:"createTime"`
	Comments *int   `json:"comments"`
}

type scroll struct {
	List    []blog `json:"list"`
	MinTime int64  `json:"minTime"`
	Offset  int    `json:"offset"`
}

// scrollAll reads token's whole follow feed with page size size, as the web
// client does, and returns the posts in order.
func (s *server) scrollAll(token string, size int) []blog {
	s.t.Helper()
	last, offset := time.Now().UnixMilli()+1, 0
	var all []blog
	for i := 0; i < 10000; i++ {
		path := fmt.Sprintf("/blog/of/follow?lastId=%d&size=%d", last, size)
		if offset > 0 {
			path += fmt.Sprintf("&offset=%d", offset)
		}
		r := s.do("GET", path, token, nil)
		if r.Status != 200 || !r.Success {
			s.t.Fatalf("scroll: %s", r.Raw)
		}
		if r.Data == nil {
			return all
		}
		var page scroll
		if err := json.Unmarshal(r.Data, &page); err != nil {
			s.t.Fatal(err)
		}
		if page.MinTime == 0 {
			s.t.Fatalf("page with minTime 0 would restart the client: %s", r.Raw)
		}
		all = append(all, page.List...)
		last, offset = page.MinTime, page.Offset
	}
	s.t.Fatal("scroll did not end")
	return nil
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bodyReader is a request body: nil, a string or bytes as they are,
// anything else as JSON.
func bodyReader(body any) io.Reader {
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	case []byte:
		return bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		return bytes.NewReader(j)
	}
}
