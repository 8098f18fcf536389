package feedtest

import (
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestMarkers runs the contract of markers (feed.MarkerStore, the
// Service's rules of versions and directions) on the backend behind
// open, whose notification store must be its MarkerStore too.
func TestMarkers(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	t.Run("Versions", func(t *testing.T) { testMarkerVersions(t, open(t, feed.NotifySettings{})) })
	t.Run("Notifications", func(t *testing.T) { testMarkerNotifications(t, open(t, feed.NotifySettings{})) })
	t.Run("Concurrent", func(t *testing.T) { testMarkerConcurrent(t, open(t, feed.NotifySettings{})) })
}

func markerWorld(t *testing.T, b *NotifyBackend) *notifyWorld {
	w := newNotifyWorld(t, b)
	ms, ok := b.Notify.(feed.MarkerStore)
	if !ok {
		t.Fatalf("%T is no feed.MarkerStore", b.Notify)
	}
	w.s.Markers = ms
	return w
}

// publishFed publishes a post and runs its fan-out.
func (w *notifyWorld) publishFed(author int64, title string) int64 {
	w.t.Helper()
	w.tick(time.Millisecond)
	p, err := w.s.Publish(w.t.Context(), author, feed.PostInput{Title: title, Content: "c"})
	must(w.t, err, "Publish")
	must(w.t, RunJobs(w.t.Context(), w.b.Backend), "RunJobs")
	return p.ID
}

func (w *notifyWorld) setMarker(user int64, ws ...feed.MarkerWrite) (map[string]feed.Marker, error) {
	w.tick(time.Second)
	return w.s.SetMarkers(w.t.Context(), user, ws)
}

func (w *notifyWorld) markers(user int64) map[string]feed.Marker {
	w.t.Helper()
	ms, err := w.s.UserMarkers(w.t.Context(), user)
	must(w.t, err, "UserMarkers")
	return ms
}

func wantMarker(t *testing.T, ms map[string]feed.Marker, timeline string, id, version int64) {
	t.Helper()
	m, ok := ms[timeline]
	if !ok || m.LastReadID != id || m.Version != version || m.Timeline != timeline || m.Position.PostID != id {
		t.Fatalf("%s marker %+v (set %v), want last read %d at version %d", timeline, m, ok, id, version)
	}
}

// testMarkerVersions: a marker moves forward without a version, refuses
// to move back without one (ECONFLICT), moves anywhere with the version
// it is at and refuses a stale version; the same item again changes
// nothing; bad timelines, ids and posts the user may not see are refused
// and write nothing; a marker keeps its place when its post is deleted.
func testMarkerVersions(t *testing.T, b *NotifyBackend) {
	w := markerWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, other := u[0], u[1]
	p1 := w.publishFed(a, "one")
	p2 := w.publishFed(a, "two")
	if ms := w.markers(a); len(ms) != 0 {
		t.Fatalf("markers of a new user: %+v", ms)
	}
	tl := func(id int64) feed.MarkerWrite {
		return feed.MarkerWrite{Timeline: feed.MarkerTimeline, LastReadID: id}
	}
	at := func(id, v int64) feed.MarkerWrite {
		return feed.MarkerWrite{Timeline: feed.MarkerTimeline, LastReadID: id, Version: v, HasVersion: true}
	}
	ms, err := w.setMarker(a, tl(p1))
	must(t, err, "set")
	wantMarker(t, ms, feed.MarkerTimeline, p1, 1)
	if m := w.markers(a)[feed.MarkerTimeline]; !m.UpdatedAt.Equal(time.UnixMilli(w.clock.Load())) {
		t.Fatalf("updated at %v, want the clock", m.UpdatedAt)
	}
	_, err = w.setMarker(a, tl(p2))
	must(t, err, "forward")
	_, err = w.setMarker(a, tl(p1))
	wantCode(t, err, feed.ECONFLICT, "back without a version")
	_, err = w.setMarker(a, tl(p2))
	must(t, err, "the same item again")
	wantMarker(t, w.markers(a), feed.MarkerTimeline, p2, 2)
	_, err = w.setMarker(a, at(p1, 1))
	wantCode(t, err, feed.ECONFLICT, "a stale version")
	ms, err = w.setMarker(a, at(p1, 2))
	must(t, err, "back with the version")
	wantMarker(t, ms, feed.MarkerTimeline, p1, 3)

	for _, bad := range [][]feed.MarkerWrite{
		{{Timeline: "home", LastReadID: p1}},
		{{Timeline: feed.MarkerTimeline, LastReadID: 0}},
		{tl(p2), tl(p2)},
		{},
	} {
		_, err := w.setMarker(a, bad...)
		wantCode(t, err, feed.EINVALID, "a bad write")
	}
	_, err = w.setMarker(a, tl(p2+1000))
	wantCode(t, err, feed.ENOTFOUND, "a post that does not exist")
	_, err = w.s.Block(ctx, other, a, true) // hides other's posts from a
	must(t, err, "Block")
	q := w.publish(other, "blocked")
	_, err = w.setMarker(a, tl(q))
	wantCode(t, err, feed.ENOTFOUND, "a post of a user who blocks the caller")
	wantMarker(t, w.markers(a), feed.MarkerTimeline, p1, 3)
	if ms := w.markers(other); len(ms) != 0 {
		t.Fatalf("another user's markers: %+v", ms)
	}

	// The marker keeps its place when its post goes.
	_, err = w.setMarker(a, tl(p2))
	must(t, err, "forward")
	must(t, w.s.DeletePost(ctx, a, p2), "DeletePost")
	page, err := w.s.TimelineAround(ctx, a, p2, 10)
	must(t, err, "TimelineAround a deleted post the marker names")
	if len(page.List) != 1 || page.List[0].ID != p1 || page.Newer != 0 {
		t.Fatalf("around the deleted marked post: %d posts, newer %d", len(page.List), page.Newer)
	}
	_, err = w.s.TimelineAround(ctx, a, p1+5000, 10)
	wantCode(t, err, feed.ENOTFOUND, "around a post that never was")
}

// testMarkerNotifications: the notifications marker names a group by its
// id and the unread count follows it, back (with the version) as well as
// forward; a write of both timelines with one refused writes neither;
// another user's group is not found.
func testMarkerNotifications(t *testing.T, b *NotifyBackend) {
	w := markerWorld(t, b)
	u := w.users(3)
	a := u[0]
	p := w.publish(a, "one")
	q := w.publish(a, "two")
	w.like(u[1], p, true)
	w.like(u[1], q, true)
	gs := w.page(a)
	newer, older := gs[0].ID, gs[1].ID
	nm := func(id int64) feed.MarkerWrite {
		return feed.MarkerWrite{Timeline: feed.MarkerNotifications, LastReadID: id}
	}
	if n := w.unread(a); n != 2 {
		t.Fatalf("unread %d, want 2", n)
	}
	_, err := w.setMarker(a, nm(older))
	must(t, err, "set")
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread after the older group %d, want 1", n)
	}
	_, err = w.setMarker(a, nm(newer))
	must(t, err, "forward")
	if n := w.unread(a); n != 0 {
		t.Fatalf("unread after the newer group %d, want 0", n)
	}
	back := nm(older)
	back.Version, back.HasVersion = 2, true
	ms, err := w.setMarker(a, back)
	must(t, err, "back with the version")
	wantMarker(t, ms, feed.MarkerNotifications, older, 3)
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread after moving back %d, want 1", n)
	}
	_, err = w.setMarker(a, feed.MarkerWrite{Timeline: feed.MarkerTimeline, LastReadID: q}, nm(older+newer+100))
	wantCode(t, err, feed.ENOTFOUND, "a group that does not exist")
	stale := nm(newer)
	stale.HasVersion = true // version 0: stale
	_, err = w.setMarker(a, feed.MarkerWrite{Timeline: feed.MarkerTimeline, LastReadID: q}, stale)
	wantCode(t, err, feed.ECONFLICT, "one of two stale")
	if _, ok := w.markers(a)[feed.MarkerTimeline]; ok {
		t.Fatal("the timeline marker was written with a refused notifications marker")
	}
	_, err = w.setMarker(u[1], nm(older))
	wantCode(t, err, feed.ENOTFOUND, "another user's group")
}

