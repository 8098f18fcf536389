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
	"github.com/feedd/feedd/feedtest"
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
	"GET /v1/notifications/unread-count", "GET /v1/markers", "GET /v1/push/key",
	"GET /v1/push/subscriptions", "GET /v1/auth/methods", "GET /auth/sso/start",
	"GET /auth/sso/callback", "GET /upload/blog/delete", "GET /v1/server/users/{ref}",
	"GET /v1/server/erasures/{id}",
	// The caller's own data only: an upload's metadata (its uploader's), a
	// user's export (the app's backend reading that user's own data).
	"GET /v1/media/{id}", "GET /v1/server/users/{ref}/export",
	// Image bytes, by a name made of their content hash: public URLs, as
	// every timeline's media are (docs/API.md "Photos").
	"GET /imgs/{path...}",
	// The app's backend reads the posts it published by their foreign_id.
	"GET /v1/server/posts/{foreign_id}",
	// Service.Timeline as the user it names: the read of GET /v1/timeline,
	// checked by the table.
	"GET /v1/server/users/{ref}/timeline",
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

// TestVisibilityTableDocumented: docs/API.md, "Who sees what", holds the
// matrix that feedtest.TestVisibility checks on every backend, as
// feedtest.VisibilityTable renders it.
func TestVisibilityTableDocumented(t *testing.T) {
	doc, want := readRepo(t, "docs/API.md"), feedtest.VisibilityTable()
	if _, after, ok := strings.Cut(doc, "\n## Who sees what\n"); !ok || !strings.Contains(strings.Split(after, "\n## ")[0], want) {
		t.Fatalf("docs/API.md, \"Who sees what\", does not hold the visibility matrix; it is:\n%s", want)
	}
}

// users logs in one user per phone, each a client of its own loopback
// address (127.0.0.2, ...), and returns their clients, tokens and ids.
func loopbackUsers(t *testing.T, s *server, phones ...string) ([]*v1Client, []string, []int64) {
	cs, toks, ids := make([]*v1Client, len(phones)), make([]string, len(phones)), make([]int64, len(phones))
	for i, p := range phones {
		cs[i] = s.from(fmt.Sprintf("127.0.0.%d", i+2)).v1()
		toks[i] = cs[i].login(p)
		ids[i] = cs[i].me(toks[i]).ID
	}
	return cs, toks, ids
}

// commentStatus is the status of GET /v1/comments/{id} for token, and the
// comment when 200.
func commentStatus(t *testing.T, c *v1Client, token string, id int64) (int, apiComment) {
	t.Helper()
	r, err := c.send("GET", "/v1/comments/{id}", token, nil, id)
	if err != nil {
		t.Fatal(err)
	}
	var out apiComment
	if r.Status == 200 {
		json.Unmarshal(r.Raw, &out)
	}
	return r.Status, out
}

