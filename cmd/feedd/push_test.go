package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/pushtest"
	"github.com/feedd/feedd/internal/testenv"
)

type apiPushSubscription struct {
	ID       int64           `json:"id"`
	Endpoint string          `json:"endpoint"`
	Alerts   map[string]bool `json:"alerts"`
}

// subscribe subscribes token's browser at srv with alerts.
func (c *v1Client) subscribe(token string, srv *pushtest.Server, alerts map[string]bool) apiPushSubscription {
	c.t.Helper()
	var sub apiPushSubscription
	body := map[string]any{"endpoint": srv.Endpoint(), "expirationTime": nil,
		"keys": map[string]string{"p256dh": srv.Browser.P256dh(), "auth": srv.Browser.AuthSecret()}}
	if alerts != nil {
		body["alerts"] = alerts
	}
	c.want(201, "POST", "/v1/push/subscriptions", token, body, &sub)
	return sub
}

// pushServer starts a push service on loopback, and the flag that lets
// feedd post to it.
func pushServer(t *testing.T) (*pushtest.Server, string) {
	srv, err := pushtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, "--push-endpoint-allow=" + u.Host
}

// message waits for the n-th message (1-based) at srv; it must be a valid
// push (decrypted, VAPID checked) whose payload is a PushPayload.
func message(t *testing.T, srv *pushtest.Server, n int, within time.Duration) (pushtest.Message, feed.PushPayload) {
	t.Helper()
	ms := srv.Wait(n, within)
	if len(ms) < n {
		t.Fatalf("%d push messages within %v, want %d", len(ms), within, n)
	}
	m := ms[n-1]
	if m.Err != nil {
		t.Fatalf("push message %d: %v", n, m.Err)
	}
	var p feed.PushPayload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("push payload %q: %v", m.Payload, err)
	}
	return m, p
}

// testPush drives Web Push end to end: a like is pushed to the author's
// browser, decrypted and its VAPID JWT checked, within 2 s; a kind whose
// alert is off and a muted user's like push nothing; a 429 is retried
// after its Retry-After; a 410 removes the subscription; bad
// subscriptions are refused.
func testPush(t *testing.T, c *v1Client, srv *pushtest.Server) {
	a := c.login("13800000801")
	var key struct {
		PublicKey string `json:"public_key"`
	}
	c.want(200, "GET", "/v1/push/key", a, nil, &key)
	srv.VAPIDKey = key.PublicKey
	u := make([]string, 6)
	names := make([]string, 6)
	for i := range u {
		u[i] = c.login("1380000081" + string(rune('0'+i)))
		names[i] = c.me(u[i]).NickName
	}
	sub := c.subscribe(a, srv, nil)
	if !sub.Alerts["like"] || !sub.Alerts["follow"] || sub.Endpoint != srv.Endpoint() {
		t.Fatalf("subscription %+v", sub)
	}
	p := c.publish(a, "Pushed post")

	liked := time.Now()
	c.want(204, "PUT", "/v1/posts/{id}/like", u[0], nil, nil, p.ID)
	m, payload := message(t, srv, 1, 2*time.Second)
	t.Logf("a like pushed, decrypted and checked in %v", m.At.Sub(liked))
	groups := c.notifications(a)
	if len(groups) != 1 || payload.Key != groups[0].Key || payload.Kind != "like" || payload.PostID != p.ID ||
		payload.Title != names[0]+" liked your post" || payload.Body != "Pushed post" {
		t.Fatalf("payload %+v, want the like group %+v", payload, groups)
	}
	if aud := m.Claims.Audience; len(aud) != 1 || aud[0] != srv.URL || m.Claims.Subject != "mailto:postmaster@localhost" {
		t.Fatalf("VAPID claims %+v", m.Claims)
	}
	if h := m.Header; h.Get("Urgency") != "low" || h.Get("Topic") != payload.Key || h.Get("TTL") != "86400" {
		t.Fatalf("Urgency %q, Topic %q, TTL %q", h.Get("Urgency"), h.Get("Topic"), h.Get("TTL"))
	}
	// A second like joins the group: told once, nothing pushed.
	c.want(204, "PUT", "/v1/posts/{id}/like", u[1], nil, nil, p.ID)

	// Follows off; a mute: neither a follow nor the muted user's like is
	// pushed. The next like, of another post, is (and arrives second).
	c.subscribe(a, srv, map[string]bool{"follow": false})
	c.want(204, "PUT", "/v1/following/{id}", u[2], nil, nil, c.me(a).ID)
	c.want(204, "PUT", "/v1/mutes/{id}", a, nil, nil, c.me(u[3]).ID)
	q := c.publish(a, "Second post")
	c.want(204, "PUT", "/v1/posts/{id}/like", u[3], nil, nil, q.ID)
	r := c.publish(a, "Third post")
	srv.Script(pushtest.Reply{Status: 429, RetryAfter: "1"})
	c.want(204, "PUT", "/v1/posts/{id}/like", u[4], nil, nil, r.ID)
	first, _ := message(t, srv, 2, 10*time.Second)
	second, payload := message(t, srv, 3, 10*time.Second)
	if payload.PostID != r.ID || payload.Title != names[4]+" liked your post" {
		t.Fatalf("after the follow and the muted user's like, pushed %+v, want the like of post %d", payload, r.ID)
	}
	if wait := second.At.Sub(first.At); wait < time.Second {
		t.Fatalf("a 429 with Retry-After: 1 was retried after %v", wait)
	}

	// 410: the subscription goes.
	srv.Script(pushtest.Reply{Status: 410})
	s := c.publish(a, "Fourth post")
	c.want(204, "PUT", "/v1/posts/{id}/like", u[5], nil, nil, s.ID)
	message(t, srv, 4, 10*time.Second)
	waitFor(t, "the subscription removed after a 410", func() bool {
		var page apiPage[apiPushSubscription]
		c.want(200, "GET", "/v1/push/subscriptions", a, nil, &page)
		return len(page.Data) == 0
	})

	// Refusals.
	keys := map[string]string{"p256dh": srv.Browser.P256dh(), "auth": srv.Browser.AuthSecret()}
	for _, endpoint := range []string{"https://127.0.0.1:1/x", "http://push.example.com/x", "https://10.0.0.1/x", "https://localhost/x", "mailto:x@y"} {
		c.refused(400, "invalid", "POST", "/v1/push/subscriptions", a, map[string]any{"endpoint": endpoint, "keys": keys})
	}
	c.refused(400, "invalid", "POST", "/v1/push/subscriptions", a, map[string]any{"endpoint": srv.Endpoint(), "keys": map[string]string{"p256dh": "AAAA", "auth": keys["auth"]}})
	c.refused(400, "invalid", "POST", "/v1/push/subscriptions", a, map[string]any{"endpoint": srv.Endpoint(), "keys": keys, "alerts": map[string]bool{"poll": true}})
	c.refused(401, "unauthorized", "GET", "/v1/push/key", "", nil)
	again := c.subscribe(a, srv, nil)
	c.refused(404, "not_found", "DELETE", "/v1/push/subscriptions/{id}", u[0], nil, again.ID)
	c.want(204, "DELETE", "/v1/push/subscriptions/{id}", a, nil, nil, again.ID)
	c.refused(404, "not_found", "DELETE", "/v1/push/subscriptions/{id}", a, nil, again.ID)
	if n := len(srv.Messages()); n != 4 {
		t.Fatalf("%d push messages, want 4", n)
	}
	for _, m := range srv.Messages() {
		if m.Err != nil || strings.Contains(string(m.Payload), "follow") {
			t.Fatalf("push message %s: %v", m.Payload, m.Err)
		}
	}
}

