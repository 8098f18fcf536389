package feedtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// testShowReposts: show_reposts off hides one followee's reposts only
// (from placing posts and from who shared them), and on again brings them
// back; it is refused for a user not followed.
func testShowReposts(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	v, r0, r2 := w.viewer, w.rs[0], w.rs[2]
	p := w.publish(w.a[3])
	w.clock.Add(5)
	w.repost(r0, p.ID)
	w.clock.Add(5)
	w.repost(r2, p.ID)
	w.clock.Add(5)
	w.repost(w.rs[3], p.ID) // show_reposts off from the start
	w.wantShown(v, p.ID, w.repostEntry(r0, p.ID), "r0, r2 and r3 (hidden) reposted")
	if got := w.shown(v, p.ID).RepostedBy.Others; got != 1 {
		t.Fatalf("reposted by r0 and %d others, want 1 (r3's hidden)", got)
	}
	must(t, w.svc.SetShowReposts(w.ctx, v, r0, false), "SetShowReposts")
	w.hidden[[2]int64{v, r0}] = true
	w.wantShown(v, p.ID, w.repostEntry(r2, p.ID), "r0's reposts hidden")
	must(t, w.svc.SetShowReposts(w.ctx, v, r2, false), "SetShowReposts")
	w.hidden[[2]int64{v, r2}] = true
	w.wantShown(v, p.ID, feed.Entry{}, "r0's and r2's reposts hidden")
	// Their own posts stay.
	q := w.publish(r0)
	w.wantShown(v, q.ID, q.Entry(), "r0's own post, reposts hidden")
	must(t, w.svc.SetShowReposts(w.ctx, v, r0, true), "SetShowReposts")
	delete(w.hidden, [2]int64{v, r0})
	w.wantShown(v, p.ID, w.repostEntry(r0, p.ID), "r0's reposts shown again")
	wantCode(t, w.svc.SetShowReposts(w.ctx, v, w.a[3], false), feed.ENOTFOUND, "SetShowReposts of a user not followed")
	wantCode(t, w.svc.SetShowReposts(w.ctx, v, 0, false), feed.EINVALID, "SetShowReposts of id 0")
	// A new follow shows reposts.
	w.follow(v, w.rs[5])
	w.clock.Add(5)
	x := w.publish(w.a[4])
	w.clock.Add(5)
	w.repost(w.rs[5], x.ID)
	w.wantShown(v, x.ID, w.repostEntry(w.rs[5], x.ID), "a new followee's repost")
}

