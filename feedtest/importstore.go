package feedtest

import (
	"context"
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
// all, like counts follow the likes imported, and FinishImport makes the
// counts and pull mode true.
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
