package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// verifyWebhook is the check of the receiver example in
// docs/operations.md ("Login codes"), as a function: the
// signature covers the timestamp and the body, and the timestamp is at
// most 5 minutes from now.
func verifyWebhook(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("X-Feedd-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return errors.New("stale or missing timestamp")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	if !hmac.Equal([]byte(h.Get("X-Feedd-Signature")), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
		return errors.New("bad signature")
	}
	return nil
}

// TestWebhookSignature: a delivery carries X-Feedd-Timestamp and a
// signature of "timestamp.body"; the receiver's check accepts it, and
// refuses it replayed 6 minutes later, with another timestamp, another
// body or another key.
func TestWebhookSignature(t *testing.T) {
	const secret = "k"
	var hdr atomic.Pointer[http.Header]
	var body atomic.Pointer[[]byte]
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		hdr.Store(&h)
		body.Store(&b)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	sent := time.Now()
	ws := newWebhookSender(hook.URL, secret)
	ws.now = func() time.Time { return sent }
	if err := ws.SendCode(context.Background(), "13800000001", "123456", sent.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	h, b := *hdr.Load(), *body.Load()
	if h.Get("X-Feedd-Timestamp") != strconv.FormatInt(sent.Unix(), 10) {
		t.Fatalf("X-Feedd-Timestamp %q, want %d", h.Get("X-Feedd-Timestamp"), sent.Unix())
	}
	if err := verifyWebhook([]byte(secret), h, b, sent.Add(time.Minute)); err != nil {
		t.Fatalf("a fresh delivery: %v", err)
	}
	if err := verifyWebhook([]byte(secret), h, b, sent.Add(6*time.Minute)); err == nil {
		t.Fatal("a delivery replayed 6 minutes later is accepted")
	}
	other := h.Clone()
	other.Set("X-Feedd-Timestamp", strconv.FormatInt(sent.Unix()+60, 10))
	if err := verifyWebhook([]byte(secret), other, b, sent); err == nil {
		t.Fatal("a signature is accepted with another timestamp")
	}
	if err := verifyWebhook([]byte(secret), h, append([]byte(" "), b...), sent); err == nil {
		t.Fatal("a signature is accepted for another body")
	}
	if err := verifyWebhook([]byte("other"), h, b, sent); err == nil {
		t.Fatal("a signature is accepted with another key")
	}
}

// TestWebhookNoRedirect: a webhook that answers 307 to another host makes
// the delivery fail; the other host receives nothing (no phone, code or
// signature), and the client is told the code could not be sent.
func TestWebhookNoRedirect(t *testing.T) {
	t.Parallel()
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer thief.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/sms", http.StatusTemporaryRedirect)
	}))
	defer hook.Close()
	s := startServer(t, "--data", t.TempDir(), "--code-sender", "webhook", "--code-webhook-url", hook.URL+"/sms", "--code-webhook-secret", "k")
	r := s.from("127.0.0.2").do("POST", "/user/code?phone="+abusePhone(1), "", nil)
	if r.Success || r.ErrorMsg != "could not send the code, try again" {
		t.Fatalf("a redirected delivery: %s, want the refusal", r.Raw)
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

// TestWebhookNeedsHTTPS: a plain http webhook URL is refused at start
// unless it is on loopback.
func TestWebhookNeedsHTTPS(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://sms.example.com/hook":  false,
		"http://10.0.0.5:9090/sms":     false,
		"https://sms.example.com/hook": true,
		"http://127.0.0.1:9090/sms":    true,
		"http://[::1]:9090/sms":        true,
		"http://localhost:9090/sms":    true,
	} {
		_, err := parseConfig("serve", []string{"--code-sender", "webhook", "--code-webhook-url", url, "--code-webhook-secret", "k"}, func(string) string { return "" }, io.Discard)
		if ok != (err == nil) || (!ok && !strings.Contains(err.Error(), "https")) {
			t.Errorf("--code-webhook-url %s: %v, want accepted = %v", url, err, ok)
		}
	}
}
