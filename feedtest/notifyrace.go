package feedtest

import (
	"fmt"
	"sync"
	"testing"

	feed "github.com/feedd/feedd"
)

// Grouped notifications under concurrency: mutes racing likes and
// follows, many likes at once, churn, and group ids never reused.

// TestNotifyMuteRace mutes n users each at the same time as they like the
// muter's post or follow the muter (goroutines released together) and
// checks that no muted user is left in the muter's notifications: a mute
// either commits first (the like or follow then records nothing) or
// removes what the like or follow recorded. open must return an empty
// backend.
func TestNotifyMuteRace(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend, n int) {
	b := open(t, feed.NotifySettings{})
	w := newNotifyWorld(t, b)
	ctx := t.Context()
	muter, p, actors := w.crowd(n, "muted")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range actors {
		wg.Go(func() {
			<-start
			var err error
			if i%2 == 0 {
				err = w.s.SetLike(ctx, id, p, true)
			} else {
				err = w.s.Follow(ctx, id, muter, true)
			}
			if err != nil {
				t.Errorf("like or follow: %v", err)
			}
		})
		wg.Go(func() {
			<-start
			if err := w.s.Mute(ctx, muter, id, true); err != nil {
				t.Errorf("Mute: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	b.Jobs()
	if got := w.page(muter); len(got) != 0 {
		t.Fatalf("after %d mutes racing their users' likes and follows, the muter has groups %q; want none", n, describe(got))
	}
	if u := w.unread(muter); u != 0 {
		t.Fatalf("unread %d after muting every actor, want 0", u)
	}
}

// TestNotifyConcurrentLikes likes one post by n distinct users at once
// (n goroutines released together) and checks that the
// author has one group counting every one of them, the post's like count
// in step. open must return an empty backend.
func TestNotifyConcurrentLikes(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend, n int) {
	b := open(t, feed.NotifySettings{})
	w := newNotifyWorld(t, b)
	ctx := t.Context()
	author, p, likers := w.crowd(n, "popular")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, id := range likers {
		wg.Go(func() {
			<-start
			if err := w.s.SetLike(ctx, id, p, true); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("SetLike: %v", err)
	}
	got := w.page(author)
	if len(got) != 1 || got[0].Count != n || len(got[0].Actors) != feed.NotifyActorsShown {
		t.Fatalf("groups after %d concurrent likes: %q; want one counting %d", n, describe(got), n)
	}
	if post, err := b.Posts.Post(ctx, p); err != nil || post.Liked != n {
		t.Fatalf("post like count %v (err %v), want %d", post, err, n)
	}
	// And as many unlikes, at once: the group goes.
	var wg2 sync.WaitGroup
	for _, id := range likers {
		wg2.Go(func() {
			if err := w.s.SetLike(ctx, id, p, false); err != nil {
				t.Errorf("unlike: %v", err)
			}
		})
	}
	wg2.Wait()
	if got := w.page(author); len(got) != 0 {
		t.Fatalf("groups after every unlike: %q; want none", describe(got))
	}
}

// testNotifyChurn: one user taking back a like and liking again 40 times,
// then following and unfollowing 25 times, with the victim marking read
// or dismissing in between, is told once of each (docs/API.md,
// "Notifications": an actor's repeat within the renotify window counts
// once, makes nothing unread and reopens no dismissed group; its notice
// shows the group again as it was); others' events are told as before,
// and after the window the same actor is told again.
func testNotifyChurn(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(3)
	a, bo, cy := u[0], u[1], u[2]
	ctx := t.Context()
	p := w.publish(a, "churned")
	b.Notices()
	told := func(step string, want int) {
		t.Helper()
		if ns := b.Notices(); len(ns) != want {
			t.Fatalf("%s: notices %+v, want %d", step, ns, want)
		}
	}
	// churn takes back and gives again an event of bo's (set) rounds
	// times, a marking everything read before each, and dismissing g, the
	// group that told of it, half way; a's other groups are rest.
	churn := func(what string, rounds int, set func(on bool), g feed.NotifyView, rest ...string) {
		t.Helper()
		for i := range rounds {
			if i == rounds/2 {
				must(t, w.s.DismissNotification(ctx, a, g.ID), "Dismiss")
			} else {
				must(t, w.s.MarkNotificationsRead(ctx, a, 0), "MarkNotificationsRead")
			}
			set(false)
			b.Notices() // the retraction's (the group changed or went)
			set(true)
			// The group is shown again as it was (one notice, nothing
			// unread); a dismissed one stays gone (none).
			told(fmt.Sprintf("%s %d again", what, i+2), min(1, max(0, rounds/2-i)))
			if n := w.unread(a); n != 0 {
				t.Fatalf("%s %d again: unread %d, want 0", what, i+2, n)
			}
			got := w.page(a)
			if i >= rounds/2 {
				wantGroups(t, got, rest...) // dismissed, not reopened
				continue
			}
			wantGroups(t, got, append(describe([]feed.NotifyView{g}), rest...)...)
			if got[0].ID != g.ID || !got[0].LatestAt.Equal(g.LatestAt) || got[0].Unread {
				t.Fatalf("%s %d again: group %d at %v unread %v; want group %d unmoved at %v, read",
					what, i+2, got[0].ID, got[0].LatestAt, got[0].Unread, g.ID, g.LatestAt)
			}
		}
	}
	w.like(bo, p, true)
	told("the first like", 1)
	first := w.page(a)
	wantGroups(t, first, fmt.Sprintf("like:%d:1:[%d]", p, bo))
	churn("like", 40, func(on bool) { w.like(bo, p, on) }, first[0])
	// Someone else's like is news: a new group (the dismissed one stays
	// gone), which the churning actor does not join.
	w.like(cy, p, true)
	told("another user's like", 1)
	w.like(bo, p, false)
	w.like(bo, p, true)
	b.Notices()
	liked := fmt.Sprintf("like:%d:1:[%d]", p, cy)
	wantGroups(t, w.page(a), liked)
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread after another user's like = %d, want 1", n)
	}
	must(t, w.s.MarkNotificationsRead(ctx, a, 0), "MarkNotificationsRead")

	w.follow(bo, a, true)
	told("the first follow", 1)
	follows := w.page(a)
	wantGroups(t, follows, fmt.Sprintf("follow:0:1:[%d]", bo), liked)
	churn("follow", 25, func(on bool) { w.follow(bo, a, on) }, follows[0], liked)

	// After the renotify window the same actor is told again.
	w.tick(feed.DefaultRenotifyAfter)
	w.like(bo, p, false)
	b.Notices()
	w.like(bo, p, true)
	told("a like after the window", 1)
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread after a like past the window = %d, want 1", n)
	}
}

// testNotifyKeys: a group's id (and so its key) is never given to another
// group, of the same user or another, after the group was dismissed or
// emptied.
func testNotifyKeys(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(3)
	a, bo, cy := u[0], u[1], u[2]
	ctx := t.Context()
	p := w.publish(a, "a's")
	q := w.publish(bo, "bo's")
	seen := map[int64]string{}
	newest := func(user int64, what string) int64 {
		t.Helper()
		gs := w.page(user)
		if len(gs) == 0 {
			t.Fatalf("%s: no group", what)
		}
		id := gs[0].ID
		if was, ok := seen[id]; ok {
			t.Fatalf("%s has id %d (key %s), the id of %s", what, id, feed.NotifyKey(id), was)
		}
		seen[id] = what
		return id
	}
	w.like(cy, p, true)
	g := newest(a, "a's group of cy's like")
	must(t, w.s.DismissNotification(ctx, a, g), "Dismiss")
	w.like(cy, q, true)
	newest(bo, "bo's group of cy's like")
	w.like(bo, p, true)
	newest(a, "a's group of bo's like")
	w.like(bo, p, false) // emptied
	w.follow(a, bo, true)
	newest(bo, "bo's group of a's follow")
	r := w.publish(a, "deleted")
	w.like(cy, r, true)
	newest(a, "a's group of cy's like of a post then deleted")
	must(t, w.s.DeletePost(ctx, a, r), "DeletePost") // its group goes
	b.Jobs()
	w.like(cy, w.publish(bo, "bo's second"), true)
	newest(bo, "bo's group of cy's like of another post")
}
