package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
)

// apiNotification is a group as /v1/notifications shows it.
type apiNotification struct {
	Key      string    `json:"key"`
	Kind     string    `json:"kind"`
	Count    int       `json:"count"`
	Actors   []apiUser `json:"actors"`
	Post     *apiPost  `json:"post"`
	Action   string    `json:"action"`
	LatestAt string    `json:"latest_at"`
	Unread   bool      `json:"unread"`
	Removed  bool      `json:"removed"`
}

func (n apiNotification) actorIDs() []int64 {
	out := make([]int64, len(n.Actors))
	for i, u := range n.Actors {
		out[i] = u.ID
	}
	return out
}

func (c *v1Client) notifications(token string) []apiNotification {
	c.t.Helper()
	var page apiPage[apiNotification]
	c.want(200, "GET", "/v1/notifications?limit=100", token, nil, &page)
	return page.Data
}

func (c *v1Client) unread(token string) int {
	c.t.Helper()
	var n struct{ Count int }
	c.want(200, "GET", "/v1/notifications/unread-count", token, nil, &n)
	return n.Count
}

// notificationEvent waits for st's next notification event, checked
// against the document.
func notificationEvent(t *testing.T, c *v1Client, st *sseStream) apiNotification {
	t.Helper()
	var ev sseEvent
	select {
	case ev = <-st.notes:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification event within 30s")
	}
	var n apiNotification
	if err := json.Unmarshal([]byte(ev.Data), &n); err != nil {
		t.Fatalf("notification event %q: %v", ev.Data, err)
	}
	schema := "Notification"
	if n.Removed {
		schema = "NotificationGone"
	}
	if err := c.api.validate(map[string]any{"$ref": "#/components/schemas/" + schema}, mustJSON(t, ev.Data), "event"); err != nil {
		t.Fatalf("notification event data: %v", err)
	}
	return n
}

// v1NotifyExchanges exercises the notification routes for TestV1API,
// every documented status but 500 and 503: a and b are two users' tokens.
func v1NotifyExchanges(t *testing.T, c *v1Client, a, b string) {
	aID, bID := c.me(a).ID, c.me(b).ID
	p := c.publish(a, "noticed")
	c.want(204, "PUT", "/v1/posts/{id}/like", b, nil, nil, p.ID)
	var got []apiNotification
	waitFor(t, "a like group", func() bool {
		got = c.notifications(a)
		return len(got) > 0 && got[0].Kind == "like" && got[0].Post != nil && got[0].Post.ID == p.ID
	})
	g := got[0]
	if g.Count != 1 || !slices.Equal(g.actorIDs(), []int64{bID}) || !g.Unread || g.Post.Author.ID != aID || g.Post.Title != "noticed" {
		t.Fatalf("like group %+v", g)
	}
	if n := c.unread(a); n < 1 {
		t.Fatalf("unread %d, want at least 1", n)
	}
	c.want(204, "POST", "/v1/notifications/read", a, map[string]any{"key": g.Key}, nil)
	c.want(204, "POST", "/v1/notifications/read", a, nil, nil)
	if n := c.unread(a); n != 0 {
		t.Fatalf("unread %d after reading everything", n)
	}
	c.refused(400, "invalid", "GET", "/v1/notifications?cursor=nope", a, nil)
	c.refused(400, "invalid", "GET", "/v1/notifications?limit=1000", a, nil)
	c.refused(401, "unauthorized", "GET", "/v1/notifications", "", nil)
	c.refused(401, "unauthorized", "GET", "/v1/notifications/unread-count", "", nil)
	c.refused(401, "unauthorized", "POST", "/v1/notifications/read", "", nil)
	c.refused(401, "unauthorized", "DELETE", "/v1/notifications/{key}", "", nil, g.Key)
	c.refused(400, "invalid", "POST", "/v1/notifications/read", a, map[string]any{"key": "nope"})
	c.refused(400, "invalid", "POST", "/v1/notifications/read", a, map[string]any{"group": g.Key})
	c.refused(404, "not_found", "POST", "/v1/notifications/read", b, map[string]any{"key": g.Key})
	c.refused(400, "invalid", "DELETE", "/v1/notifications/{key}", a, nil, "nope")
	c.refused(404, "not_found", "DELETE", "/v1/notifications/{key}", b, nil, g.Key)
	c.want(204, "DELETE", "/v1/notifications/{key}", a, nil, nil, g.Key)
	c.refused(404, "not_found", "DELETE", "/v1/notifications/{key}", a, nil, g.Key)
	for _, n := range c.notifications(a) {
		if n.Key == g.Key {
			t.Fatalf("dismissed group %s still listed", g.Key)
		}
	}
}

