package feedtest

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestHybrid runs property tests of the merged feed stream: the inbox
// merged with the outboxes of authors in pull mode, authors crossing
// between modes, mutes; read through the native keyset cursor under
// concurrent publishes into the cursor's millisecond, deletes and mode
// changes, and through the compatible cursor. The Backend must have Social
// and Outbox.
func TestHybrid(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("NativeCursor", func(t *testing.T) { testHybridNative(t, open(t)) })
	t.Run("CompatibleCursor", func(t *testing.T) { testHybridCompatible(t, open(t)) })
	t.Run("FeedViews", func(t *testing.T) { testFeedViews(t, open(t)) })
}

// hybrid is a world of authors in push and pull mode and one viewer.
type hybrid struct {
	t       testing.TB
	ctx     context.Context
	b       *Backend
	svc     *feed.Service
	r       *rand.Rand
	clock   atomic.Int64
	viewer  int64
	authors []int64 // the viewer follows all of them
	muted   int64   // an author the viewer follows and mutes

	mu      sync.Mutex
	posts   map[int64]*feed.Post
	deleted map[int64]bool
}

func newHybrid(t testing.TB, b *Backend) *hybrid {
	if b.Social == nil || b.Outbox == nil {
		t.Fatal("TestHybrid needs a Backend with Social and Outbox")
	}
	h := &hybrid{t: t, ctx: context.Background(), b: b, r: newRand(t), posts: map[int64]*feed.Post{}, deleted: map[int64]bool{}}
	h.clock.Store(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	h.svc = newService(b, &h.clock)
	h.svc.Social, h.svc.Outbox = b.Social, b.Outbox
	now := time.UnixMilli(h.clock.Load())
	ids := newUsers(t, b, 8, now)
	h.viewer, h.authors, h.muted = ids[0], ids[1:7], ids[7]
	var others []int64
	for i := 0; i < 3; i++ {
		others = append(others, newUser(t, b, 100+i, now).ID)
	}
	for _, a := range append(slices.Clone(h.authors), h.muted) {
		must(t, h.svc.Follow(h.ctx, h.viewer, a, true), "Follow")
		for _, o := range others {
			must(t, h.svc.Follow(h.ctx, o, a, true), "Follow")
		}
	}
	must(t, h.svc.Mute(h.ctx, h.viewer, h.muted, true), "Mute")
	// Authors 0 and 1 start in pull mode; the others in push mode.
	for _, a := range h.authors[:2] {
		must(t, b.Social.SetMode(h.ctx, a, feed.PullMode), "SetMode")
	}
	b.Jobs() // follow jobs: the graph exists before any post
	return h
}

func (h *hybrid) mode(author int64) feed.Mode {
	u, err := h.b.Users.User(h.ctx, author)
	must(h.t, err, "User")
	return u.Mode
}

// deliver does what the fan-out worker does for a post: outbox, the
// author's inbox, and the followers' inboxes unless the author is in pull
// mode.
func (h *hybrid) deliver(j feed.FanoutJob) {
	e := feed.Entry{PostID: j.PostID, Score: j.Score}
	must(h.t, h.b.Outbox.Add(h.ctx, j.AuthorID, e), "Outbox.Add")
	to := []int64{j.AuthorID}
	if h.mode(j.AuthorID) != feed.PullMode {
		var err error
		to, err = Audience(h.ctx, h.b.Follows, j.AuthorID)
		must(h.t, err, "Audience")
	}
	must(h.t, h.b.Inbox.Deliver(h.ctx, e, to), "Deliver")
}

func (h *hybrid) drain() {
	for _, j := range h.b.Jobs() {
		switch j := j.(type) {
		case feed.FanoutJob:
			h.deliver(j)
		case feed.RemoveJob:
			e := feed.Entry{PostID: j.PostID, Score: j.Score}
			must(h.t, h.b.Outbox.Remove(h.ctx, j.AuthorID, e), "Outbox.Remove")
			to, err := Audience(h.ctx, h.b.Follows, j.AuthorID)
			must(h.t, err, "Audience")
			must(h.t, h.b.Inbox.Remove(h.ctx, e, to), "Remove")
		}
	}
}

func (h *hybrid) publish(author int64) *feed.Post {
	p, err := h.svc.Publish(h.ctx, author, feed.PostInput{Title: "t", Content: "c"})
	must(h.t, err, "Publish")
	h.mu.Lock()
	h.posts[p.ID] = p
	h.mu.Unlock()
	h.drain()
	return p
}

func (h *hybrid) delete(id int64) {
	h.mu.Lock()
	p := h.posts[id]
	h.mu.Unlock()
	must(h.t, h.svc.DeletePost(h.ctx, p.UserID, id), "DeletePost")
	h.mu.Lock()
	h.deleted[id] = true // committed: a read that starts now must not see it
	h.mu.Unlock()
	h.drain()
}

// switchModes moves author 2 into pull mode and author 0 out of it (through
// LeavingPullMode, pushing their newest posts to the followers), as the
// follow jobs do when an audience crosses the threshold.
func (h *hybrid) switchModes() {
	must(h.t, h.b.Social.SetMode(h.ctx, h.authors[2], feed.PullMode), "SetMode")
	leaving := h.authors[0]
	must(h.t, h.b.Social.SetMode(h.ctx, leaving, feed.LeavingPullMode), "SetMode")
	es, err := h.b.Outbox.Entries(h.ctx, []int64{leaving}, feed.AtMost(math.MaxInt64), 200)
	must(h.t, err, "Outbox.Entries")
	to, err := Audience(h.ctx, h.b.Follows, leaving)
	must(h.t, err, "Audience")
	for _, e := range es {
		must(h.t, h.b.Inbox.Deliver(h.ctx, e, to), "Deliver")
	}
	must(h.t, h.b.Social.SetMode(h.ctx, leaving, feed.PushMode), "SetMode")
}

// publishBursts publishes n posts by random authors (the muted one too) in
// bursts sharing milliseconds, some larger than any page.
func (h *hybrid) publishBursts(n int) {
	all := append(slices.Clone(h.authors), h.muted)
	for made, burst := 0, 0; made < n; burst++ {
		h.clock.Add(1 + int64(h.r.IntN(2)))
		size := 1 + h.r.IntN(5)
		if burst%15 == 3 {
			size = 40 + h.r.IntN(40)
		}
		for i := 0; i < size && made < n; i, made = i+1, made+1 {
			h.publish(all[h.r.IntN(len(all))])
		}
	}
}

// expected returns the viewer's feed as it stands: visible, undeleted posts
// with score at most max, in feed order.
func (h *hybrid) expected(max int64) []feed.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []feed.Entry
	for id, p := range h.posts {
		if !h.deleted[id] && p.UserID != h.muted && p.Score() <= max {
			out = append(out, feed.Entry{PostID: id, Score: p.Score()})
		}
	}
	SortEntries(out)
	return out
}

