package feedtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestImportStore is the contract of feed.ImportStore (the backend's Posts
// store) and feed.InboxLoader (its Inbox, when it is one): rows keep their
// ids and the store's own ids continue above them, conflicts are skipped
// with their reason, a batch and its checkpoints commit together or not at
// all, like counts follow the likes imported, comment and reply counts
// the comments imported, and FinishImport makes the counts and pull mode
// true.
func TestImportStore(t *testing.T, open func(t *testing.T) *Backend) {
	ctx := context.Background()
	b := open(t)
	st, ok := b.Posts.(feed.ImportStore)
	if !ok {
		t.Fatal("the backend's store is no feed.ImportStore")
	}
	now := time.UnixMilli(1_700_000_000_000)
	cp := func(phase string, last int64) feed.ImportCheckpoint {
		return feed.ImportCheckpoint{Source: "test", Phase: phase, Last: last}
	}
	// commit saves the checkpoint of phase at last, counting the skips.
	var skipped []feed.ImportSkip
	commit := func(phase string, last int64) feed.ImportCommit {
		return func(skips []feed.ImportSkip) []feed.ImportCheckpoint {
			skipped = skips
			c := cp(phase, last)
			for _, s := range skips {
				c.Counts.Skip(s.Reason, 1)
			}
			return []feed.ImportCheckpoint{c}
		}
	}
	wantSkips := func(what string, want ...feed.ImportSkip) {
		t.Helper()
		got := slices.Clone(skipped)
		slices.SortFunc(got, func(a, b feed.ImportSkip) int { return a.Index - b.Index })
		if !slices.Equal(got, want) {
			t.Fatalf("%s: skips %v, want %v", what, got, want)
		}
	}

	// A user of the store's own, made before the import.
	own, err := b.Users.FindOrCreateUser(ctx, "13900000000", "own", now)
	must(t, err, "FindOrCreateUser")
	user := func(id int64, phone string) *feed.User {
		return &feed.User{ID: id, Phone: phone, NickName: "u" + phone[7:], City: "Hangzhou", CreatedAt: now, ActiveAt: now}
	}
	must(t, st.ImportUsers(ctx, []*feed.User{user(own.ID, "13800000001"), user(3, "13800000003"), user(4, "13900000000"), user(5, "13800000005"), user(10, "13800000010")},
		commit("tb_user", 10)), "ImportUsers")
	wantSkips("users", feed.ImportSkip{Index: 0, Reason: feed.SkipIDTaken}, feed.ImportSkip{Index: 2, Reason: feed.SkipDuplicatePhone})
	u5, err := b.Users.User(ctx, 5)
	must(t, err, "User(5)")
	if u5.Phone != "13800000005" || u5.City != "Hangzhou" || !u5.CreatedAt.Equal(now) {
		t.Fatalf("imported user 5: %+v", u5)
	}
	fresh, err := b.Users.FindOrCreateUser(ctx, "13900000001", "fresh", now)
	must(t, err, "FindOrCreateUser")
	if fresh.ID <= 10 {
		t.Fatalf("a user made after the import got id %d, not above the imported 10", fresh.ID)
	}

	post := func(id, author int64, liked int, minute int) *feed.Post {
		at := now.Add(time.Duration(minute) * time.Minute)
		return &feed.Post{ID: id, UserID: author, ShopID: 7, Title: "t", Content: "c", Images: "/a.jpg", Liked: liked, CreatedAt: at, UpdatedAt: at}
	}
	must(t, st.ImportPosts(ctx, []*feed.Post{post(50, 5, 9, 1), post(100, 10, 7, 2)}, commit("tb_blog", 100)), "ImportPosts")
	wantSkips("posts")
	own2 := &feed.Post{UserID: own.ID, Title: "mine", Content: "c", CreatedAt: now, UpdatedAt: now}
	must(t, b.Posts.CreatePost(ctx, own2), "CreatePost")
	if own2.ID <= 100 {
		t.Fatalf("a post made after the import got id %d, not above the imported 100", own2.ID)
	}
	must(t, st.ImportPosts(ctx, []*feed.Post{post(own2.ID, 5, 0, 3)}, commit("tb_blog", own2.ID)), "ImportPosts")
	wantSkips("a post whose id is taken", feed.ImportSkip{Index: 0, Reason: feed.SkipIDTaken})
	if b.Reposts != nil {
		// A repost's id is taken too: an entry's id names a post or a
		// repost, never both.
		if _, err := b.Reposts.SetRepost(ctx, own.ID, 50, true, now); err != nil {
			t.Fatal(err)
		}
		var rid int64
		for _, j := range b.Jobs() {
			if f, ok := j.(feed.FanoutJob); ok {
				rid = f.PostID
			}
		}
		must(t, st.ImportPosts(ctx, []*feed.Post{post(rid, 5, 0, 3)}, commit("tb_blog_reposts", rid)), "ImportPosts")
		wantSkips("a post whose id a repost has", feed.ImportSkip{Index: 0, Reason: feed.SkipIDTaken})
	}
	if p, err := b.Posts.Post(ctx, 50); err != nil || p.Liked != 9 || p.ShopID != 7 || p.Images != "/a.jpg" || p.Score() != now.Add(time.Minute).UnixMilli() {
		t.Fatalf("imported post 50: %+v %v", p, err)
	}

	// A batch that fails leaves neither its rows nor its checkpoint.
	err = st.ImportPosts(ctx, []*feed.Post{post(200, 5, 0, 4), post(201, 999_999, 0, 5)}, commit("tb_blog", 201))
	if err == nil {
		t.Fatal("a post of a user that does not exist was written")
	}
	if _, err := b.Posts.Post(ctx, 200); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("post 200 of the failed batch: %v", err)
	}
	cps, err := st.ImportProgress(ctx, "test")
	must(t, err, "ImportProgress")
	var posts feed.ImportCheckpoint
	for _, c := range cps {
		if c.Phase == "tb_blog" {
			posts = c
		}
	}
	if posts.Last != own2.ID || posts.Counts.Skipped[feed.SkipIDTaken] != 1 {
		t.Fatalf("tb_blog's checkpoint after a failed batch: %+v, want the one before it", posts)
	}

	follows := []feed.ImportFollow{{FollowerID: 3, FolloweeID: 5, CreatedAt: now}, {FollowerID: 10, FolloweeID: 5, CreatedAt: now},
		{FollowerID: 5, FolloweeID: 10, CreatedAt: now}, {FollowerID: 3, FolloweeID: 5, CreatedAt: now}}
	must(t, st.ImportFollows(ctx, follows, commit("tb_follow", 4)), "ImportFollows")
	wantSkips("follows", feed.ImportSkip{Index: 3, Reason: feed.SkipDuplicate})
	must(t, st.ImportFollows(ctx, follows[2:3], commit("tb_follow", 5)), "ImportFollows")
	wantSkips("a follow made already", feed.ImportSkip{Index: 0, Reason: feed.SkipDuplicate})

	like := func(post, user, author int64, minute int) feed.ImportLike {
		return feed.ImportLike{PostID: post, UserID: user, AuthorID: author, CreatedAt: now.Add(time.Duration(minute) * time.Minute)}
	}
	must(t, st.ImportLikes(ctx, []int64{50, 100}, []feed.ImportLike{like(50, 10, 5, 2), like(50, 3, 5, 3), like(50, 10, 5, 4)}, commit("blog:liked", 100)), "ImportLikes")
	wantSkips("likes", feed.ImportSkip{Index: 2, Reason: feed.SkipDuplicate})
	if likers, err := b.Posts.Likers(ctx, 50, 5); err != nil || !slices.Equal(likers, []int64{10, 3}) {
		t.Fatalf("likers of 50: %v %v, want 10 then 3, in the batch's order", likers, err)
	}
	for id, want := range map[int64]int{50: 2, 100: 0} {
		if p, err := b.Posts.Post(ctx, id); err != nil || p.Liked != want {
			t.Fatalf("post %d: liked %d %v, want the %d likes imported", id, p.Liked, err, want)
		}
	}

	testImportComments(t, b, st, now, commit, wantSkips, own.ID)

	pull, err := st.FinishImport(ctx, 2)
	must(t, err, "FinishImport")
	if !slices.Equal(pull, []int64{5}) {
		t.Fatalf("pull mode: %v, want user 5 (2 followers)", pull)
	}
	for id, want := range map[int64][2]int{3: {0, 1}, 5: {2, 1}, 10: {1, 1}, own.ID: {0, 0}} {
		u, err := b.Users.User(ctx, id)
		must(t, err, "User")
		if [2]int{u.Fans, u.Followee} != want {
			t.Fatalf("user %d: fans, followee %d, %d, want %v", id, u.Fans, u.Followee, want)
		}
	}
	if got, err := b.Social.PullFollowees(ctx, 3); err != nil || !slices.Equal(got, []int64{5}) {
		t.Fatalf("PullFollowees(3): %v %v, want [5]", got, err)
	}
	if again, err := st.FinishImport(ctx, 2); err != nil || !slices.Equal(again, pull) {
		t.Fatalf("FinishImport again: %v %v", again, err)
	}

	var users []int64
	must(t, st.ImportedUsers(ctx, func(id int64) { users = append(users, id) }), "ImportedUsers")
	if want := []int64{own.ID, 3, 5, 10, fresh.ID}; !slices.Equal(users, want) {
		t.Fatalf("ImportedUsers: %v, want %v", users, want)
	}
	authors := map[int64]int64{}
	must(t, st.ImportedPosts(ctx, func(id, author, score int64) { authors[id] = author }), "ImportedPosts")
	if len(authors) != 3 || authors[50] != 5 || authors[100] != 10 || authors[own2.ID] != own.ID {
		t.Fatalf("ImportedPosts: %v", authors)
	}
	fs, err := st.ImportedFollowees(ctx, 3, 5)
	must(t, err, "ImportedFollowees")
	if len(fs) != 2 || !slices.Equal(fs[3], []int64{5}) || !slices.Equal(fs[5], []int64{10}) {
		t.Fatalf("ImportedFollowees(3, 5): %v", fs)
	}

	if l, ok := b.Inbox.(feed.InboxLoader); ok {
		e := func(score, post int64) feed.Entry { return feed.Entry{Score: score, PostID: post} }
		ins := []feed.UserEntries{{UserID: 3, Entries: []feed.Entry{e(2, 20), e(1, 10)}}, {UserID: 5, Entries: []feed.Entry{e(3, 30)}}, {UserID: 10}}
		must(t, l.RestoreInboxes(ctx, ins), "RestoreInboxes")
		must(t, l.RestoreInboxes(ctx, ins), "RestoreInboxes again")
		for _, in := range ins {
			got, err := b.Inbox.Page(ctx, in.UserID, feed.Top(), 0, 10)
			must(t, err, "Page")
			if fmtEntries(got) != fmtEntries(in.Entries) {
				t.Fatalf("inbox of %d: %s, want %s", in.UserID, fmtEntries(got), fmtEntries(in.Entries))
			}
		}
	}
}

