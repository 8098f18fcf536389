package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The login abuse limits, end to end against the real server: attacker
// and owner are distinct clients, bound to 127.0.0.2 and
// 127.0.0.3.

// peer is an HTTP client whose connections come from one loopback address.
type peer struct {
	t    testing.TB
	s    *server
	http *http.Client
}

func (s *server) from(ip string) *peer {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	s.t.Cleanup(tr.CloseIdleConnections)
	return &peer{t: s.t, s: s, http: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}}
}

// v1 is a native client from p's address, checked against the OpenAPI
// document.
func (p *peer) v1() *v1Client {
	c := newV1Client(p.t, p.s)
	c.hc = p.http
	return c
}

// raw sends one request and returns the response (body read) and the body.
func (p *peer) raw(method, path, auth string, body any) (*http.Response, []byte) {
	p.t.Helper()
	rd := bodyReader(body)
	req, err := http.NewRequest(method, p.s.base+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// do is a compatible-API request: the answer must be the envelope.
func (p *peer) do(method, path, auth string, body any) reply {
	p.t.Helper()
	resp, raw := p.raw(method, path, auth, body)
	r := reply{Status: resp.StatusCode, Raw: string(raw)}
	if err := json.Unmarshal(raw, &r); err != nil {
		p.t.Fatalf("%s %s: body is not the envelope: %q", method, path, raw)
	}
	return r
}

// login asks for a code, reads it from the log and logs in; it returns the
// token.
func (p *peer) login(phone string) string {
	p.t.Helper()
	if r := p.do("POST", "/user/code?phone="+phone, "", nil); !r.Success {
		p.t.Fatalf("code for %s: %s", phone, r.Raw)
	}
	code := p.s.lastCode(phone)
	r := p.do("POST", "/user/login", "", map[string]string{"phone": phone, "code": code})
	if !r.Success {
		p.t.Fatalf("login %s: %s", phone, r.Raw)
	}
	var tok string
	json.Unmarshal(r.Data, &tok)
	return tok
}

// lastCode is the newest code the log sender wrote for phone.
func (s *server) lastCode(phone string) string {
	s.t.Helper()
	s.logs.wait(s.t, "login code", map[string]string{"phone": phone})
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	for i := len(s.logs.lines) - 1; i >= 0; i-- {
		if rec := s.logs.lines[i]; rec["msg"] == "login code" && rec["phone"] == phone {
			return rec["code"].(string)
		}
	}
	s.t.Fatalf("no code for %s", phone)
	return ""
}

// count is the number of log records msg.
func (b *logBuffer) count(msg string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, rec := range b.lines {
		if rec["msg"] == msg {
			n++
		}
	}
	return n
}

// countWith is the number of log records msg whose attribute key is value.
func (b *logBuffer) countWith(msg, key, value string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, rec := range b.lines {
		if rec["msg"] == msg && rec[key] == value {
			n++
		}
	}
	return n
}

// text is the whole log as JSON.
func (b *logBuffer) text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, _ := json.Marshal(b.lines)
	return string(j)
}

func abusePhone(i int) string { return fmt.Sprintf("139%08d", i) }

// wantWait: a compatible refusal that says to wait.
func wantWait(t testing.TB, r reply, what string) {
	t.Helper()
	if r.Status != 200 || r.Success || !strings.Contains(r.ErrorMsg, "wait") {
		t.Fatalf("%s: %d %s, want 200 success:false with a sentence that says to wait", what, r.Status, r.Raw)
	}
}

// want429: a native refusal 429 with Retry-After.
func want429(t testing.TB, resp *http.Response, body []byte, what string) {
	t.Helper()
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || err != nil || ra < 1 || !strings.Contains(string(body), `"rate_limited"`) {
		t.Fatalf("%s: %d Retry-After %q %s, want 429 with Retry-After", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestCodeLimitPerClient: of 300 code requests for distinct phones from one
// address, at most 10 are sent; then /v1/auth/code answers 429 with
// Retry-After; another address still gets codes.
func TestCodeLimitPerClient(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--code-limit-client", "10/10m", "--code-limit-total", "600/1m")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	sent := 0
	for i := range 300 {
		r := attacker.do("POST", "/user/code?phone="+abusePhone(i), "", nil)
		if r.Success {
			sent++
		} else {
			wantWait(t, r, "code request over the limit")
		}
	}
	if sent > 10 || s.logs.count("login code") > 10 {
		t.Fatalf("%d of 300 code requests answered, %d codes sent; want at most 10", sent, s.logs.count("login code"))
	}
	resp, body := attacker.raw("POST", "/v1/auth/code", "", map[string]string{"phone": abusePhone(500)})
	want429(t, resp, body, "/v1/auth/code over the limit")
	attacker.v1().refused(429, "rate_limited", "POST", "/v1/auth/code", "", map[string]string{"phone": abusePhone(502)})
	if tok := owner.login(abusePhone(501)); tok == "" {
		t.Fatal("the owner's address got no token")
	}
}

// TestCodeLimitTotal: the total limit holds whatever the address.
func TestCodeLimitTotal(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--code-limit-total", "3/1h")
	for i, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		r := s.from(ip).do("POST", "/user/code?phone="+abusePhone(i), "", nil)
		if i < 3 && !r.Success {
			t.Fatalf("code %d: %s", i, r.Raw)
		} else if i == 3 {
			wantWait(t, r, "code over the total limit")
		}
	}
}

// TestCodeLimitPerPhone: one phone gets at most N codes a window, however
// many addresses ask (the 60 s rule aside, which a fresh code each time
// would hit: here the clock is the real one, so the window is checked
// with a limit of 1).
func TestCodeLimitPerPhone(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--code-limit-phone", "1/24h")
	a, b := s.from("127.0.0.2"), s.from("127.0.0.3")
	tok := a.login(abusePhone(1)) // the code is used: no 60 s rule left
	if tok == "" {
		t.Fatal("no token")
	}
	wantWait(t, b.do("POST", "/user/code?phone="+abusePhone(1), "", nil), "second code of the day")
}

// TestBurnDoesNotLockOut: an attacker's five wrong codes burn the owner's
// code; the owner, from another address, is told how long the resend wait
// (1 s here) still holds, and then gets a new code and logs in. Burned and
// missing codes get the same sentence. The service's clock stands still
// (useClock), so the wait is 1 s however slow the machine, and passes when
// the clock moves on.
func TestBurnDoesNotLockOut(t *testing.T) {
	clk := useClock(t)
	clk.frozen.Store(time.Now().UnixMilli())
	s := startServer(t, "--data", t.TempDir(), "--code-limit-client", "10/10m", "--login-fail-limit-client", "20/10m",
		"--code-resend-after", "1s")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	victim := abusePhone(1)
	if r := owner.do("POST", "/user/code?phone="+victim, "", nil); !r.Success {
		t.Fatal(r.Raw)
	}
	code := s.lastCode(victim)
	var sentences []string
	for i := range 5 {
		wrong := fmt.Sprintf("%06d", (mustAtoi(t, code)+1+i)%1000000)
		r := attacker.do("POST", "/user/login", "", map[string]string{"phone": victim, "code": wrong})
		if r.Success {
			t.Fatal("a wrong code logged in")
		}
		sentences = append(sentences, r.ErrorMsg)
	}
	burned := attacker.do("POST", "/user/login", "", map[string]string{"phone": victim, "code": code})
	missing := attacker.do("POST", "/user/login", "", map[string]string{"phone": abusePhone(2), "code": "123456"})
	if burned.Success || burned.ErrorMsg != missing.ErrorMsg || sentences[0] != missing.ErrorMsg {
		t.Fatalf("burned %q, missing %q, wrong %q: want one sentence", burned.ErrorMsg, missing.ErrorMsg, sentences[0])
	}
	resp, body := owner.raw("POST", "/user/code?phone="+victim, "", nil)
	if ra := resp.Header.Get("Retry-After"); ra != "1" || !strings.Contains(string(body), "wait before asking again") {
		t.Fatalf("the owner's code right after the burn: Retry-After %q %s, want the resend wait's 1 s", ra, body)
	}
	clk.frozen.Add(1100)
	if tok := owner.login(victim); tok == "" {
		t.Fatal("the owner could not log in after the burn")
	}
}

func mustAtoi(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLoginFailLimit: after 40 wrong codes across 16 phones from one
// address, that address cannot log in even with a right code, while
// another address can, with that same code (the refusals did not touch it).
func TestLoginFailLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--code-limit-client", "0", "--login-fail-limit-client", "20/10m")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	for i := range 16 {
		if r := owner.do("POST", "/user/code?phone="+abusePhone(i), "", nil); !r.Success {
			t.Fatal(r.Raw)
		}
	}
	for i := range 40 {
		phone := abusePhone(i % 16)
		wrong := fmt.Sprintf("%06d", (mustAtoi(t, s.lastCode(phone))+1)%1000000)
		if r := attacker.do("POST", "/user/login", "", map[string]string{"phone": phone, "code": wrong}); r.Success {
			t.Fatal("a wrong code logged in")
		}
	}
	target := abusePhone(100)
	if r := owner.do("POST", "/user/code?phone="+target, "", nil); !r.Success {
		t.Fatal(r.Raw)
	}
	code := s.lastCode(target)
	wantWait(t, attacker.do("POST", "/user/login", "", map[string]string{"phone": target, "code": code}), "login with the right code from the limited address")
	resp, body := attacker.raw("POST", "/v1/auth/login", "", map[string]string{"phone": target, "code": code})
	want429(t, resp, body, "/v1/auth/login from the limited address")
	attacker.v1().refused(429, "rate_limited", "POST", "/v1/auth/login", "", map[string]string{"phone": target, "code": code})
	r := owner.do("POST", "/user/login", "", map[string]string{"phone": target, "code": code})
	if !r.Success {
		t.Fatalf("the other address with the same code: %s", r.Raw)
	}
}

// TestDataDirPrivate: the embedded default's data directory is 0700 and
// every file in it 0600 (database, -wal, -shm, secret), whatever the umask.
func TestDataDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, "--data", dir, "--secret=") // the generated secret
	p := s.from("127.0.0.2")
	tok := p.login(abusePhone(1))
	if r := p.do("POST", "/blog", tok, map[string]any{"title": "t", "content": "c"}); !r.Success {
		t.Fatal(r.Raw)
	}
	check := func(when string) {
		t.Helper()
		n := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: %s is %v, want %v", when, path, fi.Mode().Perm(), want)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d entries checked", when, n)
	}
	for _, f := range []string{"feedd.db", "feedd.db-wal", "feedd.db-shm", secretFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	check("while serving")
	s.stop()
	check("after stopping")
}