func testHybridNative(t *testing.T, b *Backend) {
	h := newHybrid(t, b)
	h.publishBursts(sized(500))
	// The newest millisecond holds a tie group larger than the pages, and
	// the clock stays there: posts published during the scroll share the
	// cursor's millisecond.
	h.clock.Add(1)
	for i := 0; i < 60; i++ {
		h.publish(h.authors[3+i%3])
	}
	start := h.expected(math.MaxInt64)
	startSet := map[int64]bool{}
	for _, e := range start {
		startSet[e.PostID] = true
	}

	// A writer publishes into the cursor's millisecond, deletes seen and
	// unseen posts and switches modes while the viewer scrolls.
	var seenMu sync.Mutex
	seen := map[int64]bool{}
	var pages atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-writerDone
	}()
	wr := rand.New(rand.NewPCG(h.r.Uint64(), 7))
	h.t = goroutineTB{t} // the writer must not call FailNow on the test
	firstPage := make(chan struct{})
	go func() {
		defer close(writerDone)
		// The writer starts once the scroll has begun: posts published
		// from then on sort before the cursor (newer, or a larger id in the
		// cursor's millisecond) and must never be returned.
		select {
		case <-firstPage:
		case <-stop:
			return
		}
		switched := false
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch {
			case wr.IntN(3) == 0:
				h.publish(h.authors[wr.IntN(len(h.authors))])
			default:
				id := start[wr.IntN(len(start))].PostID
				h.mu.Lock()
				gone := h.deleted[id]
				h.mu.Unlock()
				if !gone {
					h.delete(id)
				}
			}
			if !switched && pages.Load() > 5 {
				h.switchModes()
				switched = true
			}
			time.Sleep(time.Duration(wr.IntN(300)) * time.Microsecond)
		}
	}()

	var got []feed.Entry
	var cur *feed.Cursor
	for req := 0; ; req++ {
		if req > 5000 {
			t.Fatal("the native scroll did not end")
		}
		limit := 1 + h.r.IntN(30)
		h.mu.Lock()
		deletedBefore := maps.Clone(h.deleted)
		h.mu.Unlock()
		page, err := h.svc.Timeline(h.ctx, h.viewer, cur, limit)
		must(t, err, "Timeline")
		if pages.Add(1) == 1 {
			close(firstPage)
		}
		if len(page.List) > limit {
			t.Fatalf("page of %d posts for limit %d", len(page.List), limit)
		}
		for _, v := range page.List {
			e := feed.Entry{PostID: v.ID, Score: v.Score()}
			if v.UserID == h.muted {
				t.Fatalf("post %d of a muted author", v.ID)
			}
			if deletedBefore[v.ID] {
				t.Fatalf("post %d returned after its delete", v.ID)
			}
			seenMu.Lock()
			if seen[v.ID] {
				t.Fatalf("post %d seen twice", v.ID)
			}
			seen[v.ID] = true
			seenMu.Unlock()
			if len(got) > 0 && !got[len(got)-1].Before(e) {
				t.Fatalf("out of order: %+v after %+v", e, got[len(got)-1])
			}
			got = append(got, e)
		}
		if page.Next == nil {
			break
		}
		if cur != nil && !cur.Before(*page.Next) {
			t.Fatalf("cursor did not move forward: %+v then %+v", *cur, *page.Next)
		}
		c := *page.Next
		cur = &c
	}
	close(stop)
	<-writerDone
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range start {
		if !seen[e.PostID] && !h.deleted[e.PostID] {
			t.Fatalf("post %+v existed at the start and was never deleted, but the scroll missed it (seen %d)", e, len(seen))
		}
	}
	for id := range seen {
		if !startSet[id] {
			// A post published during the scroll sorts before the cursor
			// (newer, or a larger id in the cursor's millisecond).
			t.Fatalf("post %d, published during the scroll, was returned", id)
		}
	}
}

