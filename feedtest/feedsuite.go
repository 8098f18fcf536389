package feedtest

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestFeed runs the follow feed of feed.Service on the backend: the worked
// example of the API contract, then randomized scrolls through the
// compatible (lastId, offset) cursor while posts are published and deleted.
// open must return an empty backend on every call.
func TestFeed(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("WorkedExample", func(t *testing.T) { testWorkedExample(t, open(t)) })
	t.Run("Scroll", func(t *testing.T) { testScroll(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testScrollConcurrent(t, open(t)) })
	t.Run("Degraded", func(t *testing.T) { testDegraded(t, open(t)) })
	t.Run("Around", func(t *testing.T) { testAround(t, open(t)) })
}

type noCodes struct{}

func (noCodes) SendCode(context.Context, string, string, time.Time) error { return nil }

func newService(b *Backend, clock *atomic.Int64) *feed.Service {
	return &feed.Service{
		Users: b.Users, Auth: b.Auth, Posts: b.Posts, Follows: b.Follows, Social: b.Social,
		Inbox: b.Inbox, Outbox: b.Outbox, Codes: noCodes{}, SessionPages: b.SessionPages,
		Filters: b.Filters, Ranks: b.Ranks, Snapshots: b.Snapshots, Comments: b.Comments, Reposts: b.Reposts,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) },
	}
}

func scrollScores(s *feed.Scroll) []int64 {
	out := make([]int64, len(s.List))
	for i, v := range s.List {
		out[i] = v.Score()
	}
	return out
}

// testWorkedExample checks the table of the API contract: scores 50, 40, 40,
// 40, 30 read with size 2.
func testWorkedExample(t *testing.T, b *Backend) {
	ctx := t.Context()
	var clock atomic.Int64
	svc := newService(b, &clock)
	now := base()
	author := newUser(t, b, 1, now).ID
	fan := newUser(t, b, 2, now).ID
	loner := newUser(t, b, 3, now).ID
	must(t, svc.Follow(ctx, fan, author, true), "Follow")
	ids := map[int64][]int64{}
	for _, ms := range []int64{50, 40, 40, 40, 30} {
		clock.Store(ms)
		p, err := svc.Publish(ctx, author, feed.PostInput{Title: fmt.Sprint("at ", ms), Content: "x"})
		must(t, err, "Publish")
		if p.Score() != ms {
			t.Fatalf("post published at %d ms has score %d", ms, p.Score())
		}
		ids[ms] = append(ids[ms], p.ID)
	}
	clock.Store(1000) // delivered later than published: the score stays the post's time
	must(t, RunJobs(ctx, b), "RunJobs")

	for _, viewer := range []int64{author, fan} {
		steps := []struct {
			lastID        int64
			offset        int
			scores, posts []int64
			minTime       int64
			nextOffset    int
		}{
			{51, 0, []int64{50, 40}, []int64{ids[50][0], ids[40][2]}, 40, 1},
			{40, 1, []int64{40, 40}, []int64{ids[40][1], ids[40][0]}, 40, 3},
			{40, 3, []int64{30}, []int64{ids[30][0]}, 30, 1},
		}
		for _, s := range steps {
			res, err := svc.ScrollFeed(ctx, viewer, feed.ScrollCursor{LastID: s.lastID, Offset: s.offset}, 2)
			must(t, err, "ScrollFeed")
			if res == nil {
				t.Fatalf("viewer %d: ScrollFeed(%d, %d, 2) = no data, want scores %v", viewer, s.lastID, s.offset, s.scores)
			}
			got := make([]int64, len(res.List))
			for i, v := range res.List {
				got[i] = v.ID
			}
			if !slices.Equal(scrollScores(res), s.scores) || !slices.Equal(got, s.posts) || res.MinTime != s.minTime || res.Offset != s.nextOffset {
				t.Fatalf("viewer %d: ScrollFeed(%d, %d, 2) = scores %v posts %v minTime %d offset %d; want scores %v posts %v minTime %d offset %d",
					viewer, s.lastID, s.offset, scrollScores(res), got, res.MinTime, res.Offset, s.scores, s.posts, s.minTime, s.nextOffset)
			}
			for _, v := range res.List {
				if v.Author == nil || v.Author.ID != author {
					t.Fatalf("post %d not hydrated with its author: %+v", v.ID, v.Author)
				}
			}
		}
		for range 2 {
			res, err := svc.ScrollFeed(ctx, viewer, feed.ScrollCursor{LastID: 30, Offset: 1}, 2)
			must(t, err, "ScrollFeed")
			if res != nil {
				t.Fatalf("viewer %d: ScrollFeed(30, 1, 2) past the end = %+v, want no data", viewer, res)
			}
		}
	}
	res, err := svc.ScrollFeed(ctx, loner, feed.ScrollCursor{LastID: 51, Offset: 0}, 2)
	must(t, err, "ScrollFeed")
	if res != nil {
		t.Fatalf("ScrollFeed of an empty inbox = %+v, want no data", res)
	}
	for _, c := range []struct {
		lastID       int64
		offset, size int
	}{{0, 0, 2}, {-1, 0, 2}, {51, -1, 2}, {51, 0, -1}, {51, 0, feed.MaxPageSize + 1}, {51, feed.MaxOffset + 1, 2}} {
		_, err := svc.ScrollFeed(ctx, author, feed.ScrollCursor{LastID: c.lastID, Offset: c.offset}, c.size)
		wantCode(t, err, feed.EINVALID, fmt.Sprintf("ScrollFeed(%d, %d, %d)", c.lastID, c.offset, c.size))
	}
}