func TestPushEmbedded(t *testing.T) {
	srv, allow := pushServer(t)
	s := startServer(t, "--data", t.TempDir(), "--workers", "1", allow)
	testPush(t, newV1Client(t, s), srv)
}

func TestPushPostgres(t *testing.T) {
	srv, allow := pushServer(t)
	s := startServer(t, "--database-url", testenv.PostgresURL(t), "--workers", "1", allow)
	testPush(t, newV1Client(t, s), srv)
}

// TestPushOff: with --push=false the push routes answer 404 and a
// subscription cannot be made.
func TestPushOff(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--push=false")
	c := newV1Client(t, s)
	a := c.login("13800000890")
	c.refused(404, "not_found", "GET", "/v1/push/key", a, nil)
	c.refused(404, "not_found", "GET", "/v1/push/subscriptions", a, nil)
}

// TestPushKeyCommand: feedd push-key prints the public key the server
// serves, the same on every run against one database.
func TestPushKeyCommand(t *testing.T) {
	dir := t.TempDir()
	var out1, out2 strings.Builder
	noEnv := func(string) string { return "" }
	for _, out := range []*strings.Builder{&out1, &out2} {
		if err := run(t.Context(), []string{"push-key", "--data", dir, "--log-level", "warn"}, noEnv, out, &strings.Builder{}); err != nil {
			t.Fatal(err)
		}
	}
	if out1.String() != out2.String() || len(strings.TrimSpace(out1.String())) != 87 {
		t.Fatalf("push-key printed %q then %q, want one 87-character key", out1.String(), out2.String())
	}
	s := startServer(t, "--data", dir)
	c := newV1Client(t, s)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	c.want(200, "GET", "/v1/push/key", c.login("13800000891"), nil, &key)
	if key.PublicKey != strings.TrimSpace(out1.String()) {
		t.Fatalf("the server's key %s, push-key printed %s", key.PublicKey, out1.String())
	}
}
