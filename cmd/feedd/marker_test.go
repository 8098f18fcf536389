package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

type apiMarker struct {
	LastReadID json.RawMessage `json:"last_read_id"`
	Version    int64           `json:"version"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

type apiMarkers struct {
	Timeline      *apiMarker `json:"timeline"`
	Notifications *apiMarker `json:"notifications"`
}

type apiAroundPage struct {
	Data       []apiPost `json:"data"`
	NextCursor *string   `json:"next_cursor"`
	PrevCursor string    `json:"prev_cursor"`
	NewerCount int       `json:"newer_count"`
}

// markerEvent waits for st's next event, which must be a marker event,
// and returns its markers.
func markerEvent(t *testing.T, st *sseStream) (apiMarkers, time.Time) {
	t.Helper()
	ev := st.next(t)
	if ev.Kind != "marker" || ev.ID != "" {
		t.Fatalf("event %s (id %q) %.200s, want a marker event", ev.Kind, ev.ID, ev.Data)
	}
	var ms apiMarkers
	if err := json.Unmarshal([]byte(ev.Data), &ms); err != nil {
		t.Fatal(err)
	}
	return ms, ev.At
}

// testMarkers: markers across two devices of one user. A marker set on
// one device reaches both of the user's live streams as a marker event
// (and nobody else's); a stale version and a move back without one answer
// 409; the notifications marker moves the unread count; the timeline
// opens around the marked post with cursors both ways.
func testMarkers(t *testing.T, c *v1Client) {
	a, b := c.login("13800000901"), c.login("13800000902")
	aID := c.me(a).ID
	c.want(204, "PUT", "/v1/following/{id}", a, nil, nil, c.me(b).ID)
	var posts []apiPost
	for i := range 9 {
		posts = append(posts, c.publish(b, fmt.Sprintf("post %d", i)))
	}
	c.waitTimeline(a, posts[8].ID)
	var none apiMarkers
	c.want(200, "GET", "/v1/markers", a, nil, &none)
	if none.Timeline != nil || none.Notifications != nil {
		t.Fatalf("markers of a new user: %+v", none)
	}
	phone, laptop := c.openStream(a, "", "127.0.0.2"), c.openStream(a, "", "127.0.0.3")
	other := c.openStream(b, "", "127.0.0.4")

	var set apiMarkers
	sent := time.Now()
	c.want(200, "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[3].ID}}, &set)
	if set.Timeline == nil || string(set.Timeline.LastReadID) != fmt.Sprint(posts[3].ID) || set.Timeline.Version != 1 || set.Notifications != nil {
		t.Fatalf("markers set: %+v", set)
	}
	for _, st := range []*sseStream{phone, laptop} {
		ms, at := markerEvent(t, st)
		if ms.Timeline == nil || ms.Timeline.Version != 1 || string(ms.Timeline.LastReadID) != fmt.Sprint(posts[3].ID) {
			t.Fatalf("marker event %+v", ms)
		}
		t.Logf("marker event %v after the write", at.Sub(sent))
	}
	// Mastodon's clients send ids as strings.
	c.want(200, "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": fmt.Sprint(posts[5].ID)}}, &set)
	if set.Timeline.Version != 2 {
		t.Fatalf("version %d after a move forward, want 2", set.Timeline.Version)
	}
	markerEvent(t, phone)
	markerEvent(t, laptop)
	c.refused(409, "conflict", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[3].ID}})
	c.refused(409, "conflict", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[3].ID, "version": 1}})
	c.want(200, "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[4].ID, "version": 2}}, &set)
	if set.Timeline.Version != 3 || string(set.Timeline.LastReadID) != fmt.Sprint(posts[4].ID) {
		t.Fatalf("a move back with the version: %+v", set.Timeline)
	}
	markerEvent(t, phone)
	markerEvent(t, laptop)
	for _, bad := range []any{
		map[string]any{},
		map[string]any{"home": map[string]any{"last_read_id": 1}},
		map[string]any{"timeline": map[string]any{}},
		map[string]any{"timeline": map[string]any{"last_read_id": "x"}},
		map[string]any{"notifications": map[string]any{"last_read_id": 5}},
	} {
		c.refused(400, "invalid", "POST", "/v1/markers", a, bad)
	}
	c.refused(404, "not_found", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[8].ID + 1000}})

	// The notifications marker and the unread count.
	mine := c.publish(a, "mine")
	c.want(204, "PUT", "/v1/posts/{id}/like", b, nil, nil, mine.ID)
	c.waitTimeline(a, mine.ID)
	waitFor(t, "a notification", func() bool { return c.unread(a) == 1 })
	key := c.notifications(a)[0].Key
	set = apiMarkers{}
	c.want(200, "POST", "/v1/markers", a, map[string]any{"notifications": map[string]any{"last_read_id": key}}, &set)
	if set.Notifications == nil || string(set.Notifications.LastReadID) != `"`+key+`"` || set.Timeline != nil {
		t.Fatalf("notifications marker %+v", set)
	}
	if n := c.unread(a); n != 0 {
		t.Fatalf("unread %d after the notifications marker, want 0", n)
	}
	var all apiMarkers
	c.want(200, "GET", "/v1/markers", a, nil, &all)
	if all.Timeline == nil || all.Timeline.Version != 3 || all.Notifications == nil || all.Notifications.Version != 1 {
		t.Fatalf("markers %+v", all)
	}

	// Open where the marker is: around it, then both ways.
	var page apiAroundPage
	rep := c.want(200, "GET", fmt.Sprintf("/v1/timeline?around=%d&limit=4", posts[4].ID), a, nil, &page)
	want := []int64{posts[6].ID, posts[5].ID, posts[4].ID, posts[3].ID}
	if got := postIDs(page.Data); !slices.Equal(got, want) || page.NewerCount != 3 || page.NextCursor == nil {
		t.Fatalf("around post %d: %v (newer %d), want %v (newer 3)", posts[4].ID, got, page.NewerCount, want)
	}
	if rep.Header.Get("Link") == "" {
		t.Fatal("no Link header")
	}
	var newer apiAroundPage
	c.want(200, "GET", "/v1/timeline?limit=2&before="+page.PrevCursor, a, nil, &newer)
	if got := postIDs(newer.Data); !slices.Equal(got, []int64{posts[8].ID, posts[7].ID}) || newer.NewerCount != 1 {
		t.Fatalf("before the page: %v (newer %d)", got, newer.NewerCount)
	}
	var older apiPage[apiPost]
	c.want(200, "GET", "/v1/timeline?limit=3&cursor="+*page.NextCursor, a, nil, &older)
	if got := postIDs(older.Data); !slices.Equal(got, []int64{posts[2].ID, posts[1].ID, posts[0].ID}) {
		t.Fatalf("after the page: %v", got)
	}
	around := fmt.Sprintf("/v1/timeline?around=%d", posts[4].ID)
	c.refused(400, "invalid", "GET", around+"&before="+page.PrevCursor, a, nil)
	c.refused(400, "invalid", "GET", around+"&cursor="+page.PrevCursor, a, nil)
	c.refused(400, "invalid", "GET", around+"&order=ranked", a, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?before=nope", a, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?around=-3", a, nil)
	c.refused(404, "not_found", "GET", fmt.Sprintf("/v1/timeline?around=%d", posts[8].ID+1000), a, nil)
	c.refused(401, "unauthorized", "GET", around, "", nil)

	// Nobody else heard of a's markers.
	for {
		select {
		case ev := <-other.events:
			if ev.Kind == "marker" {
				t.Fatalf("user %d's stream got a marker event of user %d", c.me(b).ID, aID)
			}
			continue
		default:
		}
		break
	}
}

func TestMarkersEmbedded(t *testing.T) {
	testMarkers(t, newV1Client(t, startServer(t, "--data", t.TempDir(), "--workers", "1")))
}

func TestMarkersPostgres(t *testing.T) {
	testMarkers(t, newV1Client(t, startServer(t, "--database-url", testenv.PostgresURL(t), "--workers", "1")))
}

// v1MarkerPushExchanges sends, for TestV1API, every documented answer of
// the markers, the timeline read around a post and the push routes: a is
// a user with posts in the timeline. The 404s of push turned off come
// from a second server whose exchanges are checked against, and counted
// in, c's document.
func v1MarkerPushExchanges(t *testing.T, c *v1Client, a string) {
	var page apiPage[apiPost]
	c.want(200, "GET", "/v1/timeline?limit=3", a, nil, &page)
	if len(page.Data) < 2 {
		t.Fatalf("timeline of %d posts, want 2 or more", len(page.Data))
	}
	newer, older := page.Data[0].ID, page.Data[1].ID
	var ms apiMarkers
	c.want(200, "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": newer}}, &ms)
	c.want(200, "GET", "/v1/markers", a, nil, &ms)
	if ms.Timeline == nil || string(ms.Timeline.LastReadID) != fmt.Sprint(newer) {
		t.Fatalf("markers %+v", ms)
	}
	c.refused(409, "conflict", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": older}})
	c.refused(400, "invalid", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": 0}})
	c.refused(404, "not_found", "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": 999999}})
	c.refused(404, "not_found", "GET", "/v1/timeline?around=999999", a, nil)

	var key struct {
		PublicKey string `json:"public_key"`
	}
	c.want(200, "GET", "/v1/push/key", a, nil, &key)
	// A user nobody notifies: nothing is ever sent to this endpoint.
	quiet := c.login("13800000199")
	keys := map[string]string{"p256dh": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "auth": "BTBZMqHH6r4Tts7J_aSIgg"}
	var sub apiPushSubscription
	c.want(201, "POST", "/v1/push/subscriptions", quiet, map[string]any{"endpoint": "https://push.example.com/v1", "keys": keys, "alerts": map[string]bool{"like": false}}, &sub)
	var subs apiPage[apiPushSubscription]
	c.want(200, "GET", "/v1/push/subscriptions", quiet, nil, &subs)
	if len(subs.Data) != 1 || subs.Data[0].ID != sub.ID || subs.Data[0].Alerts["like"] || !subs.Data[0].Alerts["follow"] {
		t.Fatalf("subscriptions %+v", subs)
	}
	c.refused(400, "invalid", "POST", "/v1/push/subscriptions", quiet, map[string]any{"endpoint": "https://127.0.0.1/x", "keys": keys})
	c.refused(400, "invalid", "DELETE", "/v1/push/subscriptions/{id}", quiet, nil, "abc")
	c.want(204, "DELETE", "/v1/push/subscriptions/{id}", quiet, nil, nil, sub.ID)
	c.refused(404, "not_found", "DELETE", "/v1/push/subscriptions/{id}", quiet, nil, sub.ID)

	off := newV1Client(t, startServer(t, "--data", t.TempDir(), "--push=false"))
	off.api = c.api
	o := off.login("13800000198")
	off.refused(404, "not_found", "GET", "/v1/push/key", o, nil)
	off.refused(404, "not_found", "GET", "/v1/push/subscriptions", o, nil)
	off.refused(404, "not_found", "POST", "/v1/push/subscriptions", o, map[string]any{"endpoint": "https://push.example.com/v1", "keys": keys})
}