// testImportComments is TestImportStore's part of ImportComments, on the
// imported posts 50 (by user 5) and 100 (by user 10) and the users 3, 5
// and 10; ownUser is a user of the store's own.
func testImportComments(t *testing.T, b *Backend, st feed.ImportStore, now time.Time, commit func(string, int64) feed.ImportCommit,
	wantSkips func(string, ...feed.ImportSkip), ownUser int64) {
	t.Helper()
	ctx := context.Background()
	comment := func(id, post, user, parent, answer int64, status feed.CommentStatus, minute int) *feed.Comment {
		at := now.Add(time.Duration(minute) * time.Minute)
		return &feed.Comment{ID: id, PostID: post, UserID: user, ParentID: parent, AnswerID: answer, Text: fmt.Sprintf("comment %d", id),
			Liked: int(id % 7), Status: status, CreatedAt: at, UpdatedAt: at.Add(time.Second)}
	}
	notices := func() int {
		ns, ok := st.(feed.NotifyStore)
		if !ok {
			return 0
		}
		n := 0
		for _, u := range []int64{3, 5, 10} {
			gs, err := ns.Notifications(ctx, u, feed.Top(), now.Add(time.Hour), 100)
			must(t, err, "Notifications")
			n += len(gs)
		}
		return n
	}
	before := notices()
	counts := func(what string, posts map[int64]int, replies map[int64]int) {
		t.Helper()
		for id, want := range posts {
			if p, err := b.Posts.Post(ctx, id); err != nil || p.Comments != want {
				t.Fatalf("%s: post %d has %d comments (%v), want %d", what, id, p.Comments, err, want)
			}
		}
		for id, want := range replies {
			if c, err := b.Comments.Comment(ctx, id); err != nil || c.Replies != want {
				t.Fatalf("%s: comment %d has %d replies (%v), want %d", what, id, c.Replies, err, want)
			}
		}
	}

	// A thread on post 50 (a reply to a reply in it), a top-level comment
	// on post 100, reported and hidden ones.
	batch := []*feed.Comment{comment(300, 50, 3, 0, 0, feed.CommentNormal, 10), comment(301, 50, 10, 300, 300, feed.CommentReported, 11),
		comment(302, 50, 5, 300, 301, feed.CommentNormal, 12), comment(310, 100, 3, 0, 0, feed.CommentHidden, 13)}
	must(t, st.ImportComments(ctx, batch, commit("tb_blog_comments", 310)), "ImportComments")
	wantSkips("comments")
	counts("comments", map[int64]int{50: 3, 100: 1}, map[int64]int{300: 2, 310: 0})
	got, err := st.Comments(ctx, []int64{300, 301, 302, 310, 999})
	must(t, err, "Comments")
	if len(got) != 4 {
		t.Fatalf("Comments: %d of the 4 imported", len(got))
	}
	for _, w := range batch {
		g := got[w.ID]
		if g == nil || g.PostID != w.PostID || g.UserID != w.UserID || g.ParentID != w.ParentID || g.AnswerID != w.AnswerID || g.Text != w.Text ||
			g.Liked != w.Liked || g.Status != w.Status || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) || g.Deleted || g.AuthorHidden {
			t.Fatalf("imported comment %+v, want %+v", g, w)
		}
	}
	if replies, err := b.Comments.Replies(ctx, 300, feed.Entry{}, 10); err != nil || len(replies) != 2 || replies[0].ID != 301 || replies[1].ID != 302 {
		t.Fatalf("replies of 300: %v %v", replies, err)
	}
	if list, err := b.Comments.ReportedComments(ctx, 0, 10); err != nil || len(list) != 2 || list[0].CommentID != 310 || list[1].CommentID != 301 {
		t.Fatalf("the moderation list: %+v %v, want the hidden 310 and the reported 301", list, err)
	}
	if n := notices(); n != before {
		t.Fatalf("importing comments made %d notifications", n-before)
	}

	// feedd's own comments continue above the imported ones; an imported
	// comment with the id of one of them is skipped.
	mine := &feed.Comment{PostID: 100, UserID: ownUser, Text: "mine", CreatedAt: now, UpdatedAt: now}
	must(t, b.Comments.CreateComment(ctx, mine), "CreateComment")
	if mine.ID <= 310 {
		t.Fatalf("a comment made after the import got id %d, not above the imported 310", mine.ID)
	}
	// The thread's top-level comment deleted: a placeholder, counted no more.
	_, err = b.Comments.DeleteComment(ctx, 300, now)
	must(t, err, "DeleteComment")
	counts("a thread's top-level comment deleted", map[int64]int{50: 2, 100: 2}, nil)
	must(t, st.ImportComments(ctx, []*feed.Comment{comment(mine.ID, 100, 5, 0, 0, feed.CommentNormal, 14), comment(mine.ID+1, 50, 10, 300, 302, feed.CommentNormal, 15)},
		commit("tb_blog_comments", mine.ID+1)), "ImportComments")
	wantSkips("a comment whose id is taken", feed.ImportSkip{Index: 0, Reason: feed.SkipIDTaken})
	counts("comments again", map[int64]int{50: 3, 100: 2}, map[int64]int{300: 3})
	if c, err := b.Comments.Comment(ctx, mine.ID); err != nil || c.Text != "mine" || c.UserID != ownUser {
		t.Fatalf("the store's own comment %d: %+v %v", mine.ID, c, err)
	}
}

