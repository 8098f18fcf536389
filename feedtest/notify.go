package feedtest

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestNotifications runs the contract of grouped notifications
// (feed.NotifyStore and the hooks in the stores' transactions) through
// feed.Service on the backend: grouping, windows, retractions, blocks and
// mutes, moderation, the cursor, unread counts, retention and the groups
// kept. open must return an empty backend recording with s on every call.
func TestNotifications(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	t.Run("Grouping", func(t *testing.T) { testNotifyGrouping(t, open(t, feed.NotifySettings{})) })
	t.Run("Window", func(t *testing.T) {
		testNotifyWindow(t, open(t, feed.NotifySettings{Window: time.Hour, Renotify: 30 * time.Minute}))
	})
	t.Run("Retractions", func(t *testing.T) { testNotifyRetractions(t, open(t, feed.NotifySettings{})) })
	t.Run("BlocksAndMutes", func(t *testing.T) { testNotifyBlocks(t, open(t, feed.NotifySettings{})) })
	t.Run("Moderation", func(t *testing.T) { testNotifyModeration(t, open(t, feed.NotifySettings{})) })
	t.Run("Cursor", func(t *testing.T) { testNotifyCursor(t, open(t, feed.NotifySettings{})) })
	t.Run("Unread", func(t *testing.T) { testNotifyUnread(t, open(t, feed.NotifySettings{})) })
	t.Run("Retention", func(t *testing.T) {
		testNotifyRetention(t, open(t, feed.NotifySettings{Retention: time.Hour, Keep: 3}))
	})
	t.Run("Off", func(t *testing.T) { testNotifyOff(t, open(t, feed.NotifySettings{Off: true})) })
	t.Run("Churn", func(t *testing.T) { testNotifyChurn(t, open(t, feed.NotifySettings{})) })
	t.Run("KeysNotReused", func(t *testing.T) { testNotifyKeys(t, open(t, feed.NotifySettings{})) })
}

// notifyWorld is a service on a backend, with a clock the test moves.
type notifyWorld struct {
	t     *testing.T
	b     *NotifyBackend
	s     *feed.Service
	clock *atomic.Int64
}

func newNotifyWorld(t *testing.T, b *NotifyBackend) *notifyWorld {
	clock := &atomic.Int64{}
	clock.Store(base().UnixMilli())
	s := newService(b.Backend, clock)
	s.Notify = b.Notify
	return &notifyWorld{t: t, b: b, s: s, clock: clock}
}

func (w *notifyWorld) tick(d time.Duration) { w.clock.Add(d.Milliseconds()) }

func (w *notifyWorld) users(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = newUser(w.t, w.b.Backend, i+1, time.UnixMilli(w.clock.Load())).ID
	}
	return ids
}

// crowd makes a user with a post titled title and n other users.
func (w *notifyWorld) crowd(n int, title string) (author, post int64, others []int64) {
	now := time.UnixMilli(w.clock.Load())
	author = newUser(w.t, w.b.Backend, 1, now).ID
	others = make([]int64, n)
	for i := range others {
		others[i] = newUser(w.t, w.b.Backend, 2+i, now).ID
	}
	return author, w.publish(author, title), others
}

func (w *notifyWorld) publish(author int64, title string) int64 {
	w.t.Helper()
	w.tick(time.Millisecond)
	p, err := w.s.Publish(w.t.Context(), author, feed.PostInput{Title: title, Content: "c"})
	must(w.t, err, "Publish")
	w.b.Jobs()
	return p.ID
}

func (w *notifyWorld) like(user, post int64, on bool) {
	w.t.Helper()
	w.tick(time.Second)
	must(w.t, w.s.SetLike(w.t.Context(), user, post, on), fmt.Sprintf("SetLike(%d, %d, %v)", user, post, on))
}

func (w *notifyWorld) follow(user, target int64, on bool) {
	w.t.Helper()
	w.tick(time.Second)
	must(w.t, w.s.Follow(w.t.Context(), user, target, on), "Follow")
	w.b.Jobs()
}

// page reads all of user's groups (pages of 100).
func (w *notifyWorld) page(user int64) []feed.NotifyView {
	w.t.Helper()
	p, err := w.s.Notifications(w.t.Context(), user, nil, feed.MaxTimelineLimit)
	must(w.t, err, "Notifications")
	return p.List
}

func (w *notifyWorld) unread(user int64) int {
	w.t.Helper()
	n, err := w.s.UnreadNotifications(w.t.Context(), user)
	must(w.t, err, "UnreadNotifications")
	return n
}

// describe renders groups as "kind:post:count:[actors]" for messages and
// comparisons.
func describe(vs []feed.NotifyView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		ids := make([]int64, len(v.Actors))
		for j, u := range v.Actors {
			ids[j] = u.ID
		}
		out[i] = fmt.Sprintf("%s:%d:%d:%v", v.Kind, v.PostID, v.Count, ids)
		if v.Action != "" {
			out[i] += ":" + v.Action
		}
	}
	return out
}