// TestHiddenThreadStaysHidden: the post's author hides a top-level comment
// with 3 replies (PUT /v1/comments/{id}/hidden, or an admin's POST
// /admin/comments/{id}/hide), then the comment's author deletes it. A
// bystander is shown none of the 4, before and after the delete: not in
// either order of the list, not as first replies, not on /replies, not by
// id. The post's author sees the placeholder marked hidden (their own
// hiding); the comment's author still sees the thread.
func TestHiddenThreadStaysHidden(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	cs, toks, _ := loopbackUsers(t, s, "13800000921", "13800000922", "13800000923", "13800000924", "13800000925", "13800000926")
	a, cm, by := toks[0], toks[1], toks[5]
	for _, how := range []string{"author", "admin"} {
		p := cs[0].publish(a, "a post with a thread, hidden by its "+how)
		top := cs[1].addComment(cm, p.ID, "the thread", 0)
		var replies []int64
		for i := 2; i <= 4; i++ {
			replies = append(replies, cs[i].addComment(toks[i], p.ID, fmt.Sprintf("reply %d", i-1), top.ID).ID)
		}
		if how == "author" {
			cs[0].want(204, "PUT", "/v1/comments/{id}/hidden", a, nil, nil, top.ID)
		} else {
			s.adminCall("POST", fmt.Sprintf("/admin/comments/%d/hide", top.ID), 204)
		}
		shown := func(when string) {
			t.Helper()
			for _, order := range []string{"top", "new"} {
				for _, v := range cs[5].comments(by, p.ID, order, 10) {
					t.Errorf("%s, hidden by the %s: the bystander's %s list shows comment %d (%d replies)", when, how, order, v.ID, len(v.Replies))
				}
			}
			r, err := cs[5].send("GET", "/v1/comments/{id}/replies", by, nil, top.ID)
			if err != nil || r.Status != 404 {
				t.Errorf("%s, hidden by the %s: the bystander's /replies answers %d %s, want 404", when, how, r.Status, r.Raw)
			}
			for _, id := range append([]int64{top.ID}, replies...) {
				if st, _ := commentStatus(t, cs[5], by, id); st != 404 {
					t.Errorf("%s, hidden by the %s: the bystander's GET /v1/comments/%d answers %d, want 404", when, how, id, st)
				}
			}
		}
		shown("before the delete")
		cs[1].want(204, "DELETE", "/v1/comments/{id}", cm, nil, nil, top.ID)
		shown("after its author deleted it")
		own := cs[1].comments(cm, p.ID, "new", 10)
		if len(own) != 1 || !own[0].Deleted || len(own[0].Replies) != 2 {
			t.Errorf("hidden by the %s: the comment's author sees %+v, want the placeholder with its first 2 replies", how, own)
		}
		if list := cs[0].comments(a, p.ID, "new", 10); how == "author" && (len(list) != 1 || !list[0].Deleted || !list[0].Hidden) {
			t.Errorf("the post's author sees %+v, want their hidden placeholder marked hidden", list)
		} else if how == "admin" && len(list) != 0 {
			t.Errorf("the post's author sees %+v of a thread the admin hid", list)
		}
	}
}

// TestPostAuthorControlsComments: C comments on A's post, then A blocks C,
// or C blocks A. A is shown the comment collapsed (blocked_user) and may
// hide, report and delete it; every third user still sees it until then.
// C, once blocking A, may not comment on A's posts.
func TestPostAuthorControlsComments(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--report-min-age", "0")
	cs, toks, ids := loopbackUsers(t, s, "13800000931", "13800000932", "13800000933")
	a, cm, other := toks[0], toks[1], toks[2]
	for _, who := range []string{"author", "commenter"} {
		p := cs[0].publish(a, "a post under attack, blocked by the "+who)
		c := cs[1].addComment(cm, p.ID, "pinned harassment", 0)
		if who == "author" {
			cs[0].want(204, "PUT", "/v1/blocks/{id}", a, nil, nil, ids[1])
		} else {
			cs[1].want(204, "PUT", "/v1/blocks/{id}", cm, nil, nil, ids[0])
			cs[1].refused(403, "forbidden", "POST", "/v1/posts/{id}/comments", cm, map[string]any{"text": "again"}, p.ID)
		}
		if list := cs[2].comments(other, p.ID, "new", 10); len(list) != 1 || list[0].ID != c.ID {
			t.Fatalf("blocked by the %s: a third user sees %+v, want the comment", who, list)
		}
		list := cs[0].comments(a, p.ID, "new", 10)
		if len(list) != 1 || list[0].ID != c.ID || list[0].Collapsed == nil || *list[0].Collapsed != "blocked_user" {
			t.Fatalf("blocked by the %s: the post's author sees %+v, want the comment collapsed as blocked_user", who, list)
		}
		cs[0].want(204, "PUT", "/v1/comments/{id}/hidden", a, nil, nil, c.ID)
		if list := cs[2].comments(other, p.ID, "new", 10); len(list) != 0 {
			t.Fatalf("blocked by the %s: a third user still sees %+v after the post's author hid it", who, list)
		}
		cs[0].want(204, "POST", "/v1/comments/{id}/report", a, map[string]string{"reason": "harassment"}, nil, c.ID)
		cs[0].want(204, "DELETE", "/v1/comments/{id}", a, nil, nil, c.ID)
		if st, _ := commentStatus(t, cs[2], other, c.ID); st != 404 {
			t.Fatalf("blocked by the %s: the deleted comment answers %d", who, st)
		}
		cs[0].want(204, "DELETE", "/v1/blocks/{id}", a, nil, nil, ids[1])
		cs[1].want(204, "DELETE", "/v1/blocks/{id}", cm, nil, nil, ids[0])
	}
}