// BenchImportFollows measures ImportFollows: n follows among users
// 1..users in random order (as tb_follow's ids order them), in batches of
// batch, into the empty store open returns each time. It reports rows/s,
// and rows per CPU second of this process (the embedded store's work,
// which a shared machine's load does not change).
func BenchImportFollows(b *testing.B, open func(b *testing.B) feed.ImportStore, n, users, batch int) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[[2]int64]bool{}
	var fs []feed.ImportFollow
	for len(fs) < n {
		a, c := 1+rng.Int64N(int64(users)), 1+rng.Int64N(int64(users))
		if a == c || seen[[2]int64{a, c}] {
			continue
		}
		seen[[2]int64{a, c}] = true
		fs = append(fs, feed.ImportFollow{FollowerID: a, FolloweeID: c, CreatedAt: time.UnixMilli(1_700_000_000_000)})
	}
	nop := func([]feed.ImportSkip) []feed.ImportCheckpoint { return nil }
	ctx := context.Background()
	var secs, cpu float64
	for range b.N {
		st := open(b)
		t0, c0 := time.Now(), cpuTime()
		for lo := 0; lo < len(fs); lo += batch {
			if err := st.ImportFollows(ctx, fs[lo:min(lo+batch, len(fs))], nop); err != nil {
				b.Fatal(err)
			}
		}
		secs += time.Since(t0).Seconds()
		cpu += (cpuTime() - c0).Seconds()
	}
	b.ReportMetric(float64(n*b.N)/secs, "rows/s")
	b.ReportMetric(float64(n*b.N)/cpu, "rows/cpu-s")
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