func wantGroups(t *testing.T, got []feed.NotifyView, want ...string) {
	t.Helper()
	if d := describe(got); !slices.Equal(d, want) {
		t.Fatalf("groups %q, want %q", d, want)
	}
}

func testNotifyGrouping(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(5)
	a, bo, cy, di, ed := u[0], u[1], u[2], u[3], u[4]
	p := w.publish(a, "Title")
	b.Notices()
	w.like(bo, p, true)
	if ns := b.Notices(); len(ns) != 1 || ns[0].UserID != a {
		t.Fatalf("notices after a like: %+v, want one for the author %d", ns, a)
	}
	w.like(cy, p, true)
	w.like(a, p, true) // one's own like tells nobody
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:2:[%d %d]", p, cy, bo))
	w.like(di, p, true)
	w.like(ed, p, true)
	w.like(ed, p, true) // idempotent
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:4:[%d %d %d]", p, ed, di, cy))
	w.follow(di, a, true)
	got := w.page(a)
	wantGroups(t, got, fmt.Sprintf("follow:0:1:[%d]", di), fmt.Sprintf("like:%d:4:[%d %d %d]", p, ed, di, cy))
	if got[1].Post == nil || got[1].Post.ID != p || got[1].Post.Title != "Title" || got[1].Post.Author == nil || got[1].Post.Author.ID != a || !got[1].Post.IsLike {
		t.Fatalf("the like group's post is %+v, want post %d hydrated for its author (who likes it)", got[1].Post, p)
	}
	if got[0].Post != nil || !got[0].Unread || !got[1].Unread {
		t.Fatalf("follow group post %v unread %v/%v; want no post, both unread", got[0].Post, got[0].Unread, got[1].Unread)
	}
	if n := w.unread(a); n != 2 {
		t.Fatalf("unread = %d, want 2", n)
	}
	for _, who := range []int64{bo, cy, di, ed} {
		if g := w.page(who); len(g) != 0 {
			t.Fatalf("user %d, an actor, has groups %q", who, describe(g))
		}
	}
	// Keys are stable and name the group.
	k := feed.NotifyKey(got[1].ID)
	id, err := feed.ParseNotifyKey(k)
	if err != nil || id != got[1].ID {
		t.Fatalf("ParseNotifyKey(NotifyKey(%d)) = %d, %v", got[1].ID, id, err)
	}
	for _, bad := range []string{"", "x", k + "A", "n" + k[1:6], "nAAAAAAAAAA!", feed.NotifyKey(-5)} {
		if _, err := feed.ParseNotifyKey(bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("ParseNotifyKey(%q): %v, want EINVALID", bad, err)
		}
	}
	v, err := w.s.NotificationGroup(t.Context(), a, got[1].ID)
	must(t, err, "NotificationGroup")
	wantGroups(t, []feed.NotifyView{*v}, describe(got[1:])...)
	_, err = w.s.NotificationGroup(t.Context(), bo, got[1].ID)
	wantCode(t, err, feed.ENOTFOUND, "another user's group")
}

func testNotifyWindow(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(5)
	a := u[0]
	p := w.publish(a, "Title")
	w.like(u[1], p, true)
	w.tick(30 * time.Minute)
	w.like(u[2], p, true) // within the hour of the first: same group
	w.tick(30 * time.Minute)
	w.like(u[3], p, true) // the first is now over an hour old: a new group
	w.like(u[4], p, true)
	wantGroups(t, w.page(a),
		fmt.Sprintf("like:%d:2:[%d %d]", p, u[4], u[3]),
		fmt.Sprintf("like:%d:2:[%d %d]", p, u[2], u[1]))
	// An unlike takes the actor out of the group that holds them.
	w.like(u[1], p, false)
	wantGroups(t, w.page(a),
		fmt.Sprintf("like:%d:2:[%d %d]", p, u[4], u[3]),
		fmt.Sprintf("like:%d:1:[%d]", p, u[2]))
	// A like again, past the renotify window (30 minutes), is news: it
	// joins the open group.
	w.like(u[1], p, true)
	wantGroups(t, w.page(a),
		fmt.Sprintf("like:%d:3:[%d %d %d]", p, u[1], u[4], u[3]),
		fmt.Sprintf("like:%d:1:[%d]", p, u[2]))
}