// TestReplyToObeysVisibility: H replies in S's thread on X's post, and S
// answers H. Whether V is shown H in that answer's reply_to (among the
// thread's first replies in both list orders, on /replies and by id: 4
// reads), as V and H
// stand: blocked either way or hidden (by moderation, by the post's
// author): null; muted: collapsed; else H.
func TestReplyToObeysVisibility(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	cs, toks, ids := loopbackUsers(t, s, "13800000941", "13800000942", "13800000943", "13800000944")
	x, sv, v := toks[0], toks[1], toks[3]
	cases := []struct {
		name      string
		set, undo func(h string, hID, reply int64, hc *v1Client)
		user      bool   // reply_to.user is H
		collapsed string // reply_to.collapsed
	}{
		{name: "none", user: true},
		{name: "V blocks H", set: func(_ string, hID, _ int64, _ *v1Client) { cs[3].want(204, "PUT", "/v1/blocks/{id}", v, nil, nil, hID) }},
		{name: "H blocks V", set: func(h string, _, _ int64, hc *v1Client) { hc.want(204, "PUT", "/v1/blocks/{id}", h, nil, nil, ids[3]) }},
		{name: "V mutes H", user: true, collapsed: "muted_user",
			set: func(_ string, hID, _ int64, _ *v1Client) { cs[3].want(204, "PUT", "/v1/mutes/{id}", v, nil, nil, hID) }},
		{name: "H's reply hidden by moderation", set: func(_ string, _, reply int64, _ *v1Client) {
			s.adminCall("POST", fmt.Sprintf("/admin/comments/%d/hide", reply), 204)
		}},
		{name: "H's reply hidden by the post's author", set: func(_ string, _, reply int64, _ *v1Client) {
			cs[0].want(204, "PUT", "/v1/comments/{id}/hidden", x, nil, nil, reply)
		}},
	}
	for i, tc := range cases {
		hc := s.from(fmt.Sprintf("127.0.0.%d", 10+i)).v1()
		h := hc.login(fmt.Sprintf("1380000095%d", i))
		hID := hc.me(h).ID
		p := cs[0].publish(x, "X's post: "+tc.name)
		thread := cs[1].addComment(sv, p.ID, "S's thread", 0)
		hr := hc.addComment(h, p.ID, "H in S's thread", thread.ID)
		answer := cs[1].addComment(sv, p.ID, "S answers H", hr.ID)
		if tc.set != nil {
			tc.set(h, hID, hr.ID, hc)
		}
		var reads []apiComment
		for _, order := range []string{"top", "new"} {
			for _, c := range cs[3].comments(v, p.ID, order, 10) {
				for _, r := range c.Replies {
					if r.ID == answer.ID {
						reads = append(reads, r)
					}
				}
			}
		}
		var page apiPage[apiComment]
		cs[3].want(200, "GET", "/v1/comments/{id}/replies", v, nil, &page, thread.ID)
		for _, r := range page.Data {
			if r.ID == answer.ID {
				reads = append(reads, r)
			}
		}
		if st, got := commentStatus(t, cs[3], v, answer.ID); st == 200 {
			reads = append(reads, got)
		}
		if len(reads) != 4 {
			t.Fatalf("%s: S's answer is in %d of 4 reads", tc.name, len(reads))
		}
		for n, r := range reads {
			gotUser := r.ReplyTo != nil && r.ReplyTo.User != nil && r.ReplyTo.User.ID == hID
			var coll string
			if r.ReplyTo != nil {
				coll = r.ReplyTo.Collapsed
			}
			if r.ReplyTo == nil || r.ReplyTo.CommentID != hr.ID || gotUser != tc.user || coll != tc.collapsed || (!gotUser && r.ReplyTo.User != nil) {
				t.Errorf("%s, read %d: reply_to %+v, want comment %d, H shown %v, collapsed %q", tc.name, n+1, r.ReplyTo, hr.ID, tc.user, tc.collapsed)
			}
		}
	}
}

