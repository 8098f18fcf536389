package feedtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// Backend is one backend's stores, as the suites use them.
type Backend struct {
	Users   feed.UserStore
	Auth    feed.AuthStore
	Posts   feed.PostStore
	Follows feed.FollowStore
	Inbox   feed.Inbox
	// Social must be the store behind Users and Follows.
	Social feed.SocialStore
	Outbox feed.Outbox
	// Filters, Ranks and Snapshots are the stores of the content filters
	// and the ranked timeline (TestFilters).
	Filters   feed.FilterStore
	Ranks     feed.RankStore
	Snapshots feed.SnapshotStore
	// SessionPages, when not nil, is the store that reads a session and an
	// inbox page in one round trip (feed.Service.SessionPages); the feed
	// suites then scroll through it too (ScrollFeedAs).
	SessionPages feed.SessionPager
	// Jobs returns the jobs that the stores enqueued in their transactions
	// since the last call, and forgets them.
	Jobs func() []feed.Job
}

// TestStores runs the contract of the store interfaces. open must return a
// backend with no users, posts or jobs on every call.
func TestStores(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("Users", func(t *testing.T) { testUsers(t, open(t)) })
	t.Run("Codes", func(t *testing.T) { testCodes(t, open(t)) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, open(t)) })
	t.Run("SessionSweepClock", func(t *testing.T) { testSessionSweepClock(t, open(t)) })
	t.Run("CreatePost", func(t *testing.T) { testCreatePost(t, open(t)) })
	t.Run("DeletePost", func(t *testing.T) { testDeletePost(t, open(t)) })
	t.Run("PostsOfUser", func(t *testing.T) { testPostsOfUser(t, open(t)) })
	t.Run("Likes", func(t *testing.T) { testLikes(t, open(t)) })
	t.Run("SetLike", func(t *testing.T) { testSetLike(t, open(t)) })
	t.Run("HotPosts", func(t *testing.T) { testHotPosts(t, open(t)) })
	t.Run("Follows", func(t *testing.T) { testFollows(t, open(t)) })
	t.Run("FollowCounts", func(t *testing.T) { testFollowCounts(t, open(t)) })
	t.Run("FollowersAfter", func(t *testing.T) { testFollowersAfter(t, open(t)) })
	t.Run("CommonFollowees", func(t *testing.T) { testCommonFollowees(t, open(t)) })
}

// base is the suites' "now": close to the real clock (a backend may expire
// keys by it), at millisecond precision, as the stores keep times.
func base() time.Time { return time.Now().Truncate(time.Millisecond) }

// phone returns a distinct valid phone number for i.
func phone(i int) string { return fmt.Sprintf("138%08d", i) }

func newUser(t testing.TB, b *Backend, i int, now time.Time) *feed.User {
	t.Helper()
	u, err := b.Users.FindOrCreateUser(context.Background(), phone(i), fmt.Sprintf("user_%d", i), now)
	must(t, err, "FindOrCreateUser")
	return u
}

func newUsers(t testing.TB, b *Backend, n int, now time.Time) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = newUser(t, b, 1000+i, now).ID
	}
	return ids
}

func newPost(t testing.TB, b *Backend, userID int64, at time.Time, title string) *feed.Post {
	t.Helper()
	at = at.Truncate(time.Millisecond)
	p := &feed.Post{UserID: userID, Title: title, Content: "content of " + title, CreatedAt: at, UpdatedAt: at}
	must(t, b.Posts.CreatePost(context.Background(), p), "CreatePost")
	return p
}

func getUser(t testing.TB, b *Backend, id int64) *feed.User {
	t.Helper()
	u, err := b.Users.User(context.Background(), id)
	must(t, err, fmt.Sprintf("User(%d)", id))
	return u
}

func getPost(t testing.TB, b *Backend, id int64) *feed.Post {
	t.Helper()
	p, err := b.Posts.Post(context.Background(), id)
	must(t, err, fmt.Sprintf("Post(%d)", id))
	return p
}

func wantNoJobs(t testing.TB, b *Backend, what string) {
	t.Helper()
	if jobs := b.Jobs(); len(jobs) != 0 {
		t.Fatalf("%s enqueued %v, want no job", what, jobs)
	}
}

