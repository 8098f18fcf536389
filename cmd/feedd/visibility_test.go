package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

// postRoute is a route that returns posts, a post's likers or its
// comments, and how a client finds out whether it shows post id to token.
type postRoute struct {
	pattern string // as in http/routes.go
	anon    bool   // asked without a login
	shows   func(token string, id int64) bool
}

// noPostRoutes are the GET routes of http/routes.go that return neither
// posts nor likers. A GET route in neither this list nor the table of
// TestBlocksAndHiddenOnEveryRoute fails that test.
var noPostRoutes = []string{
	"GET /healthz", "GET /readyz", "GET /user/me", "GET /user/{id}", "GET /user/info/{id}",
	"GET /follow/or/not/{id}", "GET /follow/common/{id}", "GET /v1/openapi.json", "GET /v1/me",
	"GET /v1/users/{id}", "GET /v1/users/{id}/followers", "GET /v1/users/{id}/following",
	"GET /v1/mutes", "GET /v1/blocks", "GET /v1/muted-words", "GET /{$}",
	"GET /v1/notifications/unread-count",
}

// getRoutes returns the GET patterns declared in http/routes.go.
func getRoutes(t *testing.T) []string {
	src, err := os.ReadFile("../../http/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`mux\.Handle\("(GET [^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) < 20 {
		t.Fatalf("found %d GET routes in http/routes.go: the pattern no longer reads it", len(out))
	}
	return out
}

// TestBlocksAndHiddenOnEveryRoute: every route that returns a post or its
// likers, in both APIs, shows a post to a user its author blocked, and a
// post hidden by moderation to anyone but its author, never; each route
// showed both posts to the same users before the block and the hiding.
// The list of routes is checked against http/routes.go.
func TestBlocksAndHiddenOnEveryRoute(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--report-threshold", "1", "--report-min-age", "0")
	c := newV1Client(t, s)
	author, marker := c.login("13800000901"), c.login("13800000902")
	blocked, reader, liker := c.login("13800000903"), c.login("13800000904"), c.login("13800000905")
	authorID, markerID, likerID := c.me(author).ID, c.me(marker).ID, c.me(liker).ID
	for _, tok := range []string{blocked, reader} {
		c.want(204, "PUT", "/v1/following/{id}", tok, nil, nil, authorID)
		c.want(204, "PUT", "/v1/following/{id}", tok, nil, nil, markerID)
	}
	start := c.publish(marker, "start of the replay")
	pb := c.publish(author, "seen by the one who will be blocked")
	ph := c.publish(author, "to be hidden")
	end := c.publish(marker, "end of the replay")
	for _, p := range []apiPost{pb, ph} {
		c.want(204, "PUT", "/v1/posts/{id}/like", liker, nil, nil, p.ID)
	}
	// A thread on each post (by the liker: neither blocked nor hidden), so
	// the comment routes show the post by showing its comments.
	type thread struct{ top, reply int64 }
	threads := map[int64]thread{}
	for _, p := range []apiPost{pb, ph} {
		top := c.addComment(liker, p.ID, "a comment", 0)
		threads[p.ID] = thread{top.ID, c.addComment(liker, p.ID, "a reply", top.ID).ID}
	}
	for _, tok := range []string{blocked, reader} {
		c.waitTimeline(tok, end.ID)
		c.waitTimeline(tok, pb.ID)
		c.waitTimeline(tok, ph.ID)
	}

	compatList := func(path, token string, id int64) bool {
		var list []blog
		s.must("GET", path, token, nil, &list)
		return slices.ContainsFunc(list, func(b blog) bool { return b.ID == id })
	}
	routes := []postRoute{
		{pattern: "GET /blog/{id}", shows: func(tok string, id int64) bool {
			return s.do("GET", fmt.Sprintf("/blog/%d", id), tok, nil).Success
		}},
		{pattern: "GET /blog/likes/{id}", shows: func(tok string, id int64) bool {
			r := s.do("GET", fmt.Sprintf("/blog/likes/%d", id), tok, nil)
			var us []struct{ ID int64 }
			json.Unmarshal(r.Data, &us)
			return r.Success && slices.ContainsFunc(us, func(u struct{ ID int64 }) bool { return u.ID == likerID })
		}},
		{pattern: "GET /blog/of/user", shows: func(tok string, id int64) bool {
			return compatList(fmt.Sprintf("/blog/of/user?id=%d&current=1", authorID), tok, id)
		}},
		{pattern: "GET /blog/hot", shows: func(tok string, id int64) bool { return compatList("/blog/hot?current=1", tok, id) }},
		{pattern: "GET /blog/hot", anon: true, shows: func(_ string, id int64) bool { return compatList("/blog/hot?current=1", "", id) }},
		{pattern: "GET /blog/of/follow", shows: func(tok string, id int64) bool {
			return slices.ContainsFunc(s.scrollAll(tok, 3), func(b blog) bool { return b.ID == id })
		}},
		{pattern: "GET /v1/posts/{id}", shows: func(tok string, id int64) bool {
			r, err := c.send("GET", "/v1/posts/{id}", tok, nil, id)
			if err != nil {
				t.Fatal(err)
			}
			return r.Status == 200
		}},
		{pattern: "GET /v1/posts/{id}/likes", shows: func(tok string, id int64) bool {
			r, err := c.send("GET", "/v1/posts/{id}/likes", tok, nil, id)
			if err != nil {
				t.Fatal(err)
			}
			var page apiPage[apiUser]
			json.Unmarshal(r.Raw, &page)
			return r.Status == 200 && slices.ContainsFunc(page.Data, func(u apiUser) bool { return u.ID == likerID })
		}},
		{pattern: "GET /v1/users/{id}/posts", shows: func(tok string, id int64) bool {
			var all []apiPost
			cursor := ""
			for range 100 {
				var page apiPage[apiPost]
				q := "/v1/users/{id}/posts?limit=1"
				if cursor != "" {
					q += "&cursor=" + cursor
				}
				c.want(200, "GET", q, tok, nil, &page, authorID)
				all = append(all, page.Data...)
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
			return slices.Contains(postIDs(all), id)
		}},
		{pattern: "GET /v1/posts/{id}/comments", shows: func(tok string, id int64) bool {
			r, err := c.send("GET", "/v1/posts/{id}/comments", tok, nil, id)
			if err != nil {
				t.Fatal(err)
			}
			var page apiPage[apiComment]
			json.Unmarshal(r.Raw, &page)
			return r.Status == 200 && slices.Contains(apiCommentIDs(page.Data), threads[id].top)
		}},
		{pattern: "GET /v1/comments/{id}", shows: func(tok string, id int64) bool {
			r, err := c.send("GET", "/v1/comments/{id}", tok, nil, threads[id].reply)
			if err != nil {
				t.Fatal(err)
			}
			return r.Status == 200
		}},
		{pattern: "GET /v1/comments/{id}/replies", shows: func(tok string, id int64) bool {
			r, err := c.send("GET", "/v1/comments/{id}/replies", tok, nil, threads[id].top)
			if err != nil {
				t.Fatal(err)
			}
			var page apiPage[apiComment]
			json.Unmarshal(r.Raw, &page)
			return r.Status == 200 && slices.Contains(apiCommentIDs(page.Data), threads[id].reply)
		}},
		{pattern: "GET /v1/timeline", shows: func(tok string, id int64) bool { return slices.Contains(postIDs(c.timeline(tok, 3)), id) }},
		{pattern: "GET /v1/timeline", shows: func(tok string, id int64) bool { // order=ranked
			page, _ := c.rankedPage(tok, "", 100, false)
			return slices.ContainsFunc(page.Data, func(p apiRankedPost) bool { return p.ID == id })
		}},
		{pattern: "GET /v1/timeline/stream", shows: func(tok string, id int64) bool {
			// The replay after the marker's first post, up to its last.
			st := c.openStream(tok, feed.EncodeCursor(feed.Cursor{Score: start.score(), PostID: start.ID}), "127.0.0.2")
			defer st.close()
			var seen []int64
			for {
				p := st.next(t).post(t, c, tok)
				if p.ID == end.ID {
					return slices.Contains(seen, id)
				}
				seen = append(seen, p.ID)
			}
		}},
	}

	// Every GET route is in the table or in noPostRoutes ("GET /blog/of/me"
	// shows only the caller's own posts: checked below for the author;
	// "GET /v1/notifications" too: its groups' posts are the caller's, and
	// a block takes the blocked user's notifications out both ways, which
	// feedtest's notification suite checks on every backend).
	known := slices.Concat(noPostRoutes, []string{"GET /blog/of/me", "GET /v1/notifications"})
	for _, r := range routes {
		known = append(known, r.pattern)
	}
	for _, p := range getRoutes(t) {
		if !slices.Contains(known, p) && !strings.Contains(p, "web.Prefix") {
			t.Errorf("route %q is neither checked here nor listed in noPostRoutes", p)
		}
	}

	check := func(when string, want bool) {
		t.Helper()
		for i, r := range routes {
			tokB, tokH := blocked, reader
			if r.anon {
				tokB, tokH = "", ""
			}
			if !r.anon || want {
				if got := r.shows(tokB, pb.ID); got != want {
					t.Errorf("%s, route %d %s: post shown to the user its author blocks = %v, want %v", when, i, r.pattern, got, want)
				}
			}
			if got := r.shows(tokH, ph.ID); got != want {
				t.Errorf("%s, route %d %s (anonymous %v): hidden post shown = %v, want %v", when, i, r.pattern, r.anon, got, want)
			}
		}
	}
	check("before", true)
	c.want(204, "PUT", "/v1/blocks/{id}", author, nil, nil, c.me(blocked).ID)
	c.want(204, "POST", "/v1/posts/{id}/report", liker, map[string]string{"reason": "rude"}, nil, ph.ID)
	check("after", false)

	// The author still sees their hidden post where their own posts are.
	for _, path := range []string{fmt.Sprintf("/blog/%d", ph.ID), "/blog/of/me?current=1"} {
		if r := s.do("GET", path, author, nil); !r.Success || !strings.Contains(r.Raw, fmt.Sprintf(`"id":%d`, ph.ID)) {
			t.Errorf("author: GET %s = %s, want their hidden post", path, r.Raw)
		}
	}
	c.want(200, "GET", "/v1/posts/{id}", author, nil, nil, ph.ID)
}
