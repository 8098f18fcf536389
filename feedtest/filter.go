package feedtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// TestFilters runs the contract of the content filters and the ranked
// timeline's stores (feed.FilterStore, feed.RankStore, feed.SnapshotStore)
// on the backend, then the filters and the ranked timeline of feed.Service
// on top of it. open must return an empty backend on every call.
func TestFilters(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("MutedWords", func(t *testing.T) { testMutedWords(t, open(t)) })
	t.Run("Reports", func(t *testing.T) { testReports(t, open(t)) })
	t.Run("Snapshots", func(t *testing.T) { testSnapshots(t, open(t)) })
	t.Run("Affinity", func(t *testing.T) { testAffinity(t, open(t)) })
	t.Run("FilteredFeeds", func(t *testing.T) { testFilteredFeeds(t, open(t)) })
	t.Run("RankedScroll", func(t *testing.T) { testRankedScroll(t, open(t)) })
}

func testMutedWords(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u, v := newUser(t, b, 1, now).ID, newUser(t, b, 2, now).ID
	for _, w := range []string{"spoiler", "ελλάδα", "剧透", "spoiler"} {
		must(t, b.Filters.SetMutedWord(ctx, u, w, true, now), "SetMutedWord")
	}
	got, err := b.Filters.MutedWords(ctx, u)
	must(t, err, "MutedWords")
	if want := []string{"spoiler", "ελλάδα", "剧透"}; !slices.Equal(got, want) {
		t.Fatalf("MutedWords = %q, want %q (sorted, each once)", got, want)
	}
	if got, _ := b.Filters.MutedWords(ctx, v); len(got) != 0 {
		t.Fatalf("another user's muted words = %q, want none", got)
	}
	must(t, b.Filters.SetMutedWord(ctx, u, "spoiler", false, now), "unmute")
	must(t, b.Filters.SetMutedWord(ctx, u, "spoiler", false, now), "unmute again")
	words, hidden, err := b.Filters.FeedFilter(ctx, u, []int64{1, 2})
	must(t, err, "FeedFilter")
	if want := []string{"ελλάδα", "剧透"}; !slices.Equal(words, want) || len(hidden) != 0 {
		t.Fatalf("FeedFilter = %q, %v; want %q and nothing hidden", words, hidden, want)
	}
	for i := len(words); i < feed.MaxMutedWords; i++ {
		must(t, b.Filters.SetMutedWord(ctx, v, fmt.Sprintf("w%03d", i), true, now), "fill")
	}
	must(t, b.Filters.SetMutedWord(ctx, u, "剧透", true, now), "re-adding an existing word")
	for i := range feed.MaxMutedWords - len(words) {
		must(t, b.Filters.SetMutedWord(ctx, u, fmt.Sprintf("x%03d", i), true, now), "fill")
	}
	wantCode(t, b.Filters.SetMutedWord(ctx, u, "onemore", true, now), feed.ECONFLICT, "a word over the limit")
}

