package main

import (
	"fmt"
	"slices"
	"testing"

	feed "github.com/feedd/feedd"
)

// TestRepostsEndToEnd drives reposts and quotes through the real server,
// its fan-out workers and both APIs: on the embedded SQLite, and on
// PostgreSQL + Redis (packed inboxes, a reposter in pull mode through
// --pull-threshold 3). A post reposted by two people a reader follows is
// in the reader's timeline once, at the first repost, "reposted by" it and
// one other; undoing that repost keeps it at the second; show_reposts off
// hides it; the compatible feed shows it as the original blog, once; a
// quote embeds it and shows a tombstone once it is deleted; the author is
// told; quote_policy refuses quotes.
func TestRepostsEndToEnd(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testRepostsEndToEnd(t, startServer(t, "--data", t.TempDir(), "--pull-threshold", "3"), nil)
	})
	t.Run("PostgresRedis", func(t *testing.T) {
		t.Parallel()
		b := singleNode(t)
		s := startServer(t, append(append([]string{}, b.args...), "--pull-threshold", "3", "--inbox-layout", "packed")...)
		testRepostsEndToEnd(t, s, b)
	})
}

func testRepostsEndToEnd(t *testing.T, s *server, b *backendArgs) {
	c := newV1Client(t, s)
	login := func(phone string) (string, int64) {
		tok := c.login(phone)
		return tok, c.me(tok).ID
	}
	author, authorID := login("13900000001")
	r1, r1ID := login("13900000002") // followed by 3 (pull mode)
	r2, r2ID := login("13900000003")
	reader, _ := login("13900000004")
	for i := range 2 {
		fan, _ := login(fmt.Sprintf("1390000001%d", i))
		c.want(204, "PUT", "/v1/following/{id}", fan, nil, nil, r1ID)
	}
	c.want(204, "PUT", "/v1/following/{id}", reader, nil, nil, r1ID)
	c.want(204, "PUT", "/v1/following/{id}", reader, map[string]any{"show_reposts": true}, nil, r2ID)
	if b != nil {
		waitJobsDone(t, b.dbURL)
	}

	p := c.publish(author, "worth sharing")
	c.want(204, "PUT", "/v1/posts/{id}/repost", r1, nil, nil, p.ID)
	c.want(204, "PUT", "/v1/posts/{id}/repost", r1, nil, nil, p.ID) // idempotent
	c.want(204, "PUT", "/v1/posts/{id}/repost", r2, nil, nil, p.ID)
	once := func(what string) apiPost {
		t.Helper()
		var got apiPost
		waitFor(t, what, func() bool {
			n := 0
			for _, q := range c.timeline(reader, 3) {
				if q.ID == p.ID {
					n, got = n+1, q
				}
			}
			if n > 1 {
				t.Fatalf("%s: post %d %d times in the timeline", what, p.ID, n)
			}
			return n == 1 && got.RepostedBy != nil && got.RepostCount == 2
		})
		return got
	}
	got := once("the post reposted twice")
	if got.RepostedBy.User.ID != r1ID || got.RepostedBy.Others != 1 || got.Author.ID != authorID || got.Title != "worth sharing" || got.RepostedByMe {
		t.Fatalf("post in the timeline: %+v, want it by the author, reposted by r1 and 1 other", got)
	}
	// The compatible feed: the original blog, once.
	var blogs []blog
	waitFor(t, "the post in the compatible feed", func() bool {
		blogs = s.scrollAll(reader, 1)
		return slices.Contains(ids(blogs), p.ID)
	})
	noDuplicates(t, "compatible feed", ids(blogs))
	for _, bl := range blogs {
		if bl.ID == p.ID && (bl.UserID != authorID || bl.Title != "worth sharing") {
			t.Fatalf("compatible feed shows the repost as %+v, want the original blog", bl)
		}
	}

	// Undo the first: the post stays, at the second.
	c.want(204, "DELETE", "/v1/posts/{id}/repost", r1, nil, nil, p.ID)
	waitFor(t, "the post at r2's repost", func() bool {
		for _, q := range c.timeline(reader, 20) {
			if q.ID == p.ID {
				return q.RepostedBy != nil && q.RepostedBy.User.ID == r2ID && q.RepostedBy.Others == 0 && q.RepostCount == 1
			}
		}
		return false
	})
	// show_reposts off for r2: gone; on: back.
	c.want(204, "PUT", "/v1/following/{id}", reader, map[string]any{"show_reposts": false}, nil, r2ID)
	if slices.Contains(postIDs(c.timeline(reader, 20)), p.ID) {
		t.Fatal("the post is in the timeline with r2's reposts hidden")
	}
	c.want(204, "PUT", "/v1/following/{id}", reader, map[string]any{"show_reposts": true}, nil, r2ID)
	if !slices.Contains(postIDs(c.timeline(reader, 20)), p.ID) {
		t.Fatal("the post is not in the timeline with r2's reposts shown again")
	}
	c.refused(400, feed.EINVALID, "PUT", "/v1/following/{id}", reader, map[string]any{"show_reposts": "no"}, r2ID)

	// A quote embeds the post; the author is told of reposts and quotes.
	var q apiPost
	c.want(201, "POST", "/v1/posts", reader, map[string]any{"title": "see", "content": "this", "quote_of": p.ID, "quote_policy": "following"}, &q)
	if q.Quote == nil || q.Quote.State != feed.QuoteShown || q.Quote.Post == nil || q.Quote.Post.ID != p.ID || q.QuoteOf == nil || *q.QuoteOf != p.ID || q.QuotePolicy != "following" {
		t.Fatalf("the new quote: %+v", q)
	}
	var notes apiPage[struct {
		Kind  string   `json:"kind"`
		Count int      `json:"count"`
		Post  *apiPost `json:"post"`
	}]
	c.want(200, "GET", "/v1/notifications", author, nil, &notes)
	kinds := map[string]int{}
	for _, n := range notes.Data {
		kinds[n.Kind] = n.Count
	}
	if kinds[feed.NotifyRepost] != 1 || kinds[feed.NotifyQuote] != 1 {
		t.Fatalf("the author's notifications: %+v, want a repost group of 1 (r1 undid) and a quote", notes.Data)
	}
	// quote_policy: nobody.
	var patched apiPost
	c.want(200, "PATCH", "/v1/posts/{id}", author, map[string]any{"quote_policy": "nobody"}, &patched, p.ID)
	if patched.QuotePolicy != "nobody" {
		t.Fatalf("patched: %+v", patched)
	}
	c.refused(403, feed.EFORBIDDEN, "POST", "/v1/posts", r1, map[string]any{"title": "t", "content": "c", "quote_of": p.ID})
	c.refused(403, feed.EFORBIDDEN, "PATCH", "/v1/posts/{id}", r1, map[string]any{"quote_policy": "everyone"}, p.ID)
	c.refused(400, feed.EINVALID, "PATCH", "/v1/posts/{id}", author, map[string]any{"quote_policy": "some"}, p.ID)
	c.refused(404, feed.ENOTFOUND, "PUT", "/v1/posts/{id}/repost", r1, nil, p.ID+1_000_000)
	c.refused(400, feed.EINVALID, "POST", "/v1/posts", r1, map[string]any{"title": "t", "content": "c", "quote_of": 0})

	// Deleted: the reposts go with it, the quote shows a tombstone.
	c.want(204, "DELETE", "/v1/posts/{id}", author, nil, nil, p.ID)
	if slices.Contains(postIDs(c.timeline(reader, 20)), p.ID) {
		t.Fatal("a deleted post is in the timeline by a repost")
	}
	var gone apiPost
	c.want(200, "GET", "/v1/posts/{id}", reader, nil, &gone, q.ID)
	if gone.Quote == nil || gone.Quote.State != feed.QuoteDeleted || gone.Quote.Post != nil || gone.Quote.ID != p.ID {
		t.Fatalf("the quote of a deleted post: %+v", gone.Quote)
	}
}