// TestProductionNeedsCodeSender: with --database-url, feedd refuses to
// start without --code-sender (or --secret), naming the flag.
func TestProductionNeedsCodeSender(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--secret", "s"}, "--code-sender"},
		{[]string{"--code-sender", "log"}, "--secret"},
		{[]string{"--secret", "s", "--code-sender", "webhook"}, "--code-webhook-url"},
		{[]string{"--secret", "s", "--code-sender", "webhook", "--code-webhook-url", "http://127.0.0.1:9/x"}, "--code-webhook-secret"},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", "postgres://127.0.0.1:1/none"}, tc.args...)
		err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("feedd %v = %v, want a refusal naming %s", tc.args, err, tc.flag)
		}
	}
}

// TestWebhookSender: the webhook receives a correctly signed body whose
// code logs in, and the code is nowhere in the log. A failed delivery is a
// refusal that leaves no usable code, and the phone may ask again at once.
func TestWebhookSender(t *testing.T) {
	t.Parallel()
	const secret = "webhook-secret-of-the-test"
	type delivery struct {
		Phone, Code, ExpiresAt string
		signed                 bool
	}
	var mu sync.Mutex
	var got []delivery
	fail := false
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		signed := verifyWebhook([]byte(secret), r.Header, body, time.Now()) == nil
		var d struct {
			Phone     string `json:"phone"`
			Code      string `json:"code"`
			ExpiresAt string `json:"expires_at"`
		}
		json.Unmarshal(body, &d)
		mu.Lock()
		got = append(got, delivery{d.Phone, d.Code, d.ExpiresAt, signed})
		f := fail
		mu.Unlock()
		if f {
			http.Error(w, "gateway down", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer hook.Close()
	s := startServer(t, "--data", t.TempDir(), "--code-sender", "webhook", "--code-webhook-url", hook.URL+"/sms", "--code-webhook-secret", secret)
	p := s.from("127.0.0.2")
	phone := abusePhone(1)
	if r := p.do("POST", "/user/code?phone="+phone, "", nil); !r.Success {
		t.Fatal(r.Raw)
	}
	mu.Lock()
	if len(got) != 1 || !got[0].signed || got[0].Phone != phone || len(got[0].Code) != 6 {
		t.Fatalf("deliveries %+v, want one signed delivery for %s", got, phone)
	}
	if exp, err := time.Parse(time.RFC3339, got[0].ExpiresAt); err != nil || time.Until(exp) <= 0 || time.Until(exp) > 3*time.Minute {
		t.Fatalf("expires_at %q: %v", got[0].ExpiresAt, err)
	}
	code := got[0].Code
	mu.Unlock()
	if r := p.do("POST", "/user/login", "", map[string]string{"phone": phone, "code": code}); !r.Success {
		t.Fatalf("login with the delivered code: %s", r.Raw)
	}
	if strings.Contains(s.logs.text(), code) || s.logs.count("login code") != 0 {
		t.Fatalf("the code %s is in the log", code)
	}

	// A failed delivery: refused, and the code it carried does not log in.
	mu.Lock()
	fail = true
	mu.Unlock()
	other := abusePhone(2)
	r := p.do("POST", "/user/code?phone="+other, "", nil)
	if r.Success || r.ErrorMsg != "could not send the code, try again" {
		t.Fatalf("failed delivery: %s", r.Raw)
	}
	p.v1().refused(503, "unavailable", "POST", "/v1/auth/code", "", map[string]string{"phone": abusePhone(3)})
	mu.Lock()
	lost := got[len(got)-2].Code // the compatible request's
	fail = false
	mu.Unlock()
	if r := p.do("POST", "/user/login", "", map[string]string{"phone": other, "code": lost}); r.Success {
		t.Fatal("the code of a failed delivery logged in")
	}
	if r := p.do("POST", "/user/code?phone="+other, "", nil); !r.Success {
		t.Fatalf("asking again after a failed delivery: %s", r.Raw)
	}
	if strings.Contains(s.logs.text(), lost) {
		t.Fatalf("the code %s is in the log", lost)
	}
}