// testMarkerConcurrent: of writers that all name the version they read,
// exactly one wins and the others get ECONFLICT.
func testMarkerConcurrent(t *testing.T, b *NotifyBackend) {
	w := markerWorld(t, b)
	a := w.users(1)[0]
	var posts []int64
	for i := range 8 {
		posts = append(posts, w.publish(a, "p"+string(rune('a'+i))))
	}
	_, err := w.setMarker(a, feed.MarkerWrite{Timeline: feed.MarkerTimeline, LastReadID: posts[0]})
	must(t, err, "set")
	for round := range 5 {
		v := w.markers(a)[feed.MarkerTimeline].Version
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for _, id := range posts {
			wg.Go(func() {
				_, err := w.s.SetMarkers(t.Context(), a, []feed.MarkerWrite{{Timeline: feed.MarkerTimeline, LastReadID: id, Version: v, HasVersion: true}})
				mu.Lock()
				defer mu.Unlock()
				switch feed.ErrorCode(err) {
				case "":
					wins++
				case feed.ECONFLICT:
					conflicts++
				default:
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || conflicts != len(posts)-1 {
			t.Fatalf("round %d: %d writes won, %d conflicted; want 1 and %d", round, wins, conflicts, len(posts)-1)
		}
		if got := w.markers(a)[feed.MarkerTimeline].Version; got != v+1 {
			t.Fatalf("round %d: version %d, want %d", round, got, v+1)
		}
	}
}