// TestRepostLimit: reposts and their undos count toward
// --repost-limit-user; over it, 429 with Retry-After, and nothing changed.
func TestRepostLimit(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--repost-limit-user", "2/1m")
	c := newV1Client(t, s)
	a := c.login("13900000001")
	u := c.login("13900000002")
	p := c.publish(a, "one")
	c.want(204, "PUT", "/v1/posts/{id}/repost", u, nil, nil, p.ID)
	c.want(204, "DELETE", "/v1/posts/{id}/repost", u, nil, nil, p.ID)
	c.refused(429, feed.ETOOMANY, "PUT", "/v1/posts/{id}/repost", u, nil, p.ID)
	var got apiPost
	c.want(200, "GET", "/v1/posts/{id}", u, nil, &got, p.ID)
	if got.RepostCount != 0 || got.RepostedByMe {
		t.Fatalf("after a refused repost: %+v", got)
	}
	c.want(204, "PUT", "/v1/posts/{id}/repost", a, nil, nil, p.ID) // another user is not refused
}

// v1RepostExchanges sends TestV1API's exchanges of reposts and quotes,
// checked against the document: a and b are two users.
func v1RepostExchanges(t *testing.T, c *v1Client, a, b string) {
	p := c.publish(a, "to repost")
	c.want(204, "PUT", "/v1/posts/{id}/repost", b, nil, nil, p.ID)
	c.want(204, "DELETE", "/v1/posts/{id}/repost", b, nil, nil, p.ID)
	c.refused(400, feed.EINVALID, "PUT", "/v1/posts/{id}/repost", b, nil, "abc")
	c.refused(400, feed.EINVALID, "DELETE", "/v1/posts/{id}/repost", b, nil, "abc")
	c.refused(404, feed.ENOTFOUND, "PUT", "/v1/posts/{id}/repost", b, nil, p.ID+1_000_000)
	c.refused(404, feed.ENOTFOUND, "DELETE", "/v1/posts/{id}/repost", b, nil, p.ID+1_000_000)
	c.want(200, "PATCH", "/v1/posts/{id}", a, map[string]any{"quote_policy": "nobody"}, nil, p.ID)
	c.refused(403, feed.EFORBIDDEN, "POST", "/v1/posts", b, map[string]any{"title": "t", "content": "c", "quote_of": p.ID})
}