func testNotifyRetractions(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(4)
	a, bo, cy, di := u[0], u[1], u[2], u[3]
	p := w.publish(a, "one")
	q := w.publish(a, "two")
	w.like(bo, p, true)
	w.like(cy, p, true)
	w.like(bo, q, true)
	w.follow(di, a, true)
	b.Notices()
	w.like(bo, p, false)
	if ns := b.Notices(); len(ns) != 1 || ns[0].UserID != a {
		t.Fatalf("notices after an unlike: %+v, want one for %d", ns, a)
	}
	wantGroups(t, w.page(a), fmt.Sprintf("follow:0:1:[%d]", di), fmt.Sprintf("like:%d:1:[%d]", q, bo), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	// ToggleLike retracts and adds as SetLike does.
	w.tick(time.Second)
	if on, err := w.s.ToggleLike(t.Context(), cy, p); err != nil || on {
		t.Fatalf("ToggleLike = %v, %v; want off", on, err)
	}
	wantGroups(t, w.page(a), fmt.Sprintf("follow:0:1:[%d]", di), fmt.Sprintf("like:%d:1:[%d]", q, bo))
	w.tick(time.Second)
	if on, err := w.s.ToggleLike(t.Context(), cy, p); err != nil || !on {
		t.Fatalf("ToggleLike = %v, %v; want on", on, err)
	}
	// A like again within the renotify window is no news: cy is back in
	// the group that told of the first, which does not move up.
	wantGroups(t, w.page(a), fmt.Sprintf("follow:0:1:[%d]", di), fmt.Sprintf("like:%d:1:[%d]", q, bo), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	w.follow(di, a, false)
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:1:[%d]", q, bo), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	// A deleted post takes its groups with it.
	must(t, w.s.DeletePost(t.Context(), a, p), "DeletePost")
	b.Jobs()
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:1:[%d]", q, bo))
}

func testNotifyBlocks(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(4)
	a, bo, cy, di := u[0], u[1], u[2], u[3]
	p := w.publish(a, "a's")
	q := w.publish(bo, "bo's")
	w.like(bo, p, true)
	w.like(cy, p, true)
	w.like(a, q, true)
	w.follow(bo, a, true)
	w.follow(a, bo, true)
	_, err := w.s.Block(t.Context(), a, bo, true)
	must(t, err, "Block")
	b.Jobs()
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	wantGroups(t, w.page(bo)) // both ways
	// No new ones, either way: bo's like is refused, a's tells bo nothing.
	w.like(a, q, false)
	w.like(a, q, true)
	wantGroups(t, w.page(bo))
	wantCode(t, w.s.SetLike(t.Context(), bo, p, true), feed.ENOTFOUND, "the blocked user likes")
	_, err = w.s.Block(t.Context(), a, bo, false)
	must(t, err, "Unblock")
	// A mute takes the muted user's actions out, and keeps new ones out.
	w.like(di, p, true)
	must(t, w.s.Mute(t.Context(), a, di, true), "Mute")
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	w.like(di, p, false)
	w.like(di, p, true)
	w.follow(di, a, true)
	wantGroups(t, w.page(a), fmt.Sprintf("like:%d:1:[%d]", p, cy))
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread = %d, want 1", n)
	}
	// The muted user still hears of the muter's actions.
	r := w.publish(di, "di's")
	w.like(a, r, true)
	wantGroups(t, w.page(di), fmt.Sprintf("like:%d:1:[%d]", r, a))
}

func testNotifyModeration(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(2)
	a := u[0]
	p := w.publish(a, "Title")
	ctx := t.Context()
	w.tick(time.Second)
	must(t, w.s.Moderate(ctx, p, true), "hide")
	must(t, w.s.Moderate(ctx, p, true), "hide again")
	got := w.page(a)
	wantGroups(t, got, fmt.Sprintf("moderation:%d:1:[]:hidden", p))
	if got[0].Post == nil || got[0].Post.ID != p {
		t.Fatalf("the moderation group's post is %+v, want post %d (its author sees it)", got[0].Post, p)
	}
	w.tick(time.Second)
	must(t, w.s.Moderate(ctx, p, false), "restore")
	wantGroups(t, w.page(a), fmt.Sprintf("moderation:%d:1:[]:restored", p))
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread = %d, want 1", n)
	}
	wantGroups(t, w.page(u[1]))
}

func testNotifyCursor(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(3)
	a := u[0]
	const n = 9
	posts := make([]int64, n)
	for i := range posts {
		posts[i] = w.publish(a, fmt.Sprintf("post %d", i))
	}
	for _, p := range posts {
		w.like(u[1], p, true)
	}
	ctx := t.Context()
	seen := map[int64]int{}
	var after *feed.Cursor
	for pages := 0; ; pages++ {
		page, err := w.s.Notifications(ctx, a, after, 2)
		must(t, err, "Notifications")
		for _, v := range page.List {
			seen[v.ID]++
		}
		if pages == 1 {
			// Mid-scroll, a group already shown and one not yet shown
			// gain events: neither shows twice.
			w.like(u[2], page.List[0].PostID, true)
			w.like(u[2], posts[0], true)
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("group %d shown %d times in one scroll", id, k)
		}
	}
	if len(seen) != n-1 {
		t.Fatalf("%d groups seen, want %d (all but the one that moved up)", len(seen), n-1)
	}
	if all := w.page(a); len(all) != n || all[0].PostID != posts[0] || all[0].Count != 2 {
		t.Fatalf("after the scroll: %q; want %d groups, post %d's first with 2", describe(all), n, posts[0])
	}
	_, err := w.s.Notifications(ctx, a, nil, feed.MaxTimelineLimit+1)
	wantCode(t, err, feed.EINVALID, "a limit over the maximum")
}

