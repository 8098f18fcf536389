package push_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/pushtest"
	"github.com/feedd/feedd/push"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "1.1.1.1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "255.255.255.255": false,
		"224.0.0.1": false, "198.18.0.1": false, "::1": false, "::": false, "fe80::1": false,
		"fc00::1": false, "fd12::1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
		"64:ff9b::a00:1": false, "2002:a00:1::": false, "2001:db8::1": false, "ff02::1": false,
	} {
		if got := push.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	s, err := push.New("mailto:ops@example.com", []string{"127.0.0.1:8443", "push.internal:443"})
	if err != nil {
		t.Fatal(err)
	}
	for endpoint, ok := range map[string]bool{
		"https://push.example.com/send/abc": true,
		"https://203.0.114.9/x":             true,
		"http://push.example.com/x":         false, // not https
		"https://127.0.0.1/x":               false,
		"https://[::1]/x":                   false,
		"https://10.0.0.8/x":                false,
		"https://169.254.169.254/latest":    false,
		"https://localhost/x":               false,
		"https://a.localhost/x":             false,
		"https://intranet/x":                false,
		"https://127.0.0.1:8443/x":          true, // allowed
		"http://127.0.0.1:8443/x":           true, // allowed: http too
		"http://127.0.0.1:8444/x":           false,
		"https://push.internal/x":           true,
		"ftp://push.example.com/x":          false,
	} {
		err := s.CheckEndpoint(endpoint)
		if (err == nil) != ok {
			t.Errorf("CheckEndpoint(%s) = %v, want ok %v", endpoint, err, ok)
		}
		if err != nil && feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("CheckEndpoint(%s): code %s", endpoint, feed.ErrorCode(err))
		}
	}
	for _, bad := range []string{"ops@example.com", "http://example.com", "mailto:", "https://"} {
		if _, err := push.New(bad, nil); err == nil {
			t.Errorf("subject %q accepted", bad)
		}
	}
	if _, err := push.New("mailto:a@b", []string{"no-port"}); err == nil {
		t.Error("allow entry without a port accepted")
	}
}

// TestSendLoopback: a message to an allowed loopback endpoint arrives
// encrypted for the browser and signed as RFC 8292 says, with TTL,
// Urgency and Topic; the service's 429 and its Retry-After reach the
// caller. The same endpoint not allowed is never dialled.
func TestSendLoopback(t *testing.T) {
	srv, err := pushtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	s, err := push.New("mailto:ops@example.com", []string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := s.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	srv.VAPIDKey = keys.Public
	sub := &feed.PushSubscription{Endpoint: srv.Endpoint(), P256dh: srv.Browser.P256dh(), Auth: srv.Browser.AuthSecret()}
	payload, _ := json.Marshal(map[string]string{"title": "Ana liked your post"})
	srv.Script(pushtest.Reply{}, pushtest.Reply{Status: 429, RetryAfter: "7"})
	res, err := s.Send(t.Context(), sub, keys, feed.PushMessage{Payload: payload, TTL: time.Hour, Urgency: "low", Topic: "nABC"})
	if err != nil || res.Status != 201 {
		t.Fatalf("Send: %+v, %v", res, err)
	}
	m := srv.Messages()[0]
	if m.Err != nil {
		t.Fatal(m.Err)
	}
	if string(m.Payload) != string(payload) {
		t.Errorf("payload %q, want %q", m.Payload, payload)
	}
	if m.Claims.Subject != "mailto:ops@example.com" {
		t.Errorf("subject %q", m.Claims.Subject)
	}
	if h := m.Header; h.Get("TTL") != "3600" || h.Get("Urgency") != "low" || h.Get("Topic") != "nABC" {
		t.Errorf("TTL %q, Urgency %q, Topic %q", h.Get("TTL"), h.Get("Urgency"), h.Get("Topic"))
	}
	res, err = s.Send(t.Context(), sub, keys, feed.PushMessage{Payload: payload, TTL: time.Hour})
	if err != nil || res.Status != 429 || res.RetryAfter != 7*time.Second {
		t.Fatalf("Send: %+v, %v; want 429 after 7s", res, err)
	}

	closed, err := push.New("mailto:ops@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Send(t.Context(), sub, keys, feed.PushMessage{Payload: payload}); !errors.Is(err, feed.ErrPushEndpoint) {
		t.Fatalf("Send to loopback not allowed: %v, want ErrPushEndpoint", err)
	}
	if n := len(srv.Messages()); n != 2 {
		t.Fatalf("%d messages arrived, want 2", n)
	}
}

// TestDialCheck: the dialer of endpoints not allowed refuses, before
// connecting, every address that is not public, whatever name led to it
// (DNS rebinding: a name that resolved to a public address when the
// endpoint was stored and to an internal one now).
func TestDialCheck(t *testing.T) {
	for addr, ok := range map[string]bool{
		"8.8.8.8:443": true, "[2606:4700::1111]:443": true,
		"127.0.0.1:443": false, "10.0.0.1:443": false, "[::1]:443": false, "169.254.169.254:80": false, "[::ffff:192.168.0.1]:443": false,
	} {
		err := push.PublicOnly("tcp", addr, nil)
		if (err == nil) != ok {
			t.Errorf("dial %s: %v, want ok %v", addr, err, ok)
		}
		if err != nil && !errors.Is(err, feed.ErrPushEndpoint) {
			t.Errorf("dial %s: %v, want ErrPushEndpoint", addr, err)
		}
	}
}