// testRepostBlocks: mutes and blocks apply to the reposter and to the
// post's author: a muted or blocked author's post is shown by no repost, a
// muted reposter's reposts place nothing; a block takes the blocked
// user's reposts of the blocker's posts with it (counts in step), and
// refuses new ones.
func testRepostBlocks(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	v, r0, r2 := w.viewer, w.rs[0], w.rs[2]
	// a5 blocks the viewer: its post is reposted by r0, shown nowhere.
	p5 := w.publish(w.a[5])
	w.clock.Add(5)
	w.repost(r0, p5.ID)
	w.wantShown(v, p5.ID, feed.Entry{}, "the author blocks the viewer")
	if w.repost(v, p5.ID) {
		t.Fatal("the viewer reposted the post of an author who blocks it")
	}
	// r4 is muted: its reposts place nothing and count for no one.
	p3 := w.publish(w.a[3])
	w.clock.Add(5)
	w.repost(w.rs[4], p3.ID)
	w.wantShown(v, p3.ID, feed.Entry{}, "reposted by a muted followee only")
	w.clock.Add(5)
	w.repost(r2, p3.ID)
	w.wantShown(v, p3.ID, w.repostEntry(r2, p3.ID), "reposted by a muted followee, then r2")
	if got := w.shown(v, p3.ID).RepostedBy; got.User.ID != r2 || got.Others != 0 {
		t.Fatalf("reposted by %+v, want r2 alone", got)
	}
	// The viewer mutes the author: gone from every place.
	must(t, w.svc.Mute(w.ctx, v, w.a[3], true), "Mute")
	w.mutes[[2]int64{v, w.a[3]}] = true
	w.wantShown(v, p3.ID, feed.Entry{}, "the author muted")
	must(t, w.svc.Mute(w.ctx, v, w.a[3], false), "Mute")
	delete(w.mutes, [2]int64{v, w.a[3]})
	w.wantShown(v, p3.ID, w.repostEntry(r2, p3.ID), "the author unmuted")
	// The viewer blocks the author.
	_, err := w.svc.Block(w.ctx, v, w.a[3], true)
	must(t, err, "Block")
	w.blocks[[2]int64{v, w.a[3]}] = true
	w.run()
	w.wantShown(v, p3.ID, feed.Entry{}, "the author blocked")
	_, err = w.svc.Block(w.ctx, v, w.a[3], false)
	must(t, err, "Unblock")
	delete(w.blocks, [2]int64{v, w.a[3]})
	// The viewer mutes the reposter.
	must(t, w.svc.Mute(w.ctx, v, r2, true), "Mute")
	w.mutes[[2]int64{v, r2}] = true
	w.wantShown(v, p3.ID, feed.Entry{}, "the only shown reposter muted")
	// An author blocks a reposter: the reposter's reposts of its posts go,
	// the count with them, and the reposter cannot repost them again.
	p0 := w.publish(w.a[0])
	w.clock.Add(5)
	w.repost(r0, p0.ID)
	w.repost(r2, p0.ID)
	gone := w.repostEntry(r0, p0.ID)
	if n := w.post(p0.ID).Reposts; n != 2 {
		t.Fatalf("reposts %d, want 2", n)
	}
	_, err = w.svc.Block(w.ctx, w.a[0], r0, true)
	must(t, err, "Block")
	delete(w.follows, [2]int64{w.a[0], r0})
	delete(w.reposts, [2]int64{r0, p0.ID})
	w.blocks[[2]int64{w.a[0], r0}] = true
	w.run()
	if n := w.post(p0.ID).Reposts; n != 1 {
		t.Fatalf("reposts %d after the block, want 1", n)
	}
	if w.repost(r0, p0.ID) {
		t.Fatal("a blocked user reposted the blocker's post")
	}
	inbox, err := w.b.Inbox.Page(w.ctx, v, feed.Top(), 0, 100_000)
	must(t, err, "Page")
	for _, e := range inbox {
		if e == gone {
			t.Fatalf("the removed repost's entry %v is still in the viewer's inbox after its removal job", e)
		}
	}
}

// post reads post id from the store.
func (w *rworld) post(id int64) *feed.Post {
	w.t.Helper()
	p, err := w.b.Posts.Post(w.ctx, id)
	must(w.t, err, "Post")
	return p
}

