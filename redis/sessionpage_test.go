package redis_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// TestSessionPages checks SessionPage against Session and Page called one
// after the other: the same user, the same page, the same sliding expiry;
// no page handed over without a live session of the claimed user.
func TestSessionPages(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		auth := redis.NewAuthStore(rdb, prefix)
		inbox := redis.NewInbox(rdb, withPrefix(opts, prefix, 0))
		sp, err := redis.NewSessionPages(auth, inbox)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Millisecond)
		ttl := 30 * time.Minute
		var entries []feed.Entry
		for i := range 9 {
			entries = append(entries, feed.Entry{PostID: int64(100 + i), Score: now.UnixMilli() - int64(i/2)})
		}
		for _, u := range []int64{7, 8} {
			if err := inbox.Restore(ctx, u, entries); err != nil {
				t.Fatal(err)
			}
		}
		for tok, u := range map[string]int64{"h7": 7, "h9": 9} {
			if err := auth.CreateSession(ctx, tok, u, now, now.Add(ttl)); err != nil {
				t.Fatal(err)
			}
		}
		check := func(what string, r feed.SessionPage, user int64, code string, page []feed.Entry, pageErr error) {
			t.Helper()
			if r.UserID != user || feed.ErrorCode(r.SessionErr) != code || !errors.Is(r.PageErr, pageErr) || (pageErr == nil && !slices.Equal(r.Entries, page)) {
				t.Fatalf("%s = %+v, want user %d, session error %q, page %v (error %v)", what, r, user, code, page, pageErr)
			}
		}
		for _, c := range []struct {
			b             feed.Bound
			offset, limit int
		}{{feed.Top(), 0, 3}, {feed.Top(), 2, 4}, {feed.AtMost(entries[4].Score), 1, 10}, {feed.Top(), 20, 5}} {
			want, err := inbox.Page(ctx, 7, c.b, c.offset, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			r := sp.SessionPage(ctx, "h7", now, ttl, 7, c.b, c.offset, c.limit)
			check(fmt.Sprintf("SessionPage(h7, 7, %v, %d, %d)", c.b, c.offset, c.limit), r, 7, "", want, nil)
		}
		// A claim the session denies: user 7's session, user 8's inbox.
		r := sp.SessionPage(ctx, "h7", now, ttl, 8, feed.Top(), 0, 3)
		if r.UserID != 7 || r.SessionErr != nil || r.Entries != nil || r.PageErr != nil {
			t.Fatalf("SessionPage(h7, claiming 8) = %+v, want user 7 and no page", r)
		}
		// No session, an expired one: no user, no page.
		check("SessionPage(unknown)", sp.SessionPage(ctx, "nobody", now, ttl, 7, feed.Top(), 0, 3), 0, feed.EUNAUTHORIZED, nil, nil)
		if r := sp.SessionPage(ctx, "nobody", now, ttl, 7, feed.Top(), 0, 3); r.Entries != nil {
			t.Fatalf("SessionPage without a session handed over %v", r.Entries)
		}
		check("SessionPage(h7) after its expiry", sp.SessionPage(ctx, "h7", now.Add(ttl), ttl, 7, feed.Top(), 0, 3), 0, feed.EUNAUTHORIZED, nil, nil)
		// A live session of a user whose inbox was never built.
		check("SessionPage(h9)", sp.SessionPage(ctx, "h9", now, ttl, 9, feed.Top(), 0, 3), 9, "", nil, feed.ErrInboxLost)
		// The expiry slides as Session slides it: read 20 minutes in, the
		// session lives 30 minutes from then.
		if err := auth.CreateSession(ctx, "h8", 8, now, now.Add(ttl)); err != nil {
			t.Fatal(err)
		}
		want, _ := inbox.Page(ctx, 8, feed.Top(), 0, 2)
		check("SessionPage(h8) at +20m", sp.SessionPage(ctx, "h8", now.Add(20*time.Minute), ttl, 8, feed.Top(), 0, 2), 8, "", want, nil)
		if id, err := auth.Session(ctx, "h8", now.Add(45*time.Minute), ttl); err != nil || id != 8 {
			t.Fatalf("Session(h8) at +45m after SessionPage at +20m = %d, %v; want 8 (slid to +50m)", id, err)
		}
		// A Redis that lost its scripts gets them again.
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		check("SessionPage(h8) after SCRIPT FLUSH", sp.SessionPage(ctx, "h8", now.Add(45*time.Minute), ttl, 8, feed.Top(), 0, 2), 8, "", want, nil)
		check("SessionPage(h8) again", sp.SessionPage(ctx, "h8", now.Add(45*time.Minute), ttl, 8, feed.Top(), 0, 2), 8, "", want, nil)

		other, _ := open(t)
		if _, err := redis.NewSessionPages(auth, redis.NewInbox(other, withPrefix(opts, prefix, 0))); err == nil {
			t.Fatal("NewSessionPages accepted an AuthStore and an Inbox on two clients")
		}
	})
}