// testReports: a report counts toward hiding its post only when it is not
// dismissed by a restore, its reporter's account was old enough when it
// reported, and neither the reporter nor the author blocks the other; the
// report that reaches the threshold hides the post, in the same call.
func testReports(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	old := now.Add(-48 * time.Hour)
	author := newUser(t, b, 1, old).ID
	r1, r2, r3, r4, r5 := newUser(t, b, 2, old).ID, newUser(t, b, 3, old).ID, newUser(t, b, 4, old).ID, newUser(t, b, 5, old).ID, newUser(t, b, 6, old).ID
	young, young2, r6 := newUser(t, b, 7, now).ID, newUser(t, b, 10, now).ID, newUser(t, b, 11, old).ID
	blocked, blocking := newUser(t, b, 8, old).ID, newUser(t, b, 9, old).ID
	for _, pair := range [][2]int64{{author, blocked}, {blocking, author}} {
		_, err := b.Social.SetBlock(ctx, pair[0], pair[1], true, now)
		must(t, err, "SetBlock")
	}
	p := &feed.Post{UserID: author, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	q := &feed.Post{UserID: author, Title: "u", Content: "c", CreatedAt: now, UpdatedAt: now}
	must(t, b.Posts.CreatePost(ctx, p), "CreatePost")
	must(t, b.Posts.CreatePost(ctx, q), "CreatePost")
	rule := feed.ReportRule{Threshold: 3, MinAge: 24 * time.Hour}
	isHidden := func(id int64) bool {
		t.Helper()
		h, err := b.Filters.Hidden(ctx, []int64{id, q.ID + 1000})
		must(t, err, "Hidden")
		_, fh, err := b.Filters.FeedFilter(ctx, r1, []int64{id})
		must(t, err, "FeedFilter")
		if h[id] != fh[id] || len(h) > 1 {
			t.Fatalf("Hidden = %v, FeedFilter = %v: they disagree", h, fh)
		}
		return h[id]
	}
	report := func(by int64, at time.Time, reason string, want bool) {
		t.Helper()
		hid, err := b.Filters.Report(ctx, p.ID, by, reason, at, rule)
		must(t, err, "Report")
		if hid != want {
			t.Fatalf("report by %d (%s): hid the post = %v, want %v", by, reason, hid, want)
		}
	}
	// Two that count (r1 twice is one), and three that do not.
	for i, by := range []int64{r1, r1, young, blocked, blocking, r2} {
		report(by, now.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("reason %d", i), false)
	}
	if isHidden(p.ID) {
		t.Fatal("hidden by two counted reports")
	}
	report(r3, now.Add(10*time.Millisecond), "reason 10", true)
	if !isHidden(p.ID) {
		t.Fatal("not hidden by three counted reports")
	}
	report(r4, now.Add(11*time.Millisecond), "reason 11", false) // hidden already
	_, err := b.Filters.Report(ctx, 1<<40, r1, "x", now, rule)
	wantCode(t, err, feed.ENOTFOUND, "report of a missing post")
	wantCode(t, b.Filters.SetHidden(ctx, 1<<40, true, now), feed.ENOTFOUND, "hide a missing post")

	must(t, b.Filters.SetHidden(ctx, q.ID, true, now), "SetHidden without reports")
	must(t, b.Filters.SetHidden(ctx, q.ID, true, now), "SetHidden again")
	list, err := b.Filters.Reported(ctx, 0, 10)
	must(t, err, "Reported")
	want := []feed.ReportedPost{
		{PostID: q.ID, AuthorID: author, Title: "u", Hidden: true},
		{PostID: p.ID, AuthorID: author, Title: "t", Reports: 7, LastReason: "reason 11", Hidden: true},
	}
	if !slices.Equal(list, want) {
		t.Fatalf("Reported = %+v\nwant %+v", list, want)
	}
	if list, _ := b.Filters.Reported(ctx, q.ID, 10); len(list) != 1 || list[0].PostID != p.ID {
		t.Fatalf("Reported before %d = %+v, want post %d alone", q.ID, list, p.ID)
	}

	// Restoring dismisses the reports it had, also when their reporters
	// report again; new reporters hide it again, among them an account
	// that was too young to count then and is old enough now.
	must(t, b.Filters.SetHidden(ctx, p.ID, false, now), "restore")
	if isHidden(p.ID) {
		t.Fatal("a restored post is still hidden")
	}
	if list, _ := b.Filters.Reported(ctx, q.ID, 10); len(list) != 0 {
		t.Fatalf("Reported after the restore = %+v, want nothing", list)
	}
	later := now.Add(25 * time.Hour)
	for _, by := range []int64{r1, r2, r3, r4, young} {
		report(by, later, "again", false)
	}
	report(r5, later, "new", false)
	report(r6, later, "new", false)
	report(young2, later, "grown up", true)
	if list, _ := b.Filters.Reported(ctx, q.ID, 10); len(list) != 1 || list[0].Reports != 3 || !list[0].Hidden {
		t.Fatalf("Reported after new reports = %+v, want 3 reports, hidden", list)
	}
}

// TestSnapshotStore runs the contract of feed.SnapshotStore on the store
// open returns, empty on every call: a snapshot reads back page by page,
// only for its viewer, and not after it expires.
func TestSnapshotStore(t *testing.T, open func(t *testing.T) feed.SnapshotStore) {
	testSnapshots(t, &Backend{Snapshots: open(t)})
}

func testSnapshots(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := time.Now()
	items := make([]rank.Item, 25)
	for i := range items {
		items[i] = rank.Item{PostID: int64(100 - i), Score: int64(1000 + i), RankScore: float64(25-i) / 3,
			Features: [len(rank.Features)]float64{0.5, float64(i) / 7, 1 - float64(i)/25, 1e-9, float64(i % 2)}}
	}
	id := "0123456789abcdef0123456789abcdef"
	must(t, b.Snapshots.SaveSnapshot(ctx, 7, id, items, now, now.Add(time.Minute)), "SaveSnapshot")
	var got []rank.Item
	for off := 0; ; off += 10 {
		page, more, err := b.Snapshots.Snapshot(ctx, 7, id, off, 10, time.Now())
		must(t, err, "Snapshot")
		got = append(got, page...)
		if !more {
			break
		}
	}
	if !slices.Equal(got, items) || got[3].View().Features["recency"] != 0.5 {
		t.Fatalf("read back %d items (%+v...), want %d equal to those saved", len(got), got[:min(len(got), 4)], len(items))
	}
	if page, more, err := b.Snapshots.Snapshot(ctx, 7, id, 30, 10, time.Now()); err != nil || len(page) != 0 || more {
		t.Fatalf("read past the end: %v, %v, %v; want nothing", page, more, err)
	}
	_, _, err := b.Snapshots.Snapshot(ctx, 8, id, 0, 10, time.Now())
	wantCode(t, err, feed.ENOTFOUND, "another viewer's snapshot")
	short := "fedcba9876543210fedcba9876543210"
	must(t, b.Snapshots.SaveSnapshot(ctx, 7, short, items, now, now.Add(50*time.Millisecond)), "SaveSnapshot")
	time.Sleep(150 * time.Millisecond)
	_, _, err = b.Snapshots.Snapshot(ctx, 7, short, 0, 10, time.Now())
	wantCode(t, err, feed.ENOTFOUND, "an expired snapshot")
}

func testAffinity(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 4, now)
	viewer, fav, other, stranger := ids[0], ids[1], ids[2], ids[3]
	must(t, b.Follows.SetFollow(ctx, viewer, fav, true, now.Add(-48*time.Hour)), "SetFollow")
	must(t, b.Follows.SetFollow(ctx, viewer, other, true, now.Add(-time.Hour)), "SetFollow")
	for i := range 3 {
		p := &feed.Post{UserID: fav, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
		must(t, b.Posts.CreatePost(ctx, p), "CreatePost")
		// One like now, one a half-life ago, one before the window.
		at := []time.Time{now, now.Add(-24 * time.Hour), now.Add(-100 * time.Hour)}[i]
		must(t, b.Posts.SetLike(ctx, p.ID, viewer, true, at), "SetLike")
	}
	aff, err := b.Ranks.Affinity(ctx, viewer, []int64{fav, other, stranger}, now.Add(-72*time.Hour), now, 24*time.Hour)
	must(t, err, "Affinity")
	if a := aff[fav]; a.Likes < 1.49 || a.Likes > 1.51 || !a.FollowedAt.Equal(now.Add(-48*time.Hour)) {
		t.Fatalf("affinity to the favourite = %+v, want likes 1.5 (1 + 0.5) and followed 48h ago", a)
	}
	if a := aff[other]; a.Likes != 0 || !a.FollowedAt.Equal(now.Add(-time.Hour)) {
		t.Fatalf("affinity to a followee never liked = %+v", a)
	}
	if a := aff[stranger]; a != (rank.Affinity{}) {
		t.Fatalf("affinity to a stranger = %+v, want zero", a)
	}
}

// filterService is the world's service with the filters' settings.
func filterService(w *world) *feed.Service {
	w.svc.ReportThreshold = 3
	return w.svc
}

// testFilteredFeeds checks that a muted word and a hidden post leave every
// timeline (both native orders and the compatible scroll), that the author
// still sees their own posts, and that the compatible cursor keeps counting
// filtered entries like deleted ones.
func testFilteredFeeds(t *testing.T, b *Backend) {
	ctx := t.Context()
	w := newWorld(t, b, newRand(t))
	svc := filterService(w)
	a1 := w.authors[2]
	var posts []*feed.Post
	for i := range 6 {
		w.clock.Add(1)
		title := fmt.Sprintf("post %d", i)
		if i == 2 {
			title = "Big SPOILER ahead"
		}
		p, err := svc.Publish(ctx, a1, feed.PostInput{Title: title, Content: "text"})
		must(t, err, "Publish")
		w.posts[p.ID] = p
		posts = append(posts, p)
	}
	w.drain()
	_, err := svc.SetMutedWord(ctx, w.v1, "Spoiler", true)
	must(t, err, "SetMutedWord")
	for _, r := range w.authors[3:5] {
		must(t, svc.Report(ctx, r, posts[4].ID, "spam"), "Report")
	}
	must(t, svc.Report(ctx, w.v2, posts[4].ID, "spam"), "Report")
	wantCode(t, svc.Report(ctx, a1, posts[4].ID, "mine"), feed.EINVALID, "reporting one's own post")

	want := []int64{posts[5].ID, posts[3].ID, posts[1].ID, posts[0].ID}
	// The compatible scroll, two entries a page: the filtered entries
	// still count, so no page repeats or loses a post.
	var got []int64
	c := feed.ScrollCursor{LastID: w.clock.Load() + 1}
	for range 10 {
		s, err := svc.ScrollFeed(ctx, w.v1, c, 2)
		must(t, err, "ScrollFeed")
		if s == nil {
			break
		}
		for _, v := range s.List {
			got = append(got, v.ID)
		}
		c = feed.ScrollCursor{LastID: s.MinTime, Offset: s.Offset}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("compatible scroll = %v, want %v (muted and hidden posts dropped)", got, want)
	}
	page, err := svc.Timeline(ctx, w.v1, nil, 10)
	must(t, err, "Timeline")
	if got := viewIDs(page.List); !slices.Equal(got, want) {
		t.Fatalf("timeline = %v, want %v", got, want)
	}
	ranked, err := svc.RankedTimeline(ctx, w.v1, nil, 10)
	must(t, err, "RankedTimeline")
	if got := viewIDs(ranked.List); len(got) != len(want) || slices.Contains(got, posts[2].ID) || slices.Contains(got, posts[4].ID) {
		t.Fatalf("ranked timeline = %v, want %v in some order", got, want)
	}
	// The author sees their own hidden post.
	mine, err := svc.Timeline(ctx, a1, nil, 10)
	must(t, err, "Timeline")
	if !slices.Contains(viewIDs(mine.List), posts[4].ID) {
		t.Fatalf("the author's timeline %v lacks their hidden post %d", viewIDs(mine.List), posts[4].ID)
	}
	// Restored, it is back for everyone.
	must(t, svc.Moderate(ctx, posts[4].ID, false), "restore")
	page, err = svc.Timeline(ctx, w.v1, nil, 10)
	must(t, err, "Timeline")
	if !slices.Contains(viewIDs(page.List), posts[4].ID) {
		t.Fatalf("a restored post is still missing: %v", viewIDs(page.List))
	}
}

func viewIDs(vs []feed.PostView) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

// testRankedScroll scrolls a ranked timeline page by page while posts are
// published and deleted: no post repeats, the pages follow the snapshot's
// order (scores non-increasing), every page's rank is there, and deleted
// posts are dropped from pages read after the delete.
func testRankedScroll(t *testing.T, b *Backend) {
	ctx := t.Context()
	w := newWorld(t, b, newRand(t))
	svc := w.svc
	r := w.r
	feedAuthors := []int64{w.v1, w.authors[2], w.authors[3], w.authors[4]}
	for range 40 {
		w.clock.Add(int64(r.IntN(3)))
		w.publish(feedAuthors[r.IntN(len(feedAuthors))])
	}
	for _, id := range w.order[:20] {
		if r.IntN(3) == 0 {
			must(t, svc.SetLike(ctx, w.v1, id, true), "SetLike")
		}
	}
	seen := map[int64]bool{}
	var next *rank.Cursor
	var deleted int64
	last := 1e300
	for page := 0; page < 20; page++ {
		res, err := svc.RankedTimeline(ctx, w.v1, next, 5)
		must(t, err, "RankedTimeline")
		for _, v := range res.List {
			if seen[v.ID] {
				t.Fatalf("page %d repeats post %d", page, v.ID)
			}
			if v.Rank == nil || v.Rank.Score > last+1e-9 {
				t.Fatalf("page %d: post %d rank %+v after score %v", page, v.ID, v.Rank, last)
			}
			if v.ID == deleted {
				t.Fatalf("page %d shows post %d deleted before it was read", page, v.ID)
			}
			seen[v.ID], last = true, v.Rank.Score
		}
		if res.Next == nil {
			break
		}
		next = res.Next
		// New posts arrive; one not yet seen is deleted.
		w.clock.Add(1)
		w.publish(feedAuthors[r.IntN(len(feedAuthors))])
		if deleted == 0 {
			for _, id := range w.order[:40] {
				if p := w.posts[id]; !seen[id] && p.UserID == w.v1 {
					deleted = id
					w.delete(id)
					break
				}
			}
		}
	}
	if want := 40 - min(deleted, 1); len(seen) != int(want) {
		t.Fatalf("the ranked scroll showed %d posts, want the %d of its snapshot", len(seen), want)
	}
	_, err := svc.RankedTimeline(ctx, w.v2, next, 5)
	wantCode(t, err, feed.EINVALID, "another user's ranked cursor")
}