// goroutineTB reports failures of a goroutine other than the test's: Errorf,
// then the goroutine ends (runtime.Goexit runs its deferred calls).
type goroutineTB struct{ testing.TB }

func (g goroutineTB) Fatalf(format string, args ...any) {
	g.TB.Errorf(format, args...)
	runtime.Goexit()
}

func (g goroutineTB) Fatal(args ...any) {
	g.TB.Error(args...)
	runtime.Goexit()
}

func testHybridCompatible(t *testing.T, b *Backend) {
	h := newHybrid(t, b)
	h.publishBursts(sized(400))
	h.switchModes()
	h.publishBursts(sized(200))
	// Deleted posts whose entries stay (skipped at read time).
	for _, e := range h.expected(math.MaxInt64)[:40] {
		h.mu.Lock()
		p := h.posts[e.PostID]
		h.deleted[e.PostID] = true
		h.mu.Unlock()
		must(t, h.svc.DeletePost(h.ctx, p.UserID, e.PostID), "DeletePost")
		h.b.Jobs() // removal jobs not run: the entries stay in inboxes and outboxes
	}
	start := h.clock.Load()
	want := h.expected(start)
	for run := 0; run < 4; run++ {
		var got []feed.Entry
		last, off := start+1, 0
		for req := 0; ; req++ {
			if req > 5000 {
				t.Fatal("the scroll did not end")
			}
			size := 1 + h.r.IntN(feed.MaxPageSize)
			res, err := h.svc.ScrollFeed(h.ctx, h.viewer, feed.ScrollCursor{LastID: last, Offset: off}, size)
			must(t, err, "ScrollFeed")
			if res == nil {
				break
			}
			for _, v := range res.List {
				got = append(got, feed.Entry{PostID: v.ID, Score: v.Score()})
			}
			last, off = res.MinTime, res.Offset
			// Publishing during the scroll lands above the cursor.
			if req%7 == 0 {
				h.clock.Add(1)
				h.publish(h.authors[h.r.IntN(len(h.authors))])
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: merged scroll differs:\n%s", run, diffEntries(got, want))
		}
		h.clock.Add(1)
		start = h.clock.Load()
		want = h.expected(start)
	}
}

// testFeedViews checks a store's one-query hydration (feed.FeedViewer)
// against the four calls it replaces, on posts deleted, muted, unfollowed,
// liked and not.
func testFeedViews(t *testing.T, b *Backend) {
	fv, ok := b.Posts.(feed.FeedViewer)
	if !ok {
		t.Skip("the store hydrates with separate calls")
	}
	h := newHybrid(t, b)
	h.publishBursts(120)
	stranger := newUser(t, b, 200, time.UnixMilli(h.clock.Load())).ID
	for i := 0; i < 5; i++ {
		h.publish(stranger)
	}
	var ids []int64
	h.mu.Lock()
	for id := range h.posts {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids[:30] {
		if h.r.IntN(2) == 0 {
			_, err := h.svc.ToggleLike(h.ctx, h.viewer, id)
			must(t, err, "ToggleLike")
		}
	}
	for _, id := range ids[30:40] {
		h.delete(id)
	}
	ids = append(ids, 999999999) // never existed
	got, err := fv.FeedViews(h.ctx, h.viewer, ids)
	must(t, err, "FeedViews")
	posts, err := b.Posts.Posts(h.ctx, ids)
	must(t, err, "Posts")
	var authors []int64
	for _, p := range posts {
		authors = append(authors, p.UserID)
	}
	visible, err := b.Social.Visible(h.ctx, h.viewer, authors)
	must(t, err, "Visible")
	liked, err := b.Posts.LikedBy(h.ctx, h.viewer, ids)
	must(t, err, "LikedBy")
	users, err := b.Users.Users(h.ctx, authors)
	must(t, err, "Users")
	want := 0
	for _, id := range ids {
		p := posts[id]
		v := got[id]
		if p == nil || !visible[p.UserID] {
			if v != nil {
				t.Fatalf("post %d returned but not in the viewer's feed", id)
			}
			continue
		}
		want++
		switch {
		case v == nil:
			t.Fatalf("post %d missing", id)
		case v.ID != p.ID || v.UserID != p.UserID || v.Title != p.Title || v.Content != p.Content || v.Images != p.Images ||
			v.ShopID != p.ShopID || v.Liked != p.Liked || !v.CreatedAt.Equal(p.CreatedAt) || !v.UpdatedAt.Equal(p.UpdatedAt):
			t.Fatalf("post %d: %+v, want %+v", id, *v.Post, *p)
		case v.IsLike != liked[id]:
			t.Fatalf("post %d: IsLike %v", id, v.IsLike)
		case v.Author == nil || v.Author.ID != p.UserID || v.Author.NickName != users[p.UserID].NickName || v.Author.Icon != users[p.UserID].Icon:
			t.Fatalf("post %d: author %+v", id, v.Author)
		}
	}
	if len(got) != want || want < 50 {
		t.Fatalf("%d views, want %d (of %d ids)", len(got), want, len(ids))
	}
}