// testRepostTombstones: a deleted original takes every repost with it
// (timelines at once, the rows and inbox entries by its removal job); a
// hidden one hides its reposts until restored; a quote shows a tombstone
// in its place.
func testRepostTombstones(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	v, r0 := w.viewer, w.rs[0]
	p := w.publish(w.a[3])
	w.clock.Add(5)
	w.repost(r0, p.ID)
	w.repost(w.rs[2], p.ID)
	quote, err := w.svc.Publish(w.ctx, w.a[0], feed.PostInput{Title: "look", Content: "at this", QuoteOf: p.ID})
	must(t, err, "Publish quote")
	w.mu.Lock()
	w.posts[quote.ID] = quote
	w.mu.Unlock()
	w.run()
	if n := w.post(p.ID).Quotes; n != 1 {
		t.Fatalf("quotes %d, want 1", n)
	}
	qv := w.shown(v, quote.ID)
	if qv == nil || qv.Quote == nil || qv.Quote.State != feed.QuoteShown || qv.Quote.Post == nil || qv.Quote.Post.ID != p.ID || qv.Quote.Post.Author == nil {
		t.Fatalf("the quote in the timeline: %+v, want it with post %d embedded", qv, p.ID)
	}
	// Hidden by moderation: the reposts show nothing, the quote a tombstone.
	must(t, w.svc.Moderate(w.ctx, p.ID, true), "Moderate")
	if v := w.shown(v, p.ID); v != nil {
		t.Fatalf("a hidden post shown by a repost at %v", v.FeedEntry)
	}
	if q := w.shown(v, quote.ID).Quote; q.State != feed.QuoteUnavailable || q.Post != nil {
		t.Fatalf("quote of a hidden post: %+v, want an unavailable tombstone", q)
	}
	must(t, w.svc.Moderate(w.ctx, p.ID, false), "Moderate")
	w.wantShown(v, p.ID, w.repostEntry(r0, p.ID), "restored")
	// Deleted: gone at once; the removal job purges the reposts and their
	// entries.
	w.delete(p.ID)
	if v := w.shown(v, p.ID); v != nil {
		t.Fatalf("a deleted post shown by a repost at %v", v.FeedEntry)
	}
	q := w.shown(v, quote.ID).Quote
	if q.State != feed.QuoteDeleted || q.Post != nil || q.ID != p.ID {
		t.Fatalf("quote of a deleted post: %+v, want a deleted tombstone of %d", q, p.ID)
	}
	sh, err := w.b.Reposts.Sharers(w.ctx, v, []int64{p.ID})
	must(t, err, "Sharers")
	if len(sh) != 0 {
		t.Fatalf("reposts of a deleted post after its removal job: %+v", sh)
	}
	for _, u := range []int64{v, r0, w.a[0]} {
		es, err := w.b.Inbox.Page(w.ctx, u, feed.Top(), 0, 1000)
		must(t, err, "Page")
		ids := postIDsOf(es)
		reps, err := w.b.Reposts.Reposts(w.ctx, ids)
		must(t, err, "Reposts")
		for _, r := range reps {
			if r.PostID == p.ID {
				t.Fatalf("user %d's inbox holds repost %+v of a deleted post", u, r)
			}
		}
	}
	// A quote of a quote shows one level: the quoted quote, its own quote
	// by id only.
	w.clock.Add(5)
	qq, err := w.svc.Publish(w.ctx, w.a[1], feed.PostInput{Title: "and", Content: "this", QuoteOf: quote.ID})
	must(t, err, "Publish quote of a quote")
	w.mu.Lock()
	w.posts[qq.ID] = qq
	w.mu.Unlock()
	w.run()
	pv, err := w.svc.Post(w.ctx, v, qq.ID)
	must(t, err, "Post")
	if pv.Quote == nil || pv.Quote.Post == nil || pv.Quote.Post.ID != quote.ID || pv.Quote.Post.QuoteOf != p.ID {
		t.Fatalf("quote of a quote: %+v", pv.Quote)
	}
	// Deleting the quote moves the count of the quoted post.
	w.delete(qq.ID)
	if n := w.post(quote.ID).Quotes; n != 0 {
		t.Fatalf("quotes %d after the quote was deleted, want 0", n)
	}
	// Quoting a post that is gone or not shown is refused.
	_, err = w.svc.Publish(w.ctx, w.a[0], feed.PostInput{Title: "t", Content: "c", QuoteOf: p.ID})
	wantCode(t, err, feed.ENOTFOUND, "quote of a deleted post")
	p5 := w.publish(w.a[5])
	_, err = w.svc.Publish(w.ctx, v, feed.PostInput{Title: "t", Content: "c", QuoteOf: p5.ID})
	wantCode(t, err, feed.ENOTFOUND, "quote of a post whose author blocks the quoter")
	_, err = w.svc.Publish(w.ctx, v, feed.PostInput{Title: "t", Content: "c", QuoteOf: -1})
	wantCode(t, err, feed.EINVALID, "quote_of -1")
}

// newClock is a service clock set to now.
func newClock(now time.Time) *atomic.Int64 {
	c := &atomic.Int64{}
	c.Store(now.UnixMilli())
	return c
}

func postIDsOf(es []feed.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.PostID
	}
	return out
}

// testRepostRebuild: an inbox rebuilt from the source of truth holds the
// reposts fan-out delivered (those of pull-mode reposters left to the
// merge), so the timeline reads the same.
func testRepostRebuild(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	w.fill(120)
	v := w.viewer
	before := w.whole(v)
	must(t, w.b.Inbox.Trim(w.ctx, v, 0), "Trim")
	if got := w.whole(v); len(got) >= len(before) {
		t.Fatalf("after a trim to nothing the timeline holds %d posts (before: %d)", len(got), len(before))
	}
	must(t, w.svc.RebuildInbox(w.ctx, v), "RebuildInbox")
	after := w.whole(v)
	if len(after) != len(before) {
		t.Fatalf("rebuilt timeline holds %d posts, want %d", len(after), len(before))
	}
	for i := range after {
		if after[i].ID != before[i].ID || after[i].FeedEntry != before[i].FeedEntry {
			t.Fatalf("rebuilt timeline differs at %d: post %d at %v, want post %d at %v", i, after[i].ID, after[i].FeedEntry, before[i].ID, before[i].FeedEntry)
		}
	}
	reposted := 0
	for _, view := range after {
		if view.FeedEntry.PostID != view.ID {
			reposted++
		}
	}
	if reposted == 0 {
		t.Fatal("no post placed by a repost: the data does not exercise the rebuild of reposts")
	}
}

