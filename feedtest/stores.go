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
	// Comments is the comment store (TestComments).
	Comments feed.CommentStore
	// Reposts is the repost store (TestReposts); the feed suites read
	// through it too.
	Reposts feed.RepostStore
	// Media is the media store (TestMedia), the one behind Posts.
	Media feed.MediaStore
	// SessionPages, when not nil, is the store that reads a session and an
	// inbox page in one round trip (feed.Service.SessionPages); the feed
	// suites then scroll through it too (ScrollFeedAs).
	SessionPages feed.SessionPager
	// Identities, APIKeys and Accounts are the stores of an app's own
	// users (TestIdentity).
	Identities feed.IdentityStore
	APIKeys    feed.APIKeyStore
	Accounts   feed.AccountStore
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