// countingAuth counts AuthStore.Session calls.
type countingAuth struct {
	feed.AuthStore
	n atomic.Int64
}

func (a *countingAuth) Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error) {
	a.n.Add(1)
	return a.AuthStore.Session(ctx, tokenHash, now, ttl)
}

// countingPages counts SessionPager.SessionPage calls.
type countingPages struct {
	feed.SessionPager
	n atomic.Int64
}

func (p *countingPages) SessionPage(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration, userID int64, b feed.Bound, offset, limit int) feed.SessionPage {
	p.n.Add(1)
	return p.SessionPager.SessionPage(ctx, tokenHash, now, ttl, userID, b, offset, limit)
}

// TestScrollFeedAs checks the service's use of SessionPages: a token that
// names its user is served with one SessionPage call and no Session call,
// the pages those of ScrollFeed; a token whose claim is false, or that has
// no session, is refused; an old token (no user id) and a session only in
// the durable store go through Authenticate.
func TestScrollFeedAs(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		ctx := t.Context()
		b := openBackend(t, open)
		auth := &countingAuth{AuthStore: b.Auth}
		pages := &countingPages{SessionPager: b.SessionPages}
		svc := &feed.Service{Users: b.Users, Auth: auth, Posts: b.Posts, Follows: b.Follows, Social: b.Social,
			Inbox: b.Inbox, Outbox: b.Outbox, SessionPages: pages, Filters: b.Filters, Ranks: b.Ranks, Snapshots: b.Snapshots}
		now := time.Now().Truncate(time.Millisecond)
		var ids []int64
		for i := range 3 {
			u, err := b.Users.FindOrCreateUser(ctx, fmt.Sprintf("1380000000%d", i), fmt.Sprintf("u%d", i), now)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, u.ID)
		}
		viewer, author, pullAuthor := ids[0], ids[1], ids[2]
		for _, a := range []int64{author, pullAuthor} {
			if err := b.Follows.SetFollow(ctx, viewer, a, true, now); err != nil {
				t.Fatal(err)
			}
		}
		b.Jobs()
		for i := range 12 {
			a := author
			if i%3 == 0 {
				a = pullAuthor
			}
			at := now.Add(-time.Duration(i) * time.Second)
			p := &feed.Post{UserID: a, Title: "t", Content: "c", CreatedAt: at, UpdatedAt: at}
			if err := b.Posts.CreatePost(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := b.Outbox.Add(ctx, a, p.Entry()); err != nil {
				t.Fatal(err)
			}
			if a == author {
				if err := b.Inbox.Deliver(ctx, p.Entry(), []int64{viewer}); err != nil {
					t.Fatal(err)
				}
			}
		}
		b.Jobs()
		login := func(user int64) string {
			tok, err := feed.NewSessionToken(user, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if err := auth.CreateSession(ctx, feed.HashSecret(tok), user, now, now.Add(feed.SessionTTL)); err != nil {
				t.Fatal(err)
			}
			return tok
		}
		tok := login(viewer)
		scroll := func(what string) {
			t.Helper()
			for _, size := range []int{1, 4, 50} {
				c := feed.ScrollCursor{LastID: now.UnixMilli() + 1}
				for range 20 {
					auth.n.Store(0)
					pages.n.Store(0)
					id, got, err := svc.ScrollFeedAs(ctx, tok, c, size)
					if err != nil || id != viewer {
						t.Fatalf("%s: ScrollFeedAs = %d, %v; want user %d", what, id, err, viewer)
					}
					if auth.n.Load() != 0 || pages.n.Load() != 1 {
						t.Fatalf("%s: ScrollFeedAs made %d Session and %d SessionPage calls, want 0 and 1", what, auth.n.Load(), pages.n.Load())
					}
					want, err := svc.ScrollFeed(ctx, viewer, c, size)
					if err != nil {
						t.Fatal(err)
					}
					if (got == nil) != (want == nil) || (got != nil && (got.MinTime != want.MinTime || got.Offset != want.Offset || !slices.EqualFunc(got.List, want.List, func(a, b feed.PostView) bool { return a.ID == b.ID }))) {
						t.Fatalf("%s: ScrollFeedAs(%+v, %d) = %+v, ScrollFeed = %+v", what, c, size, got, want)
					}
					if got == nil {
						break
					}
					c = feed.ScrollCursor{LastID: got.MinTime, Offset: got.Offset}
				}
			}
		}
		scroll("push only")
		if err := b.Social.SetMode(ctx, pullAuthor, feed.PullMode); err != nil {
			t.Fatal(err)
		}
		scroll("with a pull-mode author")

		// False claims and no session: refused, and no page is read for them.
		_, rest, _ := strings.Cut(tok, ".")
		other := login(author)
		_, otherRest, _ := strings.Cut(other, ".")
		forged := []string{
			fmt.Sprintf("%d.%s", author, rest),      // the viewer's secret, the author's id
			fmt.Sprintf("%d.%s", viewer, otherRest), // the author's secret, the viewer's id
			fmt.Sprintf("%d.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", viewer),
			"", "garbage",
		}
		for _, f := range forged {
			id, page, err := svc.ScrollFeedAs(ctx, f, feed.ScrollCursor{LastID: now.UnixMilli() + 1}, 10)
			if feed.ErrorCode(err) != feed.EUNAUTHORIZED || id != 0 || page != nil {
				t.Fatalf("ScrollFeedAs(%q) = %d, %+v, %v; want EUNAUTHORIZED", f, id, page, err)
			}
		}
		// A token of the old form (no user id): Authenticate, then the page.
		old := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAold"
		if err := auth.CreateSession(ctx, feed.HashSecret(old), viewer, now, now.Add(feed.SessionTTL)); err != nil {
			t.Fatal(err)
		}
		auth.n.Store(0)
		pages.n.Store(0)
		if id, page, err := svc.ScrollFeedAs(ctx, old, feed.ScrollCursor{LastID: now.UnixMilli() + 1}, 3); err != nil || id != viewer || page == nil || len(page.List) != 3 {
			t.Fatalf("ScrollFeedAs(old token) = %d, %+v, %v", id, page, err)
		}
		if auth.n.Load() != 1 || pages.n.Load() != 0 {
			t.Fatalf("ScrollFeedAs(old token) made %d Session and %d SessionPage calls, want 1 and 0", auth.n.Load(), pages.n.Load())
		}
		// An invalid cursor is refused after the session is checked.
		if _, _, err := svc.ScrollFeedAs(ctx, "garbage", feed.ScrollCursor{LastID: -1}, 3); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
			t.Fatalf("ScrollFeedAs(no session, bad cursor) = %v, want EUNAUTHORIZED", err)
		}
		if _, _, err := svc.ScrollFeedAs(ctx, tok, feed.ScrollCursor{LastID: -1}, 3); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("ScrollFeedAs(bad cursor) = %v, want EINVALID", err)
		}
		// TimelineAs reads the same pages as Timeline.
		var after *feed.Cursor
		for range 20 {
			id, got, err := svc.TimelineAs(ctx, tok, after, 5)
			want, werr := svc.Timeline(ctx, viewer, after, 5)
			if err != nil || werr != nil || id != viewer || !slices.EqualFunc(got.List, want.List, func(a, b feed.PostView) bool { return a.ID == b.ID }) || (got.Next == nil) != (want.Next == nil) {
				t.Fatalf("TimelineAs(%v) = %d, %+v, %v; Timeline = %+v, %v", after, id, got, err, want, werr)
			}
			if got.Next == nil {
				break
			}
			after = got.Next
		}
	})
}