// TestNotifyStreamAcrossProcesses: a like through one API process reaches
// the author's stream on another, as a notification event, over each
// event bus between processes (PostgreSQL LISTEN/NOTIFY, Redis pub/sub);
// the unlike that empties the group sends its removal.
func TestNotifyStreamAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"postgres", "redis"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--database-url", testenv.PostgresURL(t)}
			if mode == "redis" {
				args = singleNode(t).args
			}
			one := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "1"}, args...)...)
			two := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, args...)...)
			t.Cleanup(func() { one.logs.dumpIfFailed(t); two.logs.dumpIfFailed(t) })
			c1, c2 := newV1Client(t, one.client(t)), newV1Client(t, two.client(t))
			a, b := c1.login("13800000701"), c2.login("13800000702")
			bID := c2.me(b).ID
			p := c1.publish(a, "across")
			st := c1.openStream(a, "", "127.0.0.2")
			c2.want(204, "PUT", "/v1/posts/{id}/like", b, nil, nil, p.ID)
			n := notificationEvent(t, c1, st)
			if n.Kind != "like" || n.Count != 1 || !slices.Equal(n.actorIDs(), []int64{bID}) || n.Post == nil || n.Post.ID != p.ID || !n.Unread {
				t.Fatalf("notification event %+v", n)
			}
			c2.want(204, "DELETE", "/v1/posts/{id}/like", b, nil, nil, p.ID)
			if gone := notificationEvent(t, c1, st); !gone.Removed || gone.Key != n.Key {
				t.Fatalf("after the unlike: %+v, want the removal of %s", gone, n.Key)
			}
			if got := c1.notifications(a); len(got) != 0 {
				t.Fatalf("groups after the unlike: %+v", got)
			}
			c1.want(204, "PUT", "/v1/following/{id}", b, nil, nil, c1.me(a).ID)
			if f := notificationEvent(t, c1, st); f.Kind != "follow" || fmt.Sprint(f.actorIDs()) != fmt.Sprint([]int64{bID}) {
				t.Fatalf("follow event %+v", f)
			}
		})
	}
}

// gatedEvents records publishes; the first waits for gate.
type gatedEvents struct {
	feed.EventService
	gate      chan struct{}
	entered   chan struct{}
	mu        sync.Mutex
	published []int64
}

func (g *gatedEvents) Publish(ctx context.Context, ev feed.Event) error {
	g.mu.Lock()
	first := len(g.published) == 0
	g.published = append(g.published, ev.Entry.PostID)
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.gate
	}
	return nil
}

// TestPublishNotices: notices queued while a publish is in flight are
// published once per group, in order of first appearance.
func TestPublishNotices(t *testing.T) {
	g := &gatedEvents{gate: make(chan struct{}), entered: make(chan struct{})}
	notify := publishNotices(t.Context(), g, slog.New(slog.DiscardHandler))
	notify([]feed.Notice{{UserID: 1, GroupID: 1}})
	<-g.entered
	for range 50 {
		notify([]feed.Notice{{UserID: 1, GroupID: 1}})
	}
	notify([]feed.Notice{{UserID: 1, GroupID: 2}, {UserID: 1, GroupID: 1}})
	close(g.gate)
	waitFor(t, "the second round", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.published) >= 3 })
	time.Sleep(50 * time.Millisecond) // nothing more comes
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(g.published, []int64{1, 1, 2}) {
		t.Fatalf("published groups %v, want [1 1 2]", g.published)
	}
}

// TestNotifyChurn: one user taking back a like and liking again 40 times,
// and unfollowing and following again 25 times, while the victim marks
// everything read after each (and dismisses each group once, half way),
// tells the victim of each once: one live event with an unread group (the
// others are the retractions': the group gone, or as it is when the event
// is sent, read), the unread count back at 0 after every read, and no
// dismissed group reopened. On
// the embedded default and on PostgreSQL; the victim's stream is a client
// of its own (127.0.0.2).
func TestNotifyChurn(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"embedded", "postgres"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--data", t.TempDir()}
			if mode == "postgres" {
				args = []string{"--database-url", testenv.PostgresURL(t)}
			}
			c := newV1Client(t, startServer(t, args...))
			victim, churner := c.login("13800000801"), c.login("13800000802")
			victimID := c.me(victim).ID
			p := c.publish(victim, "liked and unliked")
			st := c.openStream(victim, "", "127.0.0.2")
			unread := 0 // live events after the first that show an unread group
			drain := func() {
				for {
					select {
					case ev := <-st.notes:
						var n apiNotification
						if err := json.Unmarshal([]byte(ev.Data), &n); err != nil {
							t.Fatalf("notification event %q: %v", ev.Data, err)
						}
						if !n.Removed && n.Unread {
							unread++
						}
					case <-time.After(300 * time.Millisecond):
						return
					}
				}
			}
			churn := func(what string, rounds int, on, off func()) {
				on()
				g := notificationEvent(t, c, st)
				if g.Removed || !g.Unread {
					t.Fatalf("the first %s's event: %+v, want its group, unread", what, g)
				}
				for i := range rounds {
					if i == rounds/2 {
						c.want(204, "DELETE", "/v1/notifications/{key}", victim, nil, nil, g.Key)
					} else {
						c.want(204, "POST", "/v1/notifications/read", victim, nil, nil)
					}
					off()
					on()
					if n := c.unread(victim); n != 0 {
						t.Fatalf("%s %d again: unread %d, want 0", what, i+2, n)
					}
					gs := c.notifications(victim)
					if i >= rounds/2 && len(gs) != 0 {
						t.Fatalf("%s %d again: the dismissed group is back: %+v", what, i+2, gs)
					}
				}
				drain()
				if unread != 0 {
					t.Fatalf("%d live events of the %s churn showed the victim an unread group; want none", unread, what)
				}
			}
			churn("like", 40,
				func() { c.want(204, "PUT", "/v1/posts/{id}/like", churner, nil, nil, p.ID) },
				func() { c.want(204, "DELETE", "/v1/posts/{id}/like", churner, nil, nil, p.ID) })
			churn("follow", 25,
				func() { c.want(204, "PUT", "/v1/following/{id}", churner, nil, nil, victimID) },
				func() { c.want(204, "DELETE", "/v1/following/{id}", churner, nil, nil, victimID) })
		})
	}
}
