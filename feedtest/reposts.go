package feedtest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestReposts runs the contract of reposts and quotes on the backend
// (feed.RepostStore with feed.Service): randomized scrolls of a timeline
// whose posts arrive by their authors' entries and by reposts, through
// both cursors, while posts are published, reposted, unreposted and
// deleted, with authors and reposters in push and pull mode; then
// show_reposts, blocks and mutes on both sides, tombstones, a rebuilt
// inbox, counts under concurrency and quote policies. The Backend must
// have Reposts, Social and Outbox.
func TestReposts(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("Scroll", func(t *testing.T) { testRepostScroll(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testRepostScrollConcurrent(t, open(t)) })
	t.Run("Undo", func(t *testing.T) { testRepostUndo(t, open(t)) })
	t.Run("ShowReposts", func(t *testing.T) { testShowReposts(t, open(t)) })
	t.Run("BlocksAndMutes", func(t *testing.T) { testRepostBlocks(t, open(t)) })
	t.Run("Tombstones", func(t *testing.T) { testRepostTombstones(t, open(t)) })
	t.Run("Rebuild", func(t *testing.T) { testRepostRebuild(t, open(t)) })
	t.Run("Ranked", func(t *testing.T) { testRepostRanked(t, open(t)) })
	t.Run("Counts", func(t *testing.T) { testRepostCounts(t, open(t)) })
	t.Run("QuotePolicy", func(t *testing.T) { testQuotePolicy(t, open(t)) })
}

// rworld is a backend with users, follows, posts and reposts, and the
// test's own record of them, from which every timeline follows (place).
// The viewer follows a0-a2 (a1 in pull mode) and r0-r4 (r1 in pull mode,
// r3 with show_reposts off, r4 muted); a3, a4 and r5 it does not follow;
// a5 blocks it.
type rworld struct {
	t     testing.TB
	ctx   context.Context
	b     *Backend
	svc   *feed.Service
	r     *rand.Rand
	clock atomic.Int64

	viewer int64
	a, rs  []int64 // authors and reposters (reposters post too)
	all    []int64 // everyone, the viewer included

	mu      sync.Mutex
	follows map[[2]int64]bool // (follower, followee)
	hidden  map[[2]int64]bool // (follower, followee) with show_reposts off
	mutes   map[[2]int64]bool
	blocks  map[[2]int64]bool         // (blocker, blocked)
	posts   map[int64]*feed.Post      // every post published
	deleted map[int64]bool            // posts deleted
	reposts map[[2]int64]feed.Repost  // (user, post): standing reposts
	hold    func(feed.RemoveJob) bool // removals held back (nil: none)
	held    []feed.RemoveJob          // those removals
	modes   map[int64]feed.Mode       // users not in push mode
	live    []int64                   // posts not deleted, in publishing order
	names   map[int64]string          // users' nick names
}

func newRWorld(t testing.TB, b *Backend, r *rand.Rand) *rworld {
	if b.Reposts == nil || b.Social == nil || b.Outbox == nil {
		t.Fatal("TestReposts needs a Backend with Reposts, Social and Outbox")
	}
	w := &rworld{t: t, ctx: context.Background(), b: b, r: r,
		follows: map[[2]int64]bool{}, hidden: map[[2]int64]bool{}, mutes: map[[2]int64]bool{}, blocks: map[[2]int64]bool{},
		posts: map[int64]*feed.Post{}, deleted: map[int64]bool{}, reposts: map[[2]int64]feed.Repost{}, modes: map[int64]feed.Mode{},
		names: map[int64]string{}}
	w.svc = newService(b, &w.clock)
	w.clock.Store(time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	now := time.UnixMilli(w.clock.Load())
	ids := newUsers(t, b, 13, now)
	for i, id := range ids {
		w.names[id] = fmt.Sprintf("user_%d", 1000+i)
	}
	w.viewer, w.a, w.rs, w.all = ids[0], ids[1:7], ids[7:13], ids
	v := w.viewer
	w.follow(v, w.a[0], w.a[1], w.a[2], w.rs[0], w.rs[1], w.rs[2], w.rs[3], w.rs[4])
	// Others follow too: reposts and posts reach more than one inbox, and
	// r0 follows a3, whose posts it passes on to the viewer.
	w.follow(w.rs[0], w.a[3], w.a[0])
	w.follow(w.rs[5], w.viewer, w.a[4])
	w.follow(w.a[0], w.rs[0], w.rs[1])
	must(t, w.svc.SetShowReposts(w.ctx, v, w.rs[3], false), "SetShowReposts")
	w.hidden[[2]int64{v, w.rs[3]}] = true
	must(t, w.svc.Mute(w.ctx, v, w.rs[4], true), "Mute")
	w.mutes[[2]int64{v, w.rs[4]}] = true
	_, err := w.svc.Block(w.ctx, w.a[5], v, true)
	must(t, err, "Block")
	w.blocks[[2]int64{w.a[5], v}] = true
	for _, u := range []int64{w.a[1], w.rs[1]} {
		must(t, b.Social.SetMode(w.ctx, u, feed.PullMode), "SetMode")
		w.modes[u] = feed.PullMode
	}
	b.Jobs() // follow jobs: the graph exists before any post
	return w
}

func (w *rworld) follow(x int64, ys ...int64) {
	for _, y := range ys {
		must(w.t, w.svc.Follow(w.ctx, x, y, true), "Follow")
		w.follows[[2]int64{x, y}] = true
	}
}

// run does what the fan-out workers do with the pending jobs (and those
// they make): a post or repost entry goes to its author's outbox and inbox
// and, unless the author is in pull mode, to every follower's inbox; a
// removal purges a deleted post's reposts and removes the entry, unless
// hold keeps it for later (release).
func (w *rworld) run() {
	w.t.Helper()
	for {
		jobs := w.b.Jobs()
		if len(jobs) == 0 {
			return
		}
		for _, j := range jobs {
			switch j := j.(type) {
			case feed.FanoutJob:
				e := feed.Entry{PostID: j.PostID, Score: j.Score}
				w.record(j)
				must(w.t, w.b.Outbox.Add(w.ctx, j.AuthorID, e), "Outbox.Add")
				to := []int64{j.AuthorID}
				w.mu.Lock()
				pull := w.modes[j.AuthorID] == feed.PullMode
				w.mu.Unlock()
				if !pull {
					var err error
					to, err = Audience(w.ctx, w.b.Follows, j.AuthorID)
					must(w.t, err, "Audience")
				}
				must(w.t, w.b.Inbox.Deliver(w.ctx, e, to), "Deliver")
			case feed.RemoveJob:
				for {
					n, err := w.b.Reposts.PurgeReposts(w.ctx, j.PostID, feed.PurgeRepostBatch)
					must(w.t, err, "PurgeReposts")
					if n < feed.PurgeRepostBatch {
						break
					}
				}
				w.mu.Lock()
				hold := w.hold != nil && w.hold(j)
				if hold {
					w.held = append(w.held, j)
				}
				w.mu.Unlock()
				if !hold {
					w.remove(j)
				}
			case feed.FollowJob:
			default:
				w.t.Fatalf("unexpected job %#v", j)
			}
		}
	}
}

func (w *rworld) remove(j feed.RemoveJob) {
	e := feed.Entry{PostID: j.PostID, Score: j.Score}
	must(w.t, w.b.Outbox.Remove(w.ctx, j.AuthorID, e), "Outbox.Remove")
	to, err := Audience(w.ctx, w.b.Follows, j.AuthorID)
	must(w.t, err, "Audience")
	must(w.t, w.b.Inbox.Remove(w.ctx, e, to), "Remove")
}

// release applies the held removals that hold now lets through.
func (w *rworld) release() {
	w.mu.Lock()
	var now []feed.RemoveJob
	rest := w.held[:0]
	for _, j := range w.held {
		if w.hold != nil && w.hold(j) {
			rest = append(rest, j)
		} else {
			now = append(now, j)
		}
	}
	w.held = rest
	w.mu.Unlock()
	for _, j := range now {
		w.remove(j)
	}
}

// tick moves the clock 0 to 2 ms: entries often share a millisecond.
func (w *rworld) tick() { w.clock.Add(int64(w.r.IntN(3))) }

func (w *rworld) publish(author int64) *feed.Post {
	w.t.Helper()
	p, err := w.svc.Publish(w.ctx, author, feed.PostInput{Title: fmt.Sprintf("post of %d", author), Content: "hello"})
	must(w.t, err, "Publish")
	w.mu.Lock()
	w.posts[p.ID] = p
	w.live = append(w.live, p.ID)
	w.mu.Unlock()
	w.run()
	return p
}

// record notes the repost whose entry j delivers (j.PostID is no post's).
func (w *rworld) record(j feed.FanoutJob) {
	w.mu.Lock()
	_, isPost := w.posts[j.PostID]
	w.mu.Unlock()
	if isPost {
		return
	}
	reps, err := w.b.Reposts.Reposts(w.ctx, []int64{j.PostID})
	must(w.t, err, "Reposts")
	r := reps[j.PostID]
	if r == nil { // undone already
		return
	}
	if r.UserID != j.AuthorID || r.CreatedAt.UnixMilli() != j.Score {
		w.t.Fatalf("fan-out job %+v does not match its repost %+v", j, r)
	}
	w.mu.Lock()
	if !w.deleted[r.PostID] {
		w.reposts[[2]int64{r.UserID, r.PostID}] = *r
	}
	w.mu.Unlock()
}

// repost makes user repost post id and runs the jobs; false when the
// service refuses (ENOTFOUND: the post is gone, or its author blocks
// user).
func (w *rworld) repost(user, id int64) bool {
	w.t.Helper()
	err := w.svc.Repost(w.ctx, user, id, true)
	if feed.ErrorCode(err) == feed.ENOTFOUND {
		return false
	}
	must(w.t, err, "Repost")
	w.run()
	return true
}

func (w *rworld) unrepost(user, id int64) {
	w.t.Helper()
	err := w.svc.Repost(w.ctx, user, id, false)
	if feed.ErrorCode(err) != feed.ENOTFOUND {
		must(w.t, err, "Unrepost")
	}
	w.mu.Lock()
	delete(w.reposts, [2]int64{user, id})
	w.mu.Unlock()
	w.run()
}

func (w *rworld) delete(id int64) {
	w.t.Helper()
	w.mu.Lock()
	p := w.posts[id]
	w.mu.Unlock()
	must(w.t, w.svc.DeletePost(w.ctx, p.UserID, id), "DeletePost")
	w.mu.Lock()
	w.deleted[id] = true
	w.live = slices.DeleteFunc(w.live, func(x int64) bool { return x == id })
	for k := range w.reposts {
		if k[1] == id {
			delete(w.reposts, k)
		}
	}
	w.mu.Unlock()
	w.run()
}

// shownReposts are the reposts of post id the viewer is shown, earliest
// first: its own, and those of users it follows with show_reposts on and
// does not mute. w.mu is held.
func (w *rworld) shownReposts(viewer, id int64) []feed.Repost {
	var out []feed.Repost
	for k, r := range w.reposts {
		u := k[0]
		if k[1] != id {
			continue
		}
		if u == viewer || (w.follows[[2]int64{viewer, u}] && !w.hidden[[2]int64{viewer, u}] && !w.mutes[[2]int64{viewer, u}]) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b feed.Repost) int { return b.Entry().Compare(a.Entry()) })
	return out
}

// place is the entry that places post id in viewer's timeline (ok false:
// none), by the rule of docs/architecture.md, "Reposts: each post once".
func (w *rworld) place(viewer, id int64) (feed.Entry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.placeLocked(viewer, id)
}

func (w *rworld) placeLocked(viewer, id int64) (feed.Entry, bool) {
	p := w.posts[id]
	if p == nil || w.deleted[id] {
		return feed.Entry{}, false
	}
	a := p.UserID
	if w.mutes[[2]int64{viewer, a}] || w.blocks[[2]int64{viewer, a}] || w.blocks[[2]int64{a, viewer}] {
		return feed.Entry{}, false
	}
	if a == viewer || w.follows[[2]int64{viewer, a}] {
		return p.Entry(), true
	}
	if rs := w.shownReposts(viewer, id); len(rs) > 0 {
		return rs[0].Entry(), true
	}
	return feed.Entry{}, false
}

// timeline is viewer's timeline up to score max: each placed post, by its
// placement, in feed order.
func (w *rworld) timeline(viewer, max int64) map[int64]feed.Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int64]feed.Entry{}
	for id := range w.posts {
		if e, ok := w.placeLocked(viewer, id); ok && e.Score <= max {
			out[id] = e
		}
	}
	return out
}