func testNotifyUnread(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(4)
	a := u[0]
	ctx := t.Context()
	p := w.publish(a, "one")
	q := w.publish(a, "two")
	w.like(u[1], p, true)
	w.like(u[1], q, true)
	if n := w.unread(a); n != 2 {
		t.Fatalf("unread = %d, want 2", n)
	}
	first := w.page(a)[1] // p's group, the older
	must(t, w.s.MarkNotificationsRead(ctx, a, first.ID), "read up to a group")
	if n := w.unread(a); n != 1 {
		t.Fatalf("unread after reading up to the older group = %d, want 1", n)
	}
	w.tick(time.Second)
	must(t, w.s.MarkNotificationsRead(ctx, a, 0), "read all")
	if n := w.unread(a); n != 0 {
		t.Fatalf("unread after reading all = %d, want 0", n)
	}
	must(t, w.s.MarkNotificationsRead(ctx, a, first.ID), "read up to an older group (the marker stays)")
	if n := w.unread(a); n != 0 {
		t.Fatalf("unread after an older marker = %d, want 0", n)
	}
	for _, v := range w.page(a) {
		if v.Unread {
			t.Fatalf("group %d unread after reading all", v.ID)
		}
	}
	w.like(u[2], p, true) // a read group gains an event: unread again
	got := w.page(a)
	if n := w.unread(a); n != 1 || !got[0].Unread || got[0].PostID != p || got[1].Unread {
		t.Fatalf("unread = %d, groups %q %v/%v; want p's group first and alone unread", n, describe(got), got[0].Unread, got[1].Unread)
	}
	wantCode(t, w.s.MarkNotificationsRead(ctx, u[1], got[0].ID), feed.ENOTFOUND, "reading up to another user's group")
	// Dismissing.
	wantCode(t, w.s.DismissNotification(ctx, u[1], got[0].ID), feed.ENOTFOUND, "dismissing another user's group")
	b.Notices()
	must(t, w.s.DismissNotification(ctx, a, got[0].ID), "Dismiss")
	if ns := b.Notices(); len(ns) != 1 || ns[0] != (feed.Notice{UserID: a, GroupID: got[0].ID}) {
		t.Fatalf("notices of a dismissal: %+v", ns)
	}
	wantCode(t, w.s.DismissNotification(ctx, a, got[0].ID), feed.ENOTFOUND, "dismissing twice")
	wantGroups(t, w.page(a), describe(got[1:])...)
	if n := w.unread(a); n != 0 {
		t.Fatalf("unread after dismissing the unread group = %d, want 0", n)
	}
	// The next like of p opens a new group.
	w.like(u[3], p, true)
	wantGroups(t, w.page(a), append([]string{fmt.Sprintf("like:%d:1:[%d]", p, u[3])}, describe(got[1:])...)...)
}

func testNotifyRetention(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(2)
	a := u[0]
	posts := make([]int64, 5)
	for i := range posts {
		posts[i] = w.publish(a, fmt.Sprintf("post %d", i))
	}
	w.like(u[1], posts[0], true)
	w.tick(2 * time.Hour) // posts[0]'s group is past the retention
	if got := w.page(a); len(got) != 0 || w.unread(a) != 0 {
		t.Fatalf("groups past the retention: %q, unread %d; want none", describe(got), w.unread(a))
	}
	for _, p := range posts[1:] {
		w.like(u[1], p, true)
	}
	// Three kept, the newest.
	wantGroups(t, w.page(a),
		fmt.Sprintf("like:%d:1:[%d]", posts[4], u[1]),
		fmt.Sprintf("like:%d:1:[%d]", posts[3], u[1]),
		fmt.Sprintf("like:%d:1:[%d]", posts[2], u[1]))
	if n := w.unread(a); n != 3 {
		t.Fatalf("unread = %d, want 3", n)
	}
}

func testNotifyOff(t *testing.T, b *NotifyBackend) {
	w := newNotifyWorld(t, b)
	u := w.users(2)
	p := w.publish(u[0], "one")
	w.like(u[1], p, true)
	w.follow(u[1], u[0], true)
	wantGroups(t, w.page(u[0]))
	if ns := b.Notices(); len(ns) != 0 {
		t.Fatalf("notices with notifications off: %+v", ns)
	}
}