// world is a backend with users, follows and posts, and the test's own
// record of them: what every inbox must hold follows from it.
type world struct {
	t     testing.TB
	ctx   context.Context
	b     *Backend
	svc   *feed.Service
	clock atomic.Int64 // Unix ms
	r     *rand.Rand

	v1, v2, fan int64   // viewers
	authors     []int64 // everyone who posts
	follows     map[int64]map[int64]bool
	posts       map[int64]*feed.Post
	order       []int64 // post ids in publishing order
	deleted     map[int64]bool
	liked       map[[2]int64]bool // (viewer, post)
	pending     []feed.RemoveJob  // removals not yet applied to the inboxes
}

// newWorld creates the users and the follow graph: v1 follows a1, a2, a3;
// v2 follows a2, a4 and v1; a4 has 110 more followers (more than one page
// of Audience), one of whom (fan) scrolls too.
func newWorld(t testing.TB, b *Backend, r *rand.Rand) *world {
	w := &world{t: t, ctx: context.Background(), b: b, r: r,
		follows: map[int64]map[int64]bool{}, posts: map[int64]*feed.Post{}, deleted: map[int64]bool{}, liked: map[[2]int64]bool{}}
	w.svc = newService(b, &w.clock)
	w.clock.Store(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	now := time.UnixMilli(w.clock.Load())
	ids := newUsers(t, b, 6, now)
	w.v1, w.v2 = ids[0], ids[1]
	a1, a2, a3, a4 := ids[2], ids[3], ids[4], ids[5]
	w.authors = []int64{w.v1, w.v2, a1, a2, a3, a4}
	w.follow(w.v1, a1, a2, a3)
	w.follow(w.v2, a2, a4, w.v1)
	for i := 0; i < 110; i++ {
		f := newUser(t, b, 5000+i, now).ID
		w.follow(f, a4)
		if i == 55 {
			w.fan = f
		}
	}
	return w
}

func (w *world) follow(x int64, ys ...int64) {
	for _, y := range ys {
		must(w.t, w.svc.Follow(w.ctx, x, y, true), "Follow")
		if w.follows[x] == nil {
			w.follows[x] = map[int64]bool{}
		}
		w.follows[x][y] = true
	}
}

// inFeed reports whether a post of author is delivered to viewer.
func (w *world) inFeed(viewer, author int64) bool {
	return viewer == author || w.follows[viewer][author]
}

// publish publishes a post of author at the current clock and runs its
// fan-out job.
func (w *world) publish(author int64) *feed.Post {
	w.t.Helper()
	p, err := w.svc.Publish(w.ctx, author, feed.PostInput{Title: fmt.Sprintf("post %d", len(w.order)), Content: "<p>hello</p>"})
	must(w.t, err, "Publish")
	w.posts[p.ID] = p
	w.order = append(w.order, p.ID)
	w.drain()
	return p
}

// drain runs the pending fan-out jobs, keeps the removals for later and
// skips the follow jobs.
func (w *world) drain() {
	w.t.Helper()
	for _, j := range w.b.Jobs() {
		switch j := j.(type) {
		case feed.FanoutJob:
			if p := w.posts[j.PostID]; p == nil || p.Score() != j.Score || p.UserID != j.AuthorID {
				w.t.Fatalf("fan-out job %+v does not match its post %+v", j, p)
			}
			must(w.t, RunJob(w.ctx, w.b, j), "RunJob")
		case feed.RemoveJob:
			w.pending = append(w.pending, j)
		case feed.FollowJob:
			// The world's follows all happen before its first post: there
			// is nothing to backfill or remove.
		default:
			w.t.Fatalf("unexpected job %#v", j)
		}
	}
}

// delete deletes post id (by its author); its inbox entries stay until
// applyRemovals runs the removal job.
func (w *world) delete(id int64) {
	w.t.Helper()
	must(w.t, w.svc.DeletePost(w.ctx, w.posts[id].UserID, id), "DeletePost")
	w.deleted[id] = true
	w.drain()
}

// applyRemovals runs each pending removal with probability p, except those
// of score keep: removing an entry whose score equals the cursor's lastId
// is the one change the compatible cursor does not survive (API.md).
func (w *world) applyRemovals(p float64, keep int64) {
	w.t.Helper()
	rest := w.pending[:0]
	for _, j := range w.pending {
		if j.Score != keep && w.r.Float64() < p {
			must(w.t, RunJob(w.ctx, w.b, j), "RunJob")
		} else {
			rest = append(rest, j)
		}
	}
	w.pending = rest
}

// publishBursts publishes n posts whose times collide: bursts of one to six
// posts on one millisecond, and now and then a burst of 60 to 140 (more
// than the largest page), mostly by a2, whom both v1 and v2 follow.
func (w *world) publishBursts(n int) {
	a2 := w.authors[3]
	for burst, made := 0, 0; made < n; burst++ {
		if burst > 0 {
			w.clock.Add(1 + int64(w.r.IntN(3)))
		}
		size := 1 + w.r.IntN(6)
		big := burst == 2 || burst%40 == 12
		if big {
			size = 60 + w.r.IntN(81)
		}
		for i := 0; i < size && made < n; i, made = i+1, made+1 {
			author := w.authors[w.r.IntN(len(w.authors))]
			if big && w.r.IntN(10) < 8 {
				author = a2
			}
			w.publish(author)
		}
	}
}

// feedOf returns viewer's live feed up to score max, in feed order.
func (w *world) feedOf(viewer, max int64) []feed.Entry {
	var out []feed.Entry
	for _, id := range w.order {
		p := w.posts[id]
		if !w.deleted[id] && p.Score() <= max && w.inFeed(viewer, p.UserID) {
			out = append(out, feed.Entry{PostID: id, Score: p.Score()})
		}
	}
	SortEntries(out)
	return out
}

// scroller scrolls one feed from the top to the end the way the web client
// does, checking every response.
type scroller struct {
	svc    *feed.Service
	viewer int64
	start  int64 // the client's clock when it starts: it sends start+1
	sizes  func() int
	// post returns what the test knows of a post, nil for a post that must
	// not appear (newer than the start, or deleted before this request).
	post  func(id int64) *feed.Post
	liked func(id int64) bool
	// between runs after each page, with the cursor the client holds.
	between func(lastID int64, seen []feed.Entry) error
	maxReq  int

	// token, when set, is a session token of viewer: every other request
	// then goes through ScrollFeedAs with it, which must read the same
	// pages as ScrollFeed.
	token string

	seen                       []feed.Entry
	requests, empties, carries int
}

// newSession returns a session token of viewer, live for a day of the
// service's clock.
func newSession(t testing.TB, svc *feed.Service, viewer int64) string {
	t.Helper()
	tok, err := feed.NewSessionToken(viewer, crand.Reader)
	must(t, err, "NewSessionToken")
	now := svc.Now()
	must(t, svc.Auth.CreateSession(context.Background(), feed.HashSecret(tok), viewer, now, now.Add(24*time.Hour)), "CreateSession")
	return tok
}

// page is one request of the scroll: ScrollFeed, or ScrollFeedAs with the
// token on every other request.
func (s *scroller) page(ctx context.Context, c feed.ScrollCursor, size int) (*feed.Scroll, error) {
	if s.token == "" || s.requests%2 == 0 {
		return s.svc.ScrollFeed(ctx, s.viewer, c, size)
	}
	id, res, err := s.svc.ScrollFeedAs(ctx, s.token, c, size)
	if err == nil && id != s.viewer {
		return nil, fmt.Errorf("ScrollFeedAs with viewer %d's token authenticated user %d", s.viewer, id)
	}
	return res, err
}

func (s *scroller) run(ctx context.Context) error {
	lastID, offset := s.start+1, 0
	for {
		if s.requests++; s.requests > s.maxReq {
			return fmt.Errorf("the scroll did not end after %d requests (cursor %d, %d)", s.maxReq, lastID, offset)
		}
		size := s.sizes()
		res, err := s.page(ctx, feed.ScrollCursor{LastID: lastID, Offset: offset}, size)
		if err != nil {
			return fmt.Errorf("ScrollFeed(%d, %d, %d): %w", lastID, offset, size, err)
		}
		if res == nil {
			// The end stays the end.
			if res, err := s.svc.ScrollFeed(ctx, s.viewer, feed.ScrollCursor{LastID: lastID, Offset: offset}, size); err != nil || res != nil {
				return fmt.Errorf("ScrollFeed(%d, %d, %d) again after the end = %+v, %v; want no data", lastID, offset, size, res, err)
			}
			return nil
		}
		if err := s.check(res, lastID, offset, size); err != nil {
			return fmt.Errorf("ScrollFeed(%d, %d, %d) = minTime %d offset %d scores %v: %w",
				lastID, offset, size, res.MinTime, res.Offset, scrollScores(res), err)
		}
		if len(res.List) == 0 {
			s.empties++
		}
		if res.MinTime == lastID {
			s.carries++
		}
		lastID, offset = res.MinTime, res.Offset
		if s.between != nil {
			if err := s.between(lastID, s.seen); err != nil {
				return err
			}
		}
	}
}

func (s *scroller) check(res *feed.Scroll, lastID int64, offset, size int) error {
	size = cmp.Or(size, 10)
	switch {
	case res.MinTime <= 0:
		return errors.New("minTime must be positive: the client would restart from the top")
	case res.Offset < 1:
		return errors.New("offset must count at least the last entry")
	case res.MinTime > lastID || (res.MinTime == lastID && res.Offset <= offset):
		return errors.New("the cursor did not move forward")
	case len(res.List) > size:
		return fmt.Errorf("%d posts in a page of %d", len(res.List), size)
	}
	for _, v := range res.List {
		if v.Post == nil {
			return errors.New("a view without its post")
		}
		e := feed.Entry{PostID: v.ID, Score: v.Score()}
		want := s.post(v.ID)
		switch {
		case want == nil:
			return fmt.Errorf("post %d (score %d) must not appear: newer than the start (%d) or deleted", v.ID, e.Score, s.start)
		case v.UserID != want.UserID || v.Title != want.Title || v.Content != want.Content || v.Score() != want.Score():
			return fmt.Errorf("post %d = %+v, want %+v", v.ID, v.Post, want)
		case v.Author == nil || v.Author.ID != v.UserID:
			return fmt.Errorf("post %d hydrated with author %+v, want user %d", v.ID, v.Author, v.UserID)
		case v.IsLike != s.liked(v.ID):
			return fmt.Errorf("post %d has IsLike %v, want %v", v.ID, v.IsLike, !v.IsLike)
		case e.Score > lastID || e.Score < res.MinTime:
			return fmt.Errorf("post %d has score %d, outside [minTime %d, lastId %d]", v.ID, e.Score, res.MinTime, lastID)
		case len(s.seen) > 0 && !s.seen[len(s.seen)-1].Before(e):
			return fmt.Errorf("post %d (score %d) after post %d (score %d): seen twice or out of feed order",
				v.ID, e.Score, s.seen[len(s.seen)-1].PostID, s.seen[len(s.seen)-1].Score)
		}
		s.seen = append(s.seen, e)
	}
	return nil
}

func anySize(r *rand.Rand) func() int {
	return func() int {
		if r.IntN(20) == 0 {
			return 0 // the default page size
		}
		return 1 + r.IntN(feed.MaxPageSize)
	}
}

// scrollOpts says what happens between the pages of one scroll.
type scrollOpts struct {
	sizes   func() int
	publish bool    // publish newer posts
	delete  bool    // delete posts, seen or not yet
	remove  float64 // probability of running each pending removal
}

// scroll scrolls viewer's feed while o's changes happen, and checks that it
// saw every post that existed at the start exactly once, in feed order,
// except the posts deleted before the scroll reached them.
func (w *world) scroll(viewer int64, o scrollOpts) *scroller {
	w.t.Helper()
	start := w.clock.Load()
	want := w.feedOf(viewer, start)
	inWant := map[int64]bool{}
	for _, e := range want {
		inWant[e.PostID] = true
	}
	unseenDeleted := map[int64]bool{}
	live := []int64{}
	for _, id := range w.order {
		if !w.deleted[id] {
			live = append(live, id)
		}
	}
	s := &scroller{
		svc: w.svc, viewer: viewer, start: start, sizes: o.sizes, token: newSession(w.t, w.svc, viewer),
		post: func(id int64) *feed.Post {
			if !inWant[id] || w.deleted[id] {
				return nil
			}
			return w.posts[id]
		},
		liked:  func(id int64) bool { return w.liked[[2]int64{viewer, id}] },
		maxReq: len(w.order) + 100, // every request moves past at least one entry
	}
	s.between = func(lastID int64, seen []feed.Entry) error {
		if o.publish && w.r.IntN(3) == 0 {
			for range 1 + w.r.IntN(5) {
				// A real clock: every new post is newer than the start.
				if w.clock.Load() <= start {
					w.clock.Store(start + 1)
				} else {
					w.clock.Add(int64(w.r.IntN(2)))
				}
				p := w.publish(w.authors[w.r.IntN(len(w.authors))])
				live = append(live, p.ID)
			}
		}
		if o.delete && w.r.IntN(3) == 0 {
			for range 1 + w.r.IntN(4) {
				k := w.r.IntN(len(live))
				id := live[k]
				live = slices.Delete(live, k, k+1)
				e := feed.Entry{PostID: id, Score: w.posts[id].Score()}
				passed := len(seen) > 0 && !seen[len(seen)-1].Before(e)
				w.delete(id)
				if !passed {
					unseenDeleted[id] = true
				}
			}
		}
		if o.remove > 0 {
			w.applyRemovals(o.remove, lastID)
		}
		return nil
	}
	if err := s.run(w.ctx); err != nil {
		w.t.Fatalf("viewer %d, start %d: %v", viewer, start, err)
	}
	var expect []feed.Entry
	for _, e := range want {
		if !unseenDeleted[e.PostID] {
			expect = append(expect, e)
		}
	}
	if !slices.Equal(s.seen, expect) {
		w.t.Fatalf("viewer %d, start %d: the scroll saw %d posts, want %d\n%s", viewer, start, len(s.seen), len(expect), diffEntries(s.seen, expect))
	}
	w.t.Logf("viewer %d: %d posts in %d requests (%d empty pages, %d whole-page ties), %d deleted while scrolling",
		viewer, len(s.seen), s.requests, s.empties, s.carries, len(unseenDeleted))
	return s
}

// diffEntries describes the first difference between two entry lists.
func diffEntries(got, want []feed.Entry) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	return fmt.Sprintf("first difference at %d:\n got %s\nwant %s", i,
		fmtEntries(got[lo:min(len(got), i+5)]), fmtEntries(want[lo:min(len(want), i+5)]))
}