// checkView checks a view of viewer's timeline against the record: its
// entry is the post's placement now, its post and who reposted it.
func (w *rworld) checkView(viewer int64, v feed.PostView) error {
	e, ok := w.place(viewer, v.ID)
	switch {
	case !ok:
		return fmt.Errorf("post %d (entry %v) is in no place in the timeline", v.ID, v.FeedEntry)
	case e != v.FeedEntry:
		return fmt.Errorf("post %d shown at entry %v, its place is %v", v.ID, v.FeedEntry, e)
	}
	w.mu.Lock()
	p := w.posts[v.ID]
	rs := w.shownReposts(viewer, v.ID)
	_, mine := w.reposts[[2]int64{viewer, v.ID}]
	w.mu.Unlock()
	switch {
	case v.UserID != p.UserID || v.Title != p.Title || v.Score() != p.Score():
		return fmt.Errorf("post %d = %+v, want %+v", v.ID, v.Post, p)
	case v.Author == nil || v.Author.ID != p.UserID:
		return fmt.Errorf("post %d hydrated with author %+v, want user %d", v.ID, v.Author, p.UserID)
	case v.Reposted != mine:
		return fmt.Errorf("post %d: Reposted %v, want %v", v.ID, v.Reposted, mine)
	case len(rs) == 0 && v.RepostedBy != nil:
		return fmt.Errorf("post %d: reposted by %+v, want nobody", v.ID, v.RepostedBy)
	case len(rs) > 0 && (v.RepostedBy == nil || v.RepostedBy.User == nil || v.RepostedBy.User.ID != rs[0].UserID ||
		v.RepostedBy.User.NickName != w.names[rs[0].UserID] || v.RepostedBy.Others != len(rs)-1 || !v.RepostedBy.At.Equal(rs[0].CreatedAt)):
		return fmt.Errorf("post %d: reposted by %+v, want user %d and %d others at %v", v.ID, v.RepostedBy, rs[0].UserID, len(rs)-1, rs[0].CreatedAt)
	}
	return nil
}