// TestReplyNotificationVisibility: B comments on A's post; A blocks B; C
// replies to B's comment. B is told the post does not exist, and is not
// told of the reply: not in the list, the unread count or the live stream
// (D's follow of B, made after, is the next notification event B's stream
// carries). The same under a post moderation hid: a reply B was told of
// before leaves the list and the count, and the post's author's reply
// after is not told.
func TestReplyNotificationVisibility(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	cs, toks, ids := loopbackUsers(t, s, "13800000961", "13800000962", "13800000963", "13800000964", "13800000965")
	a, b, c := toks[0], toks[1], toks[2]
	st := cs[1].openStream(b, "", "127.0.0.20")
	// nextFollow reads B's notification events up to the follow of
	// follower, failing on any that carries post.
	nextFollow := func(follower int, post int64) {
		t.Helper()
		cs[follower].want(204, "PUT", "/v1/following/{id}", toks[follower], nil, nil, ids[1])
		for {
			n := notificationEvent(t, cs[1], st)
			if n.Post != nil && n.Post.ID == post {
				t.Fatalf("B's stream carries a %s group with post %d, which B is not shown", n.Kind, post)
			}
			if n.Kind == "follow" && len(n.Actors) > 0 && n.Actors[0].ID == ids[follower] {
				return
			}
		}
	}
	listed := func(post int64) bool {
		t.Helper()
		ns := cs[1].notifications(b)
		if n := cs[1].unread(b); n != len(ns) {
			t.Errorf("B's unread count %d, but %d groups listed, all unread", n, len(ns))
		}
		return slices.ContainsFunc(ns, func(n apiNotification) bool { return n.Post != nil && n.Post.ID == post })
	}

	p := cs[0].publish(a, "A's post")
	bc := cs[1].addComment(b, p.ID, "B's comment", 0)
	cs[0].want(204, "PUT", "/v1/blocks/{id}", a, nil, nil, ids[1])
	cs[2].addComment(c, p.ID, "C answers B", bc.ID)
	cs[1].refused(404, "not_found", "GET", "/v1/posts/{id}", b, nil, p.ID)
	nextFollow(3, p.ID)
	if listed(p.ID) {
		t.Fatalf("B's notifications carry the post of an author who blocks B")
	}

	cs[0].want(204, "DELETE", "/v1/blocks/{id}", a, nil, nil, ids[1])
	q := cs[0].publish(a, "A's post, to be hidden")
	qc := cs[1].addComment(b, q.ID, "B's comment", 0)
	cs[2].addComment(c, q.ID, "C answers B", qc.ID)
	for n := notificationEvent(t, cs[1], st); n.Post == nil || n.Post.ID != q.ID; n = notificationEvent(t, cs[1], st) {
	}
	if !listed(q.ID) {
		t.Fatal("B's notifications lack the reply under a post B is shown")
	}
	s.adminCall("POST", fmt.Sprintf("/admin/posts/%d/hide", q.ID), 204)
	if listed(q.ID) {
		t.Fatalf("B's notifications carry a post moderation hid")
	}
	cs[2].refused(404, "not_found", "POST", "/v1/posts/{id}/comments", c, map[string]any{"text": "again", "reply_to": qc.ID}, q.ID)
	cs[0].addComment(a, q.ID, "A answers B under the hidden post", qc.ID)
	nextFollow(4, q.ID)
	if listed(q.ID) {
		t.Fatalf("B's notifications carry a post moderation hid, after a new reply")
	}
}