// testScroll is the randomized property test of the compatible cursor.
func testScroll(t *testing.T, b *Backend) {
	r := newRand(t)
	w := newWorld(t, b, r)
	w.publishBursts(sized(2000))
	// Deleted before any scroll: some entries removed, some left behind.
	for range 70 {
		id := w.order[r.IntN(len(w.order))]
		if !w.deleted[id] {
			w.delete(id)
		}
	}
	w.applyRemovals(0.5, 0)
	for range 40 {
		id := w.order[r.IntN(len(w.order))]
		if !w.deleted[id] {
			on, err := w.svc.ToggleLike(w.ctx, w.v1, id)
			must(t, err, "ToggleLike")
			if on == w.liked[[2]int64{w.v1, id}] {
				t.Fatalf("ToggleLike of post %d = %v, twice in a row", id, on)
			}
			w.liked[[2]int64{w.v1, id}] = on
		}
	}
	carries := 0
	ok := t.Run("Plain", func(t *testing.T) {
		w.t = t
		carries += w.scroll(w.v1, scrollOpts{sizes: anySize(r)}).carries
	})
	// A run of deleted entries much longer than a page in the middle of v1's
	// feed, and one at the end of v2's: the first must be skipped, the second
	// must end the scroll.
	ok = ok && t.Run("DeletedRuns", func(t *testing.T) {
		w.t = t
		f1 := w.feedOf(w.v1, w.clock.Load())
		run, lead := min(260, len(f1)/3), min(100, len(f1)/6)
		at := lead + r.IntN(len(f1)-run-2*lead)
		for _, e := range f1[at : at+run] {
			w.delete(e.PostID)
		}
		f2 := w.feedOf(w.v2, w.clock.Load())
		for _, e := range f2[len(f2)-70:] {
			w.delete(e.PostID)
		}
		small := func() int { return 1 + r.IntN(12) }
		carries += w.scroll(w.v1, scrollOpts{sizes: small, publish: true, delete: true}).carries
		carries += w.scroll(w.v2, scrollOpts{sizes: anySize(r), publish: true, delete: true}).carries
	})
	ok = ok && t.Run("Changing", func(t *testing.T) {
		w.t = t
		for _, v := range []int64{w.v1, w.v2, w.fan, w.v1} {
			carries += w.scroll(v, scrollOpts{sizes: anySize(r), publish: true, delete: true, remove: 0.3}).carries
		}
		w.applyRemovals(1, 0)
		carries += w.scroll(w.v2, scrollOpts{sizes: anySize(r), publish: true, delete: true, remove: 1}).carries
	})
	w.t = t
	if ok && carries == 0 {
		t.Fatal("no page was one tie group of the previous page's last score: the data does not exercise the offset carry")
	}
}