// testRepostCounts: counts stay exact under 200 concurrent reposts of one
// post, concurrent repeats and undos, and concurrent quotes; each repost
// made enqueues one delivery and each undo one removal.
func testRepostCounts(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	svc := newService(b, newClock(now))
	author := newUser(t, b, 1, now).ID
	p, err := svc.Publish(ctx, author, feed.PostInput{Title: "viral", Content: "share me"})
	must(t, err, "Publish")
	b.Jobs()
	const n = 200
	users := make([]int64, n)
	for i := range users {
		users[i] = newUser(t, b, 100+i, now).ID
	}
	concurrently := func(f func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				if err := f(i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	count := func() (fan, rm int) {
		for _, j := range b.Jobs() {
			switch j.(type) {
			case feed.FanoutJob:
				fan++
			case feed.RemoveJob:
				rm++
			}
		}
		return fan, rm
	}
	reposts := func() int {
		q, err := b.Posts.Post(ctx, p.ID)
		must(t, err, "Post")
		return q.Reposts
	}
	concurrently(func(i int) error { return svc.Repost(ctx, users[i], p.ID, true) })
	if got := reposts(); got != n {
		t.Fatalf("%d concurrent reposts: count %d", n, got)
	}
	if fan, rm := count(); fan != n || rm != 0 {
		t.Fatalf("%d reposts enqueued %d deliveries and %d removals", n, fan, rm)
	}
	// Who shared it, for a reader who follows 3 of the 200 (and so is
	// counted from its follows, the smaller side), then reposts it too.
	reader := newUser(t, b, 99, now).ID
	followed := []int64{users[10], users[20], users[30]}
	for _, u := range followed {
		must(t, svc.Follow(ctx, reader, u, true), "Follow")
	}
	for _, mine := range []bool{false, true} {
		if mine {
			must(t, svc.Repost(ctx, reader, p.ID, true), "Repost")
			count()
		}
		sh, err := b.Reposts.Sharers(ctx, reader, []int64{p.ID})
		must(t, err, "Sharers")
		want := 3
		if mine {
			want = 4
		}
		if s := sh[p.ID]; s == nil || s.Count != want || s.Viewer != mine || s.FirstUser == nil ||
			!slices.Contains(append(followed, reader), s.First.UserID) || s.FirstUser.ID != s.First.UserID {
			t.Fatalf("sharers of a post reposted %d times, for a reader following 3 of them (its own repost %v): %+v", n, mine, s)
		}
	}
	must(t, svc.Repost(ctx, reader, p.ID, false), "Repost undo")
	count()
	// Everyone reposts again (nothing changes) while the even ones undo,
	// twice each, at once.
	concurrently(func(i int) error {
		if err := svc.Repost(ctx, users[i], p.ID, true); err != nil {
			return err
		}
		if i%2 == 0 {
			for range 2 {
				if err := svc.Repost(ctx, users[i], p.ID, false); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if got := reposts(); got != n/2 {
		t.Fatalf("after %d undos: count %d, want %d", n/2, got, n/2)
	}
	if fan, rm := count(); fan != 0 || rm != n/2 {
		t.Fatalf("repeats and %d undos enqueued %d deliveries and %d removals", n/2, fan, rm)
	}
	concurrently(func(i int) error {
		if i >= 50 {
			return nil
		}
		_, err := svc.Publish(ctx, users[i], feed.PostInput{Title: "quote", Content: fmt.Sprint(i), QuoteOf: p.ID})
		return err
	})
	q, err := b.Posts.Post(ctx, p.ID)
	must(t, err, "Post")
	if q.Quotes != 50 || q.Reposts != n/2 {
		t.Fatalf("after 50 concurrent quotes: quotes %d reposts %d, want 50 and %d", q.Quotes, q.Reposts, n/2)
	}
	view, err := svc.Post(ctx, users[1], p.ID)
	must(t, err, "Post")
	if !view.Reposted || view.Reposts != n/2 || view.Quotes != 50 {
		t.Fatalf("post as a reposter sees it: reposted %v, %d reposts, %d quotes", view.Reposted, view.Reposts, view.Quotes)
	}
	wantCode(t, svc.Repost(ctx, users[0], p.ID+1_000_000, true), feed.ENOTFOUND, "repost of no post")
	wantCode(t, svc.Repost(ctx, users[0], 0, true), feed.EINVALID, "repost of id 0")
}

// testQuotePolicy: the author decides who may quote (everyone, the people
// the author follows, nobody but the author) and may change it; nobody
// else may.
func testQuotePolicy(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	svc := newService(b, newClock(now))
	ids := newUsers(t, b, 3, now)
	author, friend, stranger := ids[0], ids[1], ids[2]
	must(t, svc.Follow(ctx, author, friend, true), "Follow")
	p, err := svc.Publish(ctx, author, feed.PostInput{Title: "mine", Content: "x", QuotePolicy: feed.QuotesNobody})
	must(t, err, "Publish")
	quote := func(u int64) error {
		_, err := svc.Publish(ctx, u, feed.PostInput{Title: "q", Content: "q", QuoteOf: p.ID})
		return err
	}
	if err := quote(friend); err != feed.ErrQuotesOff {
		t.Fatalf("quote with quoting off: %v, want ErrQuotesOff", err)
	}
	must(t, quote(author), "the author quotes its own post")
	_, err = svc.SetQuotePolicy(ctx, friend, p.ID, feed.QuotesEveryone)
	wantCode(t, err, feed.EFORBIDDEN, "SetQuotePolicy by another user")
	v, err := svc.SetQuotePolicy(ctx, author, p.ID, feed.QuotesFollowing)
	must(t, err, "SetQuotePolicy")
	if v.QuotePolicy != feed.QuotesFollowing {
		t.Fatalf("policy %v after SetQuotePolicy(following)", v.QuotePolicy)
	}
	must(t, quote(friend), "a quote by someone the author follows")
	if err := quote(stranger); err != feed.ErrQuotesFollowing {
		t.Fatalf("quote by a stranger under following: %v, want ErrQuotesFollowing", err)
	}
	_, err = svc.SetQuotePolicy(ctx, author, p.ID, feed.QuotesEveryone)
	must(t, err, "SetQuotePolicy")
	must(t, quote(stranger), "a quote by anyone")
	_, err = svc.Publish(ctx, author, feed.PostInput{Title: "t", Content: "c", QuotePolicy: 7})
	wantCode(t, err, feed.EINVALID, "quote policy 7")
	_, err = svc.SetQuotePolicy(ctx, author, p.ID+1_000_000, feed.QuotesEveryone)
	wantCode(t, err, feed.ENOTFOUND, "SetQuotePolicy of no post")
	if got, err := b.Posts.Post(ctx, p.ID); err != nil || got.Quotes != 3 {
		t.Fatalf("quotes %v (%v), want 3", got, err)
	}
}

// TestRepostNotifications runs the contract of the repost and quote
// notifications: reposts of a post group ("Ana and 2 others reposted
// your post"), under the told-once rule (an undo and a repost again
// within the renotify window count once: the group is shown again, with
// nothing new); each quote
// is a group of its own whose post is the quote; one's own repost or quote
// tells nobody; a deleted post takes its repost groups, a deleted quote its
// quote group.
func TestRepostNotifications(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	b := open(t, feed.NotifySettings{})
	w := newNotifyWorld(t, b)
	ctx := t.Context()
	u := w.users(4)
	a, bo, cy, di := u[0], u[1], u[2], u[3]
	p := w.publish(a, "Title")
	repost := func(user int64, on bool) {
		t.Helper()
		w.tick(time.Second)
		must(t, w.s.Repost(ctx, user, p, on), fmt.Sprintf("Repost(%d, %v)", user, on))
		w.b.Jobs()
	}
	b.Notices()
	repost(bo, true)
	repost(cy, true)
	repost(di, true)
	repost(a, true) // one's own: nobody is told
	wantGroups(t, w.page(a), fmt.Sprintf("repost:%d:3:[%d %d %d]", p, di, cy, bo))
	if n := len(b.Notices()); n != 3 {
		t.Fatalf("3 reposts sent %d notices", n)
	}
	repost(cy, false)
	wantGroups(t, w.page(a), fmt.Sprintf("repost:%d:2:[%d %d]", p, di, bo))
	b.Notices()
	repost(cy, true) // again within the renotify window: counts once, no news
	wantGroups(t, w.page(a), fmt.Sprintf("repost:%d:3:[%d %d %d]", p, di, cy, bo))
	// The group is shown again as it was: one notice to its owner (the
	// rule of likes, feedtest.TestNotify), nothing new.
	if ns := b.Notices(); len(ns) != 1 || ns[0].UserID != a {
		t.Fatalf("a repost undone and made again sent notices %v, want the group shown again to %d", ns, a)
	}
	// Quotes: each its own group, the quote its post.
	w.tick(time.Second)
	q, err := w.s.Publish(ctx, bo, feed.PostInput{Title: "Look", Content: "at this", QuoteOf: p})
	must(t, err, "Publish quote")
	w.b.Jobs()
	got := w.page(a)
	wantGroups(t, got, fmt.Sprintf("quote:%d:1:[%d]", q.ID, bo), fmt.Sprintf("repost:%d:3:[%d %d %d]", p, di, cy, bo))
	if got[0].Post == nil || got[0].Post.ID != q.ID || got[0].Post.Quote == nil || got[0].Post.Quote.Post == nil || got[0].Post.Quote.Post.ID != p {
		t.Fatalf("quote group's post %+v: want the quote, embedding post %d", got[0].Post, p)
	}
	_, err = w.s.Publish(ctx, a, feed.PostInput{Title: "Mine", Content: "again", QuoteOf: p})
	must(t, err, "Publish own quote")
	w.b.Jobs()
	if n := len(w.page(a)); n != 2 {
		t.Fatalf("one's own quote made a group: %d groups", n)
	}
	must(t, w.s.DeletePost(ctx, bo, q.ID), "DeletePost of the quote")
	w.b.Jobs()
	wantGroups(t, w.page(a), fmt.Sprintf("repost:%d:3:[%d %d %d]", p, di, cy, bo))
	must(t, w.s.DeletePost(ctx, a, p), "DeletePost")
	w.b.Jobs()
	wantGroups(t, w.page(a))
}

// testRepostRanked: the ranked timeline ranks each post once, at its
// place, reposted posts among them, with its rank.
func testRepostRanked(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	w.fill(80)
	v := w.viewer
	chrono := map[int64]feed.Entry{}
	byRepost := 0
	// Reposts until one places a post in the viewer's timeline (most
	// reposts are of posts it holds already).
	for range 500 {
		clear(chrono)
		byRepost = 0
		for _, view := range w.whole(v) {
			chrono[view.ID] = view.FeedEntry
			if view.FeedEntry.PostID != view.ID {
				byRepost++
			}
		}
		if byRepost > 0 {
			break
		}
		w.tick()
		w.mutate(w.r, 1, 0)
	}
	seen := map[int64]bool{}
	reposted := 0
	var after *rank.Cursor
	for range 100 {
		page, err := w.svc.RankedTimeline(w.ctx, v, after, 7)
		must(t, err, "RankedTimeline")
		for _, view := range page.List {
			switch e, ok := chrono[view.ID]; {
			case seen[view.ID]:
				t.Fatalf("post %d twice in the ranked timeline", view.ID)
			case !ok || e != view.FeedEntry:
				t.Fatalf("post %d ranked at entry %v, its place in the timeline is %v (%v)", view.ID, view.FeedEntry, e, ok)
			case view.Rank == nil:
				t.Fatalf("post %d ranked without its rank", view.ID)
			}
			seen[view.ID] = true
			if view.FeedEntry.PostID != view.ID {
				reposted++
			}
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	if byRepost == 0 || reposted != byRepost || len(seen) < min(len(chrono), 100) {
		t.Fatalf("the ranked timeline showed %d posts (%d placed by reposts) of %d (%d placed by reposts)", len(seen), reposted, len(chrono), byRepost)
	}
}