func wantIDs(t testing.TB, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func testUsers(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u, err := b.Users.FindOrCreateUser(ctx, "13800000001", "user_first", now)
	must(t, err, "FindOrCreateUser")
	if u.ID <= 0 || u.Phone != "13800000001" || u.NickName != "user_first" || u.Icon != "" || u.Fans != 0 || u.Followee != 0 {
		t.Fatalf("new user = %+v", u)
	}
	if !u.CreatedAt.Equal(now) {
		t.Fatalf("CreatedAt = %v, want %v", u.CreatedAt, now)
	}
	again, err := b.Users.FindOrCreateUser(ctx, "13800000001", "user_second", now.Add(time.Hour))
	must(t, err, "FindOrCreateUser again")
	if again.ID != u.ID || again.NickName != "user_first" || !again.CreatedAt.Equal(now) {
		t.Fatalf("second FindOrCreateUser of a phone = %+v, want the first user %+v", again, u)
	}
	v, err := b.Users.FindOrCreateUser(ctx, "13900000002", "user_other", now)
	must(t, err, "FindOrCreateUser")
	if v.ID == u.ID || v.ID <= 0 {
		t.Fatalf("second phone got id %d (first %d)", v.ID, u.ID)
	}
	got := getUser(t, b, u.ID)
	if got.ID != u.ID || got.Phone != u.Phone || got.NickName != u.NickName || !got.CreatedAt.Equal(now) {
		t.Fatalf("User(%d) = %+v, want %+v", u.ID, got, u)
	}
	missing := v.ID + u.ID + 1000
	_, err = b.Users.User(ctx, missing)
	wantCode(t, err, feed.ENOTFOUND, "User of a missing id")
	m, err := b.Users.Users(ctx, []int64{u.ID, missing, v.ID, u.ID})
	must(t, err, "Users")
	if len(m) != 2 || m[u.ID] == nil || m[v.ID] == nil || m[u.ID].NickName != "user_first" || m[v.ID].NickName != "user_other" {
		t.Fatalf("Users = %v, want users %d and %d", m, u.ID, v.ID)
	}
	m, err = b.Users.Users(ctx, nil)
	must(t, err, "Users of none")
	if len(m) != 0 {
		t.Fatalf("Users(nil) = %v", m)
	}
	// Concurrent first logins of one phone create one user.
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			u, err := b.Users.FindOrCreateUser(ctx, "13700000003", fmt.Sprintf("user_c%d", i), now)
			if err == nil {
				ids[i] = u.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range ids {
		must(t, errs[i], "concurrent FindOrCreateUser")
		if ids[i] != ids[0] {
			t.Fatalf("concurrent FindOrCreateUser of one phone returned ids %v", ids)
		}
	}
}

func testCodes(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	const ttl, resend, tries = 2 * time.Minute, 60 * time.Second, 5
	save := func(phone, code string, at time.Duration) error {
		return b.Auth.SaveCode(ctx, phone, feed.HashSecret(phone, code), now.Add(at), ttl, resend)
	}
	consume := func(phone, code string, at time.Duration) error {
		return b.Auth.ConsumeCode(ctx, phone, feed.HashSecret(phone, code), now.Add(at), tries)
	}

	// Resend refused within resendAfter, and the refusal changes nothing.
	a := phone(1)
	must(t, save(a, "111111", 0), "SaveCode")
	wantCode(t, save(a, "222222", 30*time.Second), feed.ECONFLICT, "SaveCode 30 s after the last")
	wantCode(t, save(a, "222222", resend-time.Millisecond), feed.ECONFLICT, "SaveCode just before resendAfter")
	wantCode(t, consume(a, "222222", 31*time.Second), feed.EINVALID, "ConsumeCode of the refused code")
	// After resendAfter a new code replaces the old one (and its tries).
	must(t, save(a, "333333", resend+time.Second), "SaveCode after resendAfter")
	wantCode(t, consume(a, "111111", resend+2*time.Second), feed.EINVALID, "ConsumeCode of the replaced code")
	must(t, consume(a, "333333", resend+3*time.Second), "ConsumeCode of the new code")
	wantCode(t, consume(a, "333333", resend+4*time.Second), feed.EINVALID, "second ConsumeCode of a used code")

	// No code at all.
	wantCode(t, consume(phone(2), "123456", 0), feed.EINVALID, "ConsumeCode without a code")

	// Wrong tries are counted: the right code still works after maxTries-1.
	c := phone(3)
	must(t, save(c, "424242", 0), "SaveCode")
	for i := 0; i < tries-1; i++ {
		wantCode(t, consume(c, "000000", time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(c, "424242", 2*time.Second), "ConsumeCode after 4 wrong tries")

	// maxTries wrong tries burn the code: the right one is refused too.
	d := phone(4)
	must(t, save(d, "424242", 0), "SaveCode")
	for i := 0; i < tries; i++ {
		wantCode(t, consume(d, fmt.Sprintf("00000%d", i), time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	wantCode(t, consume(d, "424242", 2*time.Second), feed.EINVALID, "ConsumeCode of a burned code")
	// A burned code does not hold the resend rule: the owner may ask for a
	// new code at once, and it starts with no tries counted.
	must(t, save(d, "515151", 3*time.Second), "SaveCode at once after burning")
	for i := 0; i < tries-1; i++ {
		wantCode(t, consume(d, "000000", 4*time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(d, "515151", 5*time.Second), "ConsumeCode of the new code")

	// Tries of one phone do not count against another.
	e, f := phone(5), phone(6)
	must(t, save(e, "111111", 0), "SaveCode")
	must(t, save(f, "111111", 0), "SaveCode")
	for i := 0; i < tries; i++ {
		wantCode(t, consume(e, "999999", time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(f, "111111", 2*time.Second), "ConsumeCode of another phone")

	// Expiry: live just before ttl, refused after it.
	g, h := phone(7), phone(8)
	must(t, save(g, "777777", 0), "SaveCode")
	must(t, save(h, "888888", 0), "SaveCode")
	must(t, consume(g, "777777", ttl-time.Second), "ConsumeCode just before expiry")
	wantCode(t, consume(h, "888888", ttl+time.Second), feed.EINVALID, "ConsumeCode of an expired code")
	// An expired code does not block a new one.
	must(t, save(h, "999999", ttl+2*time.Second), "SaveCode after expiry")
	must(t, consume(h, "999999", ttl+3*time.Second), "ConsumeCode of the new code")
}

func testSessions(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	const ttl = 30 * time.Minute
	u := newUser(t, b, 1, now)
	v := newUser(t, b, 2, now)
	session := func(token string, at time.Duration) (int64, error) {
		return b.Auth.Session(ctx, feed.HashSecret(token), now.Add(at), ttl)
	}
	create := func(token string, userID int64, expires time.Duration) {
		t.Helper()
		must(t, b.Auth.CreateSession(ctx, feed.HashSecret(token), userID, now, now.Add(expires)), "CreateSession")
	}

	create("tok-a", u.ID, ttl)
	create("tok-b", v.ID, ttl)
	id, err := session("tok-a", time.Minute)
	must(t, err, "Session")
	if id != u.ID {
		t.Fatalf("Session(tok-a) = user %d, want %d", id, u.ID)
	}
	id, err = session("tok-b", time.Minute)
	must(t, err, "Session")
	if id != v.ID {
		t.Fatalf("Session(tok-b) = user %d, want %d", id, v.ID)
	}
	_, err = session("tok-unknown", time.Minute)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session of an unknown token")

	// Expiry without use.
	create("tok-c", u.ID, ttl)
	_, err = session("tok-c", ttl+time.Second)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session after its expiry")

	// Sliding: a use 20 minutes in keeps the session alive past its first
	// expiry, and it expires ttl after the last use.
	create("tok-d", u.ID, ttl)
	_, err = session("tok-d", 20*time.Minute)
	must(t, err, "Session at 20 min")
	_, err = session("tok-d", 45*time.Minute)
	must(t, err, "Session at 45 min (slid from the use at 20 min)")
	_, err = session("tok-d", 45*time.Minute+ttl+time.Second)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session ttl after its last use")

	// Delete, idempotently; other sessions of the user live on.
	create("tok-e", u.ID, ttl)
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-a")), "DeleteSession")
	_, err = session("tok-a", 2*time.Minute)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session after DeleteSession")
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-a")), "DeleteSession again")
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-never")), "DeleteSession of an unknown token")
	id, err = session("tok-e", 2*time.Minute)
	must(t, err, "Session of another token of the user")
	if id != u.ID {
		t.Fatalf("Session(tok-e) = user %d, want %d", id, u.ID)
	}
}

// testSessionSweepClock: the sweep of expired sessions that CreateSession
// does judges expiry by the caller's clock, as Session does, not by the
// machine's. Here the service's clock is two days behind the machine's: by
// the machine's clock every session has long expired, by the service's each
// is live, and creating one must not sweep the others.
func testSessionSweepClock(t *testing.T, b *Backend) {
	ctx := t.Context()
	const ttl = 30 * time.Minute
	now := base().Add(-48 * time.Hour)
	u := newUser(t, b, 1, now)
	var tokens []string
	for i := range 5 {
		tok := fmt.Sprintf("tok-behind-%d", i)
		at := now.Add(time.Duration(i) * time.Minute)
		must(t, b.Auth.CreateSession(ctx, feed.HashSecret(tok), u.ID, at, at.Add(ttl)), "CreateSession")
		tokens = append(tokens, tok)
	}
	for _, tok := range tokens {
		id, err := b.Auth.Session(ctx, feed.HashSecret(tok), now.Add(6*time.Minute), ttl)
		must(t, err, fmt.Sprintf("Session(%s) 6 minutes in, after later logins", tok))
		if id != u.ID {
			t.Fatalf("Session(%s) = user %d, want %d", tok, id, u.ID)
		}
	}
	// By the service's clock they do expire: ttl after their last use.
	late := now.Add(6*time.Minute + ttl + time.Second)
	must(t, b.Auth.CreateSession(ctx, feed.HashSecret("tok-late"), u.ID, late, late.Add(ttl)), "CreateSession")
	for _, tok := range tokens {
		_, err := b.Auth.Session(ctx, feed.HashSecret(tok), late, ttl)
		wantCode(t, err, feed.EUNAUTHORIZED, fmt.Sprintf("Session(%s) after its expiry by the service's clock", tok))
	}
	id, err := b.Auth.Session(ctx, feed.HashSecret("tok-late"), late.Add(time.Minute), ttl)
	must(t, err, "Session(tok-late)")
	if id != u.ID {
		t.Fatalf("Session(tok-late) = user %d, want %d", id, u.ID)
	}
}

func wantPost(t testing.TB, got, want *feed.Post) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.ShopID != want.ShopID || got.Title != want.Title ||
		got.Content != want.Content || got.Images != want.Images || got.Liked != want.Liked || got.Comments != want.Comments ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("post %d:\n got %+v\nwant %+v", want.ID, got, want)
	}
	if got.Score() != want.Score() {
		t.Fatalf("post %d: Score %d, want %d", want.ID, got.Score(), want.Score())
	}
}

func testCreatePost(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := newUser(t, b, 1, now)
	b.Jobs()
	var posts []*feed.Post
	var last int64
	for i := 0; i < 5; i++ {
		at := now.Add(time.Duration(i/2) * time.Millisecond) // two posts per millisecond
		p := &feed.Post{UserID: u.ID, ShopID: int64(i), Title: fmt.Sprintf("title %d", i), Content: "a <b>bold</b> & \"quoted\" line\nand 中文",
			Images: "/a.png,/b.png", CreatedAt: at, UpdatedAt: at}
		must(t, b.Posts.CreatePost(ctx, p), "CreatePost")
		if p.ID <= last {
			t.Fatalf("CreatePost set id %d after id %d: ids must increase", p.ID, last)
		}
		last = p.ID
		jobs := b.Jobs()
		want := feed.FanoutJob{PostID: p.ID, AuthorID: u.ID, Score: at.UnixMilli()}
		if len(jobs) != 1 || jobs[0] != any(want) {
			t.Fatalf("CreatePost enqueued %#v, want exactly %#v", jobs, want)
		}
		posts = append(posts, p)
	}
	for _, p := range posts {
		wantPost(t, getPost(t, b, p.ID), p)
	}
	_, err := b.Posts.Post(ctx, last+100)
	wantCode(t, err, feed.ENOTFOUND, "Post of a missing id")
	m, err := b.Posts.Posts(ctx, []int64{posts[3].ID, last + 100, posts[0].ID})
	must(t, err, "Posts")
	if len(m) != 2 || m[posts[3].ID] == nil || m[posts[0].ID] == nil {
		t.Fatalf("Posts = %v, want posts %d and %d", m, posts[3].ID, posts[0].ID)
	}
	wantPost(t, m[posts[3].ID], posts[3])
	m, err = b.Posts.Posts(ctx, nil)
	must(t, err, "Posts of none")
	if len(m) != 0 {
		t.Fatalf("Posts(nil) = %v", m)
	}
}

func testDeletePost(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	author := newUser(t, b, 1, now)
	other := newUser(t, b, 2, now)
	p := newPost(t, b, author.ID, now, "to delete")
	q := newPost(t, b, author.ID, now.Add(time.Millisecond), "to keep")
	for _, u := range []int64{author.ID, other.ID} {
		_, err := b.Posts.ToggleLike(ctx, p.ID, u, now)
		must(t, err, "ToggleLike")
	}
	_, err := b.Posts.ToggleLike(ctx, q.ID, other.ID, now)
	must(t, err, "ToggleLike")
	b.Jobs()

	wantCode(t, b.Posts.DeletePost(ctx, q.ID+100, author.ID), feed.ENOTFOUND, "DeletePost of a missing post")
	wantNoJobs(t, b, "a refused DeletePost")
	wantCode(t, b.Posts.DeletePost(ctx, p.ID, other.ID), feed.EFORBIDDEN, "DeletePost by another user")
	wantNoJobs(t, b, "a refused DeletePost")
	if got := getPost(t, b, p.ID); got.Liked != 2 {
		t.Fatalf("after a refused delete the post has %d likes, want 2", got.Liked)
	}
	if ids, err := b.Posts.Likers(ctx, p.ID, 10); err != nil || len(ids) != 2 {
		t.Fatalf("after a refused delete Likers = %v, %v; want 2 likers", ids, err)
	}

	must(t, b.Posts.DeletePost(ctx, p.ID, author.ID), "DeletePost")
	jobs := b.Jobs()
	want := feed.RemoveJob{PostID: p.ID, AuthorID: author.ID, Score: p.Score()}
	if len(jobs) != 1 || jobs[0] != any(want) {
		t.Fatalf("DeletePost enqueued %#v, want exactly %#v", jobs, want)
	}
	_, err = b.Posts.Post(ctx, p.ID)
	wantCode(t, err, feed.ENOTFOUND, "Post after DeletePost")
	if m, err := b.Posts.Posts(ctx, []int64{p.ID, q.ID}); err != nil || len(m) != 1 || m[q.ID] == nil {
		t.Fatalf("Posts after DeletePost = %v, %v; want only post %d", m, err, q.ID)
	}
	if ids, err := b.Posts.Likers(ctx, p.ID, 10); err != nil || len(ids) != 0 {
		t.Fatalf("Likers of a deleted post = %v, %v; want none", ids, err)
	}
	liked, err := b.Posts.LikedBy(ctx, other.ID, []int64{p.ID, q.ID})
	must(t, err, "LikedBy")
	if liked[p.ID] || !liked[q.ID] {
		t.Fatalf("LikedBy after DeletePost = %v, want only post %d", liked, q.ID)
	}
	posts, err := b.Posts.PostsOfUser(ctx, author.ID, 0, 10)
	must(t, err, "PostsOfUser")
	if len(posts) != 1 || posts[0].ID != q.ID {
		t.Fatalf("PostsOfUser after DeletePost has %d posts, want only post %d", len(posts), q.ID)
	}
	if got := getPost(t, b, q.ID); got.Liked != 1 {
		t.Fatalf("the other post has %d likes, want 1", got.Liked)
	}
	wantCode(t, b.Posts.DeletePost(ctx, p.ID, author.ID), feed.ENOTFOUND, "DeletePost again")
	wantNoJobs(t, b, "a second DeletePost")
	_, err = b.Posts.ToggleLike(ctx, p.ID, other.ID, now)
	wantCode(t, err, feed.ENOTFOUND, "ToggleLike of a deleted post")
}

func postIDs(posts []*feed.Post) []int64 {
	ids := make([]int64, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	return ids
}

func testPostsOfUser(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := newUser(t, b, 1, now)
	v := newUser(t, b, 2, now)
	var mine []*feed.Post
	for i := 0; i < 25; i++ {
		// Out of creation order, with ties: the i-th post at i/3 ms, and
		// every fifth one older than all.
		at := now.Add(time.Duration(i/3) * time.Millisecond)
		if i%5 == 0 {
			at = now.Add(-time.Duration(i) * time.Millisecond)
		}
		mine = append(mine, newPost(t, b, u.ID, at, fmt.Sprintf("mine %d", i)))
		newPost(t, b, v.ID, at, fmt.Sprintf("theirs %d", i))
	}
	want := slices.Clone(mine)
	slices.SortFunc(want, func(a, b *feed.Post) int {
		return a.Entry().Compare(b.Entry())
	})
	var got []*feed.Post
	for off := 0; ; off += 10 {
		page, err := b.Posts.PostsOfUser(ctx, u.ID, off, 10)
		must(t, err, "PostsOfUser")
		if len(page) > 10 {
			t.Fatalf("PostsOfUser returned %d posts, limit 10", len(page))
		}
		got = append(got, page...)
		if len(page) < 10 {
			break
		}
	}
	wantIDs(t, "PostsOfUser, newest first", postIDs(got), postIDs(want))
	for i := range got {
		wantPost(t, got[i], want[i])
	}
	page, err := b.Posts.PostsOfUser(ctx, u.ID, 7, 3)
	must(t, err, "PostsOfUser")
	wantIDs(t, "PostsOfUser(offset 7, limit 3)", postIDs(page), postIDs(want[7:10]))
	page, err = b.Posts.PostsOfUser(ctx, v.ID+1000, 0, 10)
	must(t, err, "PostsOfUser of a missing user")
	if len(page) != 0 {
		t.Fatalf("PostsOfUser of a user without posts = %v", postIDs(page))
	}

	// Keyset pages: every page size walks the same order, each post once;
	// a post published between two pages (newer than the cursor) is not in
	// the rest of the walk.
	walk := func(size int, mid func()) []*feed.Post {
		var walked []*feed.Post
		bound := feed.Top()
		for i := 0; i <= len(want); i++ {
			page, err := b.Posts.PostsOfUserWithin(ctx, u.ID, bound, size)
			must(t, err, "PostsOfUserWithin")
			if len(page) > size {
				t.Fatalf("PostsOfUserWithin returned %d posts, limit %d", len(page), size)
			}
			walked = append(walked, page...)
			if len(page) < size {
				break
			}
			bound = feed.After(page[len(page)-1].Entry())
			if i == 0 && mid != nil {
				mid()
			}
		}
		return walked
	}
	for _, size := range []int{1, 7, 25, 30} {
		wantIDs(t, fmt.Sprintf("PostsOfUserWithin, pages of %d", size), postIDs(walk(size, nil)), postIDs(want))
	}
	newer := func() { newPost(t, b, u.ID, now.Add(time.Hour), "published mid-walk") }
	wantIDs(t, "PostsOfUserWithin, a post published mid-walk", postIDs(walk(4, newer)), postIDs(want))
	page, err = b.Posts.PostsOfUserWithin(ctx, v.ID+1000, feed.Top(), 10)
	must(t, err, "PostsOfUserWithin of a missing user")
	if len(page) != 0 {
		t.Fatalf("PostsOfUserWithin of a user without posts = %v", postIDs(page))
	}
}

func testLikes(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	author := newUser(t, b, 1, now)
	users := newUsers(t, b, 7, now)
	p := newPost(t, b, author.ID, now, "liked")
	q := newPost(t, b, author.ID, now, "other")
	r := newPost(t, b, author.ID, now, "unliked")
	toggle := func(post, user int64, at time.Duration, want bool) {
		t.Helper()
		got, err := b.Posts.ToggleLike(ctx, post, user, now.Add(at))
		must(t, err, "ToggleLike")
		if got != want {
			t.Fatalf("ToggleLike(post %d, user %d) = %v, want %v", post, user, got, want)
		}
	}
	wantLiked := func(post int64, n int) {
		t.Helper()
		if got := getPost(t, b, post).Liked; got != n {
			t.Fatalf("post %d has Liked %d, want %d", post, got, n)
		}
	}
	// users[3], [1], [5], [0], [6], [2] like p in that order.
	order := []int{3, 1, 5, 0, 6, 2}
	for i, k := range order {
		toggle(p.ID, users[k], time.Duration(i)*time.Second, true)
		wantLiked(p.ID, i+1)
	}
	toggle(q.ID, users[1], 0, true)
	wantLiked(q.ID, 1)
	likers, err := b.Posts.Likers(ctx, p.ID, 5)
	must(t, err, "Likers")
	wantIDs(t, "Likers(limit 5), earliest first", likers, []int64{users[3], users[1], users[5], users[0], users[6]})
	likers, err = b.Posts.Likers(ctx, p.ID, 2)
	must(t, err, "Likers")
	wantIDs(t, "Likers(limit 2)", likers, []int64{users[3], users[1]})

	// Unlike flips back; a like again counts from its new time.
	toggle(p.ID, users[1], 10*time.Second, false)
	wantLiked(p.ID, 5)
	likers, err = b.Posts.Likers(ctx, p.ID, 10)
	must(t, err, "Likers")
	wantIDs(t, "Likers after an unlike", likers, []int64{users[3], users[5], users[0], users[6], users[2]})
	toggle(p.ID, users[1], 11*time.Second, true)
	wantLiked(p.ID, 6)
	likers, err = b.Posts.Likers(ctx, p.ID, 10)
	must(t, err, "Likers")
	wantIDs(t, "Likers after a like again", likers, []int64{users[3], users[5], users[0], users[6], users[2], users[1]})
	likers, err = b.Posts.Likers(ctx, r.ID, 5)
	must(t, err, "Likers")
	wantIDs(t, "Likers of an unliked post", likers, nil)
	wantLiked(q.ID, 1)
	wantLiked(r.ID, 0)

	liked, err := b.Posts.LikedBy(ctx, users[1], []int64{p.ID, q.ID, r.ID, r.ID + 100})
	must(t, err, "LikedBy")
	if !liked[p.ID] || !liked[q.ID] || liked[r.ID] || liked[r.ID+100] {
		t.Fatalf("LikedBy(user %d) = %v, want posts %d and %d", users[1], liked, p.ID, q.ID)
	}
	liked, err = b.Posts.LikedBy(ctx, users[4], []int64{p.ID, q.ID})
	must(t, err, "LikedBy")
	if liked[p.ID] || liked[q.ID] {
		t.Fatalf("LikedBy of a user who likes nothing = %v", liked)
	}
	liked, err = b.Posts.LikedBy(ctx, users[1], nil)
	must(t, err, "LikedBy of no posts")
	if len(liked) != 0 {
		t.Fatalf("LikedBy(nil) = %v", liked)
	}

	_, err = b.Posts.ToggleLike(ctx, r.ID+100, users[0], now)
	wantCode(t, err, feed.ENOTFOUND, "ToggleLike of a missing post")

	// Concurrent toggles keep the count in step with the likes.
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(users))
	for _, u := range users {
		for range 3 { // an odd number of toggles per user: each ends liked
			wg.Go(func() {
				_, err := b.Posts.ToggleLike(ctx, r.ID, u, now)
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "concurrent ToggleLike")
	}
	wantLiked(r.ID, len(users))
	likers, err = b.Posts.Likers(ctx, r.ID, 100)
	must(t, err, "Likers")
	if len(likers) != len(users) {
		t.Fatalf("after concurrent toggles: Likers = %v, want all %d users", likers, len(users))
	}
}

// racingReads is a PostStore whose LikedBy, once it has read, waits until n
// calls have read (or a second passed), so that concurrent callers all read
// before any of them writes.
type racingReads struct {
	feed.PostStore
	n int

	mu      sync.Mutex
	waiting int
	all     chan struct{}
}

func (r *racingReads) LikedBy(ctx context.Context, userID int64, postIDs []int64) (map[int64]bool, error) {
	liked, err := r.PostStore.LikedBy(ctx, userID, postIDs)
	r.mu.Lock()
	if r.all == nil {
		r.all = make(chan struct{})
	}
	all := r.all
	if r.waiting++; r.waiting == r.n {
		close(all)
		r.all, r.waiting = nil, 0
	}
	r.mu.Unlock()
	select {
	case <-all:
	case <-time.After(time.Second):
	}
	return liked, err
}

// testSetLike: SetLike sets a like rather than flipping it, so repeated and
// concurrent calls of one user agree; the count moves only when the like
// changes. Service.SetLike (PUT and DELETE /v1/posts/{id}/like) is checked
// the same way, since it had read the like and then toggled it.
func testSetLike(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	author := newUser(t, b, 1, now)
	users := newUsers(t, b, 3, now)
	p := newPost(t, b, author.ID, now, "liked")
	q := newPost(t, b, author.ID, now, "other")
	set := func(post, user int64, like bool) {
		t.Helper()
		must(t, b.Posts.SetLike(ctx, post, user, like, now), fmt.Sprintf("SetLike(post %d, user %d, %v)", post, user, like))
	}
	want := func(post int64, likers ...int64) {
		t.Helper()
		if got := getPost(t, b, post).Liked; got != len(likers) {
			t.Fatalf("post %d has Liked %d, want %d", post, got, len(likers))
		}
		got, err := b.Posts.Likers(ctx, post, 100)
		must(t, err, "Likers")
		wantIDs(t, fmt.Sprintf("Likers of post %d", post), got, likers)
	}

	set(p.ID, users[0], true)
	want(p.ID, users[0])
	set(p.ID, users[0], true) // again: nothing changes
	want(p.ID, users[0])
	set(p.ID, users[1], true)
	set(q.ID, users[1], true)
	want(p.ID, users[0], users[1])
	want(q.ID, users[1])
	set(p.ID, users[0], false)
	want(p.ID, users[1])
	set(p.ID, users[0], false) // again
	set(p.ID, users[2], false) // never liked
	want(p.ID, users[1])
	want(q.ID, users[1])
	liked, err := b.Posts.LikedBy(ctx, users[1], []int64{p.ID, q.ID})
	must(t, err, "LikedBy")
	if !liked[p.ID] || !liked[q.ID] {
		t.Fatalf("LikedBy(user %d) = %v, want both posts", users[1], liked)
	}
	missing := q.ID + 1000
	wantCode(t, b.Posts.SetLike(ctx, missing, users[0], true, now), feed.ENOTFOUND, "SetLike(true) of a missing post")
	wantCode(t, b.Posts.SetLike(ctx, missing, users[0], false, now), feed.ENOTFOUND, "SetLike(false) of a missing post")
	// It mixes with ToggleLike: both read the like row.
	if on, err := b.Posts.ToggleLike(ctx, q.ID, users[1], now); err != nil || on {
		t.Fatalf("ToggleLike of a post set liked = %v, %v; want unliked", on, err)
	}
	want(q.ID)

	// 20 concurrent calls of one user, through the store and through the
	// service: liked once (count 1), then unliked (count 0). The service's
	// store holds reads of likes until all 20 calls are in one (the
	// interleaving that a read-then-write SetLike loses likes in).
	const n = 20
	svc := &feed.Service{Users: b.Users, Posts: &racingReads{PostStore: b.Posts, n: n}, Now: func() time.Time { return now }}
	concurrently := func(what string, call func() error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() { errs <- call() })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err, what)
		}
	}
	for _, via := range []string{"store", "service"} {
		setLike := func(like bool) error { return b.Posts.SetLike(ctx, p.ID, users[2], like, now) }
		if via == "service" {
			setLike = func(like bool) error { return svc.SetLike(ctx, users[2], p.ID, like) }
		}
		concurrently(via+": concurrent SetLike(true)", func() error { return setLike(true) })
		want(p.ID, users[1], users[2])
		concurrently(via+": concurrent SetLike(false)", func() error { return setLike(false) })
		want(p.ID, users[1])
	}
	wantCode(t, svc.SetLike(ctx, users[0], missing, true), feed.ENOTFOUND, "Service.SetLike of a missing post")
	want(q.ID)
}
func testHotPosts(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	author := newUser(t, b, 1, now)
	users := newUsers(t, b, 3, now)
	likes := []int{2, 0, 3, 2, 1, 0} // likes of p[i], created i ms after now
	var p []*feed.Post
	for i, n := range likes {
		p = append(p, newPost(t, b, author.ID, now.Add(time.Duration(i)*time.Millisecond), fmt.Sprint("hot ", i)))
		for _, u := range users[:n] {
			_, err := b.Posts.ToggleLike(ctx, p[i].ID, u, now)
			must(t, err, "ToggleLike")
		}
	}
	// A like taken back does not count.
	_, err := b.Posts.ToggleLike(ctx, p[5].ID, users[0], now)
	must(t, err, "ToggleLike")
	_, err = b.Posts.ToggleLike(ctx, p[5].ID, users[0], now)
	must(t, err, "ToggleLike")
	want := []int64{p[2].ID, p[3].ID, p[0].ID, p[4].ID, p[5].ID, p[1].ID}
	got, err := b.Posts.HotPosts(ctx, 0, 10)
	must(t, err, "HotPosts")
	wantIDs(t, "HotPosts (liked desc, then newest first)", postIDs(got), want)
	for i, post := range got {
		if post.Liked != likes[slices.Index(postIDs(p), post.ID)] {
			t.Fatalf("HotPosts[%d] has Liked %d", i, post.Liked)
		}
	}
	got, err = b.Posts.HotPosts(ctx, 2, 2)
	must(t, err, "HotPosts")
	wantIDs(t, "HotPosts(offset 2, limit 2)", postIDs(got), want[2:4])
	got, err = b.Posts.HotPosts(ctx, 6, 10)
	must(t, err, "HotPosts")
	wantIDs(t, "HotPosts past the end", postIDs(got), nil)
}

func wantCounts(t testing.TB, b *Backend, id int64, fans, followee int) {
	t.Helper()
	u := getUser(t, b, id)
	if u.Fans != fans || u.Followee != followee {
		t.Fatalf("user %d has fans %d, followee %d; want %d, %d", id, u.Fans, u.Followee, fans, followee)
	}
}

func isFollowing(t testing.TB, b *Backend, a, c int64) bool {
	t.Helper()
	ok, err := b.Follows.IsFollowing(context.Background(), a, c)
	must(t, err, "IsFollowing")
	return ok
}

// wantFollowJobs fails t unless the jobs enqueued since the last call are
// exactly want, in any order.
func wantFollowJobs(t testing.TB, b *Backend, what string, want ...feed.FollowJob) {
	t.Helper()
	got := b.Jobs()
	key := func(j any) string { return fmt.Sprintf("%#v", j) }
	g := make([]string, len(got))
	for i, j := range got {
		g[i] = key(j)
	}
	w := make([]string, len(want))
	for i, j := range want {
		w[i] = key(j)
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s enqueued %v, want %v", what, g, w)
	}
}

func testFollows(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 3, now)
	a, c, d := ids[0], ids[1], ids[2]
	b.Jobs()
	// follow changes the follow and checks the FollowJob it enqueued: one
	// when the follow row changed, none when it was already in that state.
	follow := func(x, y int64, on, changes bool) {
		t.Helper()
		what := fmt.Sprintf("SetFollow(%d, %d, %v)", x, y, on)
		must(t, b.Follows.SetFollow(ctx, x, y, on, now), what)
		if changes {
			wantFollowJobs(t, b, what, feed.FollowJob{FollowerID: x, FolloweeID: y, Follow: on})
		} else {
			wantFollowJobs(t, b, what+" (no change)")
		}
	}
	follow(a, c, true, true)
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	if !isFollowing(t, b, a, c) || isFollowing(t, b, c, a) {
		t.Fatalf("IsFollowing after a follows c: a→c %v, c→a %v", isFollowing(t, b, a, c), isFollowing(t, b, c, a))
	}
	follow(a, c, true, false) // idempotent: counted once, no second job
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, c, 1, 0)
	follow(d, c, true, true)
	follow(c, a, true, true)
	wantCounts(t, b, a, 1, 1)
	wantCounts(t, b, c, 2, 1)
	wantCounts(t, b, d, 0, 1)
	follow(a, c, false, true)
	wantCounts(t, b, a, 1, 0)
	wantCounts(t, b, c, 1, 1)
	if isFollowing(t, b, a, c) {
		t.Fatal("IsFollowing after unfollow = true")
	}
	follow(a, c, false, false) // idempotent: never below zero
	follow(a, d, false, false) // never followed
	wantCounts(t, b, a, 1, 0)
	wantCounts(t, b, c, 1, 1)
	wantCounts(t, b, d, 0, 1)

	missing := d + 1000
	wantCode(t, b.Follows.SetFollow(ctx, a, missing, true, now), feed.ENOTFOUND, "SetFollow of a missing user")
	wantNoJobs(t, b, "a refused SetFollow")
	wantCode(t, b.Follows.SetFollow(ctx, a, missing, false, now), feed.ENOTFOUND, "SetFollow(false) of a missing user")
	wantNoJobs(t, b, "a refused SetFollow")
	wantCounts(t, b, a, 1, 0)
	if isFollowing(t, b, a, missing) {
		t.Fatal("a refused SetFollow left a follow behind")
	}

	// Concurrent follows of one pair count once and enqueue one job;
	// concurrent unfollows too.
	for _, on := range []bool{true, false} {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- b.Follows.SetFollow(ctx, d, a, on, now) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err, "concurrent SetFollow")
		}
		n := 0
		if on {
			n = 1
		}
		wantCounts(t, b, a, 1+n, 0)
		wantCounts(t, b, d, 0, 1+n)
		wantFollowJobs(t, b, fmt.Sprintf("8 concurrent SetFollow(%v)", on), feed.FollowJob{FollowerID: d, FolloweeID: a, Follow: on})
	}
}

// testFollowCounts runs random follows and unfollows and compares the
// counts and the graph with a model.
func testFollowCounts(t *testing.T, b *Backend) {
	ctx := t.Context()
	r := newRand(t)
	now := base()
	ids := newUsers(t, b, 6, now)
	graph := map[[2]int64]bool{}
	for range 150 {
		x, y := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
		if x == y {
			continue
		}
		on := r.IntN(3) > 0
		must(t, b.Follows.SetFollow(ctx, x, y, on, now), "SetFollow")
		graph[[2]int64{x, y}] = on
	}
	for _, x := range ids {
		fans, followee := 0, 0
		for _, y := range ids {
			if graph[[2]int64{y, x}] {
				fans++
			}
			if graph[[2]int64{x, y}] {
				followee++
			}
			if got := isFollowing(t, b, x, y); got != graph[[2]int64{x, y}] {
				t.Fatalf("IsFollowing(%d, %d) = %v, want %v", x, y, got, !got)
			}
		}
		wantCounts(t, b, x, fans, followee)
		var want []int64
		for _, y := range ids {
			if graph[[2]int64{y, x}] {
				want = append(want, y)
			}
		}
		slices.Sort(want)
		got, err := b.Follows.FollowersAfter(ctx, x, 0, 100)
		must(t, err, "FollowersAfter")
		wantIDs(t, fmt.Sprintf("FollowersAfter(%d)", x), got, want)
	}
}

func testFollowersAfter(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	// Users that never follow come first, so that follower ids differ from
	// the order (and any row id) of the follows.
	newUsers(t, b, 5, now)
	star := newUser(t, b, 1, now).ID
	fans := []int64{}
	for i := 0; i < 25; i++ {
		fans = append(fans, newUser(t, b, 100+i, now).ID)
	}
	other := newUser(t, b, 2, now).ID
	shuffled := slices.Clone(fans)
	slices.Reverse(shuffled)
	shuffled = append(shuffled[10:], shuffled[:10]...)
	for _, f := range shuffled {
		must(t, b.Follows.SetFollow(ctx, f, star, true, now), "SetFollow")
	}
	must(t, b.Follows.SetFollow(ctx, star, other, true, now), "SetFollow")
	must(t, b.Follows.SetFollow(ctx, fans[0], other, true, now), "SetFollow")
	var got []int64
	for after := int64(0); ; {
		page, err := b.Follows.FollowersAfter(ctx, star, after, 7)
		must(t, err, "FollowersAfter")
		if len(page) > 7 {
			t.Fatalf("FollowersAfter returned %d ids, limit 7", len(page))
		}
		got = append(got, page...)
		if len(page) < 7 {
			break
		}
		after = page[len(page)-1]
	}
	wantIDs(t, "FollowersAfter, paged", got, fans)
	for _, c := range []struct {
		after int64
		n     int
		want  int64
	}{{0, 1, fans[0]}, {0, 7, fans[6]}, {fans[6], 7, fans[13]}, {0, 25, fans[24]}, {0, 26, 0}, {fans[20], 4, fans[24]}, {fans[20], 5, 0}} {
		got, err := b.Follows.NthFollowerAfter(ctx, star, c.after, c.n)
		must(t, err, "NthFollowerAfter")
		if got != c.want {
			t.Fatalf("NthFollowerAfter(after %d, n %d) = %d, want %d", c.after, c.n, got, c.want)
		}
	}
	page, err := b.Follows.FollowersAfter(ctx, star, fans[10], 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(after a follower)", page, fans[11:16])
	page, err = b.Follows.FollowersAfter(ctx, star, fans[24], 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(after the last)", page, nil)
	page, err = b.Follows.FollowersAfter(ctx, other, 0, 5)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter(other)", page, []int64{star, fans[0]})
	if star > fans[0] {
		t.Fatalf("fixture: star %d created before fans %d", star, fans[0])
	}
	must(t, b.Follows.SetFollow(ctx, fans[3], star, false, now), "SetFollow")
	page, err = b.Follows.FollowersAfter(ctx, star, fans[1], 3)
	must(t, err, "FollowersAfter")
	wantIDs(t, "FollowersAfter after an unfollow", page, []int64{fans[2], fans[4], fans[5]})
	wantCounts(t, b, star, 24, 1)
}

func testCommonFollowees(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 8, now)
	a, c := ids[0], ids[1]
	follow := func(x int64, ys ...int64) {
		for _, y := range ys {
			must(t, b.Follows.SetFollow(ctx, x, y, true, now), "SetFollow")
		}
	}
	follow(a, ids[2], ids[3], ids[4], ids[7], c)
	follow(c, ids[3], ids[4], ids[5], ids[7], a)
	follow(ids[6], ids[2], ids[3], ids[4], ids[5])
	must(t, b.Follows.SetFollow(ctx, c, ids[7], false, now), "SetFollow")
	common := func(x, y int64, limit int) []int64 {
		got, err := b.Follows.CommonFollowees(ctx, x, y, limit)
		must(t, err, "CommonFollowees")
		s := slices.Clone(got)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(got) {
			t.Fatalf("CommonFollowees(%d, %d) = %v has duplicates", x, y, got)
		}
		return s
	}
	wantIDs(t, "CommonFollowees(a, c)", common(a, c, 100), []int64{ids[3], ids[4]})
	wantIDs(t, "CommonFollowees(c, a)", common(c, a, 100), []int64{ids[3], ids[4]})
	wantIDs(t, "CommonFollowees(a, ids[6])", common(a, ids[6], 100), []int64{ids[2], ids[3], ids[4]})
	wantIDs(t, "CommonFollowees with one who follows no one", common(a, ids[5], 100), nil)
	got := common(a, ids[6], 2)
	if len(got) != 2 || !slices.Contains([]int64{ids[2], ids[3], ids[4]}, got[0]) || !slices.Contains([]int64{ids[2], ids[3], ids[4]}, got[1]) {
		t.Fatalf("CommonFollowees(limit 2) = %v", got)
	}
}