// fill publishes n posts and makes about as many reposts, with undos and
// deletes among them, before any scroll.
func (w *rworld) fill(n int) {
	for range n {
		w.tick()
		w.publish(w.all[w.r.IntN(len(w.all))])
		for range w.r.IntN(3) {
			w.tick()
			w.mutate(w.r, 0.7, 0.15)
		}
	}
}

// mutate does one random change drawn from r: a repost (with probability
// pr), an undo (pu), a delete or a post.
func (w *rworld) mutate(r *rand.Rand, pr, pu float64) {
	x := r.Float64()
	w.mu.Lock()
	live := slices.Clone(w.live)
	var standing [][2]int64
	for k := range w.reposts {
		standing = append(standing, k)
	}
	w.mu.Unlock()
	slices.SortFunc(standing, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	switch {
	case x < pr && len(live) > 0:
		// Reposts favour a few posts, so that posts gather several.
		id := live[len(live)-1-min(len(live)-1, int(r.ExpFloat64()*20))]
		w.repost(w.all[r.IntN(len(w.all))], id)
	case x < pr+pu && len(standing) > 0:
		k := standing[r.IntN(len(standing))]
		w.unrepost(k[0], k[1])
	case x < pr+pu+0.05 && len(live) > 0:
		w.delete(live[r.IntN(len(live))])
	default:
		w.publish(w.all[r.IntN(len(w.all))])
	}
}

// scrollOnce scrolls the viewer's timeline from the top to its end with
// the native cursor (native) or the compatible one, calling between after
// each page, and checks every view (checkView: each post once, at its
// place), the feed order, and that every post placed at the start whose
// place did not change meanwhile was seen.
func (w *rworld) scrollOnce(native bool, between func()) {
	w.t.Helper()
	v := w.viewer
	start := w.clock.Load()
	want := w.timeline(v, start)
	seen := map[int64]bool{}
	var last *feed.Entry
	var after *feed.Cursor
	c := feed.ScrollCursor{LastID: start + 1}
	for req := 0; ; req++ {
		if req > len(w.posts)*4+100 {
			w.t.Fatalf("the scroll did not end")
		}
		var views []feed.PostView
		more := false
		if native {
			page, err := w.svc.Timeline(w.ctx, v, after, 1+w.r.IntN(feed.MaxTimelineLimit))
			must(w.t, err, "Timeline")
			views, after, more = page.List, page.Next, page.Next != nil
		} else {
			res, err := w.svc.ScrollFeed(w.ctx, v, c, 1+w.r.IntN(feed.MaxPageSize))
			must(w.t, err, "ScrollFeed")
			if res != nil {
				views, more = res.List, true
				c = feed.ScrollCursor{LastID: res.MinTime, Offset: res.Offset}
			}
		}
		for _, view := range views {
			if seen[view.ID] {
				w.t.Fatalf("post %d seen twice in one scroll (again at entry %v)", view.ID, view.FeedEntry)
			}
			seen[view.ID] = true
			e := view.FeedEntry
			if last != nil && !last.Before(e) {
				w.t.Fatalf("post %d at entry %v after entry %v: out of feed order", view.ID, e, *last)
			}
			if e.Score > start {
				w.t.Fatalf("post %d at entry %v, newer than the scroll's start %d", view.ID, e, start)
			}
			last = &e
			if err := w.checkView(v, view); err != nil {
				w.t.Fatal(err)
			}
		}
		if !more {
			break
		}
		if between != nil {
			if !native {
				// Removing an entry of the cursor's millisecond is the one
				// change the compatible cursor does not survive (API.md).
				w.mu.Lock()
				w.hold = func(j feed.RemoveJob) bool { return j.Score == c.LastID }
				w.mu.Unlock()
				w.release()
			}
			between()
		}
	}
	w.mu.Lock()
	w.hold = nil
	w.mu.Unlock()
	w.release()
	missed := 0
	for id, e := range want {
		if now, ok := w.place(v, id); ok && now == e && !seen[id] {
			missed++
			w.t.Errorf("post %d, placed at %v at the start and since, was not seen", id, e)
		}
	}
	if missed > 0 {
		w.t.FailNow()
	}
	w.t.Logf("native %v: %d posts seen of %d placed at the start", native, len(seen), len(want))
}

// testRepostScroll is the randomized property test: scrolls through both
// cursors see each post at most once, at its place, and every post whose
// place stood still, while reposts, undos, deletes and posts happen
// between the pages.
func testRepostScroll(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	w.fill(sized(300))
	reposted := 0
	for _, e := range w.timeline(w.viewer, w.clock.Load()) {
		w.mu.Lock()
		if _, ok := w.posts[e.PostID]; !ok {
			reposted++
		}
		w.mu.Unlock()
	}
	if reposted == 0 {
		t.Fatal("no post is placed by a repost: the data does not exercise reposts")
	}
	w.scrollOnce(true, nil)
	w.scrollOnce(false, nil)
	for range 2 {
		between := func() {
			w.clock.Add(1 + int64(w.r.IntN(2)))
			for range w.r.IntN(4) {
				w.mutate(w.r, 0.4, 0.35)
			}
		}
		w.scrollOnce(true, between)
		w.scrollOnce(false, between)
	}
}

// testRepostScrollConcurrent scrolls with the native cursor while another
// goroutine reposts, undoes, deletes and publishes and runs the jobs.
func testRepostScrollConcurrent(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	w.fill(sized(200))
	v := w.viewer
	start := w.clock.Load()
	want := w.timeline(v, start)
	stop := make(chan struct{})
	done := make(chan error, 1)
	pages := atomic.Int64{}
	mr := rand.New(rand.NewPCG(w.r.Uint64(), 1))
	go func() {
		defer close(done)
		for n := 0; n < 300; n++ {
			select {
			case <-stop:
				return
			default:
			}
			// After the first page (entries newer than the start would be
			// above it), and about one page per three changes.
			for pages.Load() < int64(n/3)+1 {
				select {
				case <-stop:
					return
				default:
					time.Sleep(50 * time.Microsecond)
				}
			}
			w.clock.Add(int64(mr.IntN(2)))
			w.mutate(mr, 0.4, 0.4)
		}
	}()
	seen := map[int64]bool{}
	var last *feed.Entry
	var after *feed.Cursor
	var err error
	sizes := rand.New(rand.NewPCG(w.r.Uint64(), 2))
	for req := 0; err == nil; req++ {
		page, perr := w.svc.Timeline(w.ctx, v, after, 1+sizes.IntN(20))
		pages.Add(1)
		if perr != nil {
			err = perr
			break
		}
		for _, view := range page.List {
			e := view.FeedEntry
			switch {
			case seen[view.ID]:
				err = fmt.Errorf("post %d seen twice in one scroll (again at entry %v)", view.ID, e)
			case last != nil && !last.Before(e):
				err = fmt.Errorf("post %d at entry %v after entry %v: out of feed order", view.ID, e, *last)
			case e.Score > start:
				err = fmt.Errorf("post %d at entry %v, newer than the scroll's start %d", view.ID, e, start)
			}
			seen[view.ID] = true
			last = &e
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	for id, e := range want {
		if now, ok := w.place(v, id); ok && now == e && !seen[id] {
			t.Errorf("post %d, placed at %v at the start and since, was not seen", id, e)
		}
	}
	t.Logf("%d posts seen of %d placed at the start", len(seen), len(want))
}

// rview returns the viewer's whole timeline (native cursor).
func (w *rworld) whole(viewer int64) []feed.PostView {
	w.t.Helper()
	var out []feed.PostView
	var after *feed.Cursor
	for {
		page, err := w.svc.Timeline(w.ctx, viewer, after, feed.MaxTimelineLimit)
		must(w.t, err, "Timeline")
		out = append(out, page.List...)
		if page.Next == nil {
			return out
		}
		after = page.Next
	}
}

// shown returns the view of post id in viewer's whole timeline, nil if
// it is not there.
func (w *rworld) shown(viewer, id int64) *feed.PostView {
	for _, v := range w.whole(viewer) {
		if v.ID == id {
			return &v
		}
	}
	return nil
}

// wantShown fails unless post id is in viewer's timeline at entry e (or,
// with e zero, not in it at all), and the timeline agrees with the record.
func (w *rworld) wantShown(viewer, id int64, e feed.Entry, what string) {
	w.t.Helper()
	v := w.shown(viewer, id)
	switch {
	case e == (feed.Entry{}) && v != nil:
		w.t.Fatalf("%s: post %d shown at %v, want it absent", what, id, v.FeedEntry)
	case e != (feed.Entry{}) && v == nil:
		w.t.Fatalf("%s: post %d absent, want it at %v", what, id, e)
	case v != nil && v.FeedEntry != e:
		w.t.Fatalf("%s: post %d shown at %v, want it at %v", what, id, v.FeedEntry, e)
	}
	for _, view := range w.whole(viewer) {
		if err := w.checkView(viewer, view); err != nil {
			w.t.Fatalf("%s: %v", what, err)
		}
	}
}

// repostEntry is the entry of user's standing repost of post id.
func (w *rworld) repostEntry(user, id int64) feed.Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.reposts[[2]int64{user, id}]
	if !ok {
		w.t.Fatalf("user %d has no repost of post %d", user, id)
	}
	return r.Entry()
}

// testRepostUndo: a post the viewer sees by reposts is placed at the first
// repost of someone it follows; later reposts add to who shared it; undoing
// the first keeps the post at the next one; undoing every one removes it.
// A post of an author it follows stays at its own entry whatever is
// reposted or undone.
func testRepostUndo(t *testing.T, b *Backend) {
	w := newRWorld(t, b, newRand(t))
	v, a3, a0 := w.viewer, w.a[3], w.a[0]
	p := w.publish(a3) // an author the viewer does not follow
	q := w.publish(a0) // one it does
	w.wantShown(v, p.ID, feed.Entry{}, "nobody reposted")
	for _, r := range []int64{w.rs[5], w.rs[0], w.rs[1], w.rs[2]} { // rs[5]: not followed
		w.clock.Add(5)
		w.repost(r, p.ID)
		w.repost(r, q.ID)
	}
	w.wantShown(v, p.ID, w.repostEntry(w.rs[0], p.ID), "reposted by r5, r0, r1 (pull mode), r2")
	w.wantShown(v, q.ID, q.Entry(), "an author the viewer follows")
	if got := w.shown(v, p.ID).RepostedBy; got.User.ID != w.rs[0] || got.Others != 2 {
		t.Fatalf("reposted by %+v, want r0 and 2 others", got)
	}
	w.unrepost(w.rs[0], p.ID)
	w.wantShown(v, p.ID, w.repostEntry(w.rs[1], p.ID), "r0's undone: the next standing repost, r1's")
	w.unrepost(w.rs[0], q.ID)
	w.wantShown(v, q.ID, q.Entry(), "r0's repost of a followed author's post undone")
	w.clock.Add(5)
	w.repost(w.rs[0], p.ID) // again: now the newest
	w.unrepost(w.rs[1], p.ID)
	w.wantShown(v, p.ID, w.repostEntry(w.rs[2], p.ID), "r1's undone: r2's, older than r0's new one")
	w.unrepost(w.rs[2], p.ID)
	w.wantShown(v, p.ID, w.repostEntry(w.rs[0], p.ID), "r2's undone")
	w.unrepost(w.rs[0], p.ID)
	w.wantShown(v, p.ID, feed.Entry{}, "every followee's repost undone (r5's stands)")
	// The viewer's own repost places a post in its own timeline.
	w.clock.Add(5)
	w.repost(v, p.ID)
	w.wantShown(v, p.ID, w.repostEntry(v, p.ID), "the viewer's own repost")
	if !w.shown(v, p.ID).Reposted {
		t.Fatal("the viewer's own repost: Reposted is false")
	}
}
