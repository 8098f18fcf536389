package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// apiRankedPost is a post of a ranked timeline asked with explain=true.
type apiRankedPost struct {
	apiPost
	Rank *struct {
		Score    *float64           `json:"score"`
		Features map[string]float64 `json:"features"`
	} `json:"rank"`
}

// rankedPage reads one page of token's ranked timeline (cursor "" for the
// first) and returns it with its Link header.
func (c *v1Client) rankedPage(token, cursor string, limit int, explain bool) (apiPage[apiRankedPost], string) {
	c.t.Helper()
	q := url.Values{"order": {"ranked"}, "limit": {fmt.Sprint(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if explain {
		q.Set("explain", "true")
	}
	var page apiPage[apiRankedPost]
	r := c.want(200, "GET", "/v1/timeline?"+q.Encode(), token, nil, &page)
	return page, r.Header.Get("Link")
}

func postIDs(ps []apiPost) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func (c *v1Client) publish(token, title string) apiPost {
	c.t.Helper()
	var p apiPost
	c.want(201, "POST", "/v1/posts", token, map[string]any{"title": title, "content": "some text"}, &p)
	return p
}

// waitTimeline waits until post id is in token's chronological timeline
// (fan-out is asynchronous).
func (c *v1Client) waitTimeline(token string, id int64) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("post %d in the timeline", id), func() bool {
		return slices.Contains(postIDs(c.timeline(token, 100)), id)
	})
}

// TestRankedTimeline drives GET /v1/timeline?order=ranked end to end on
// the real server: a viewer whose likes went to one author gets that
// author's unliked posts first; explain=true gives each post its score and
// features; a scroll of six pages, while new posts arrive between pages,
// repeats nothing and shows exactly the posts of its snapshot; the two
// orders' cursors are not interchangeable.
func TestRankedTimeline(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	v, fav, other := c.login("13800000201"), c.login("13800000202"), c.login("13800000203")
	favID, otherID := c.me(fav).ID, c.me(other).ID
	c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, favID)
	c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, otherID)
	var favPosts, all []apiPost
	for i := range 8 {
		f := c.publish(fav, fmt.Sprintf("fav %d", i))
		o := c.publish(other, fmt.Sprintf("other %d", i))
		favPosts = append(favPosts, f)
		all = append(all, f, o)
	}
	c.waitTimeline(v, all[len(all)-1].ID)
	waitFor(t, "16 posts in the timeline", func() bool { return len(c.timeline(v, 100)) == 16 })
	liked := postIDs(favPosts[:3])
	for _, id := range liked {
		c.want(204, "PUT", "/v1/posts/{id}/like", v, nil, nil, id)
	}

	first, link := c.rankedPage(v, "", 5, true)
	if len(first.Data) != 5 || first.NextCursor == nil || !strings.Contains(link, "order=ranked") || !strings.Contains(link, "explain=true") {
		t.Fatalf("first ranked page: %d posts, next %v, Link %q", len(first.Data), first.NextCursor, link)
	}
	for _, p := range first.Data {
		if p.Rank == nil || p.Rank.Score == nil || len(p.Rank.Features) != 7 {
			t.Fatalf("post %d without rank.score and its seven features: %+v", p.ID, p.Rank)
		}
		if p.Author.ID != favID || slices.Contains(liked, p.ID) {
			t.Fatalf("first page holds post %d by %d (liked %v); want the favourite's unliked posts first", p.ID, p.Author.ID, slices.Contains(liked, p.ID))
		}
		if p.Rank.Features["affinity"] <= 0 {
			t.Fatalf("post %d of the liked author has affinity %v", p.ID, p.Rank.Features["affinity"])
		}
	}
	if plain, _ := c.rankedPage(v, "", 5, false); plain.Data[0].Rank != nil {
		t.Fatal("rank shown without explain=true")
	}

	// Six pages of three while posts arrive: nothing repeats, and the
	// scroll shows exactly the 16 posts of its snapshot.
	seen := map[int64]bool{}
	var arrived []int64
	cursor := ""
	pages := 0
	for ; pages < 20; pages++ {
		page, _ := c.rankedPage(v, cursor, 3, false)
		for _, p := range page.Data {
			if seen[p.ID] {
				t.Fatalf("page %d repeats post %d", pages, p.ID)
			}
			seen[p.ID] = true
		}
		if page.NextCursor == nil {
			pages++
			break
		}
		cursor = *page.NextCursor
		n := c.publish(other, fmt.Sprintf("arrived %d", pages))
		c.waitTimeline(v, n.ID)
		arrived = append(arrived, n.ID)
	}
	if pages != 6 || len(seen) != 16 {
		t.Fatalf("ranked scroll: %d pages, %d posts; want 6 pages of the 16 snapshot posts", pages, len(seen))
	}
	for _, id := range arrived {
		if seen[id] {
			t.Fatalf("post %d, published mid-scroll, entered the snapshot", id)
		}
	}
	// A new scroll ranks them in.
	fresh, _ := c.rankedPage(v, "", 100, false)
	if len(fresh.Data) != 16+len(arrived) {
		t.Fatalf("a new ranked scroll has %d posts, want %d", len(fresh.Data), 16+len(arrived))
	}

	chrono := url.QueryEscape(*first.NextCursor)
	var chronoPage apiPage[apiPost]
	c.want(200, "GET", "/v1/timeline?limit=2", v, nil, &chronoPage)
	c.refused(400, "invalid", "GET", "/v1/timeline?cursor="+chrono, v, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?order=ranked&cursor="+url.QueryEscape(*chronoPage.NextCursor), v, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?order=ranked&cursor="+chrono, fav, nil) // another user's snapshot
	c.refused(400, "invalid", "GET", "/v1/timeline?explain=true", v, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?order=best", v, nil)
	c.refused(400, "invalid", "GET", "/v1/timeline?order=ranked&explain=yes", v, nil)
}

// visibleTo returns which of the three timelines of token (chronological,
// ranked, compatible) hold post id.
func visibleTo(c *v1Client, token string, id int64) [3]bool {
	c.t.Helper()
	ranked, _ := c.rankedPage(token, "", 100, false)
	var rankedIDs []int64
	for _, p := range ranked.Data {
		rankedIDs = append(rankedIDs, p.ID)
	}
	compat := slices.ContainsFunc(c.s.scrollAll(token, 3), func(b blog) bool { return b.ID == id })
	return [3]bool{slices.Contains(postIDs(c.timeline(token, 3)), id), slices.Contains(rankedIDs, id), compat}
}

// TestFilteredTimelines: a muted word hides a post from the caller's
// timelines in both orders and from the compatible feed, not from its
// author; three reports by distinct users hide a post from other users'
// timelines (all three) but not from its author's; the caller's list of
// muted words shows the folded word.
func TestFilteredTimelines(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--report-min-age", "0") // accounts made here report
	c := newV1Client(t, s)
	v, a := c.login("13800000301"), c.login("13800000302")
	aID := c.me(a).ID
	c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, aID)
	plain := c.publish(a, "an ordinary day")
	spoiler := c.publish(a, "The finale: big SPOILER inside")
	reported := c.publish(a, "something people dislike")
	c.waitTimeline(v, reported.ID)
	c.waitTimeline(v, spoiler.ID)
	all := [3]bool{true, true, true}
	none := [3]bool{}

	c.want(204, "PUT", "/v1/muted-words/{word}", v, nil, nil, "Spoiler")
	var words struct{ Data []string }
	c.want(200, "GET", "/v1/muted-words", v, nil, &words)
	if !slices.Equal(words.Data, []string{"spoiler"}) {
		t.Fatalf("muted words = %q", words.Data)
	}
	if got := visibleTo(c, v, spoiler.ID); got != none {
		t.Fatalf("muted post visible in (chronological, ranked, compatible) = %v", got)
	}
	if got := visibleTo(c, v, plain.ID); got != all {
		t.Fatalf("an unmuted post visible in %v", got)
	}
	if got := visibleTo(c, a, spoiler.ID); got != all {
		t.Fatalf("the author's own post visible to them in %v", got)
	}
	c.want(204, "DELETE", "/v1/muted-words/{word}", v, nil, nil, "SPOILER")
	if got := visibleTo(c, v, spoiler.ID); got != all {
		t.Fatalf("unmuted post visible in %v", got)
	}

	for i, phone := range []string{"13800000311", "13800000312", "13800000313"} {
		r := c.login(phone)
		c.want(204, "POST", "/v1/posts/{id}/report", r, map[string]string{"reason": "spam"}, nil, reported.ID)
		want := all
		if i == 2 {
			want = none // and a hidden post is not found by others
			c.refused(404, "not_found", "POST", "/v1/posts/{id}/report", r, map[string]string{"reason": "spam again"}, reported.ID)
		} else {
			c.want(204, "POST", "/v1/posts/{id}/report", r, map[string]string{"reason": "spam again"}, nil, reported.ID)
		}
		if got := visibleTo(c, v, reported.ID); got != want {
			t.Fatalf("after %d reporters the post is visible to another user in %v, want %v", i+1, got, want)
		}
	}
	if got := visibleTo(c, a, reported.ID); got != all {
		t.Fatalf("the author's reported post visible to them in %v", got)
	}
	if got := visibleTo(c, v, plain.ID); got != all {
		t.Fatalf("an unreported post visible in %v", got)
	}
}

// v1FilterExchanges sends every documented response of the filter
// endpoints (TestV1API checks that each was seen): a and b are users, post
// a post of a.
func v1FilterExchanges(t *testing.T, c *v1Client, a, b string, post int64) {
	c.want(204, "PUT", "/v1/muted-words/{word}", a, nil, nil, url.PathEscape("剧透"))
	var words struct{ Data []string }
	c.want(200, "GET", "/v1/muted-words", a, nil, &words)
	if !slices.Equal(words.Data, []string{"剧透"}) {
		t.Fatalf("muted words = %q", words.Data)
	}
	for i := 1; i < 200; i++ {
		c.want(204, "PUT", "/v1/muted-words/{word}", a, nil, nil, fmt.Sprintf("w%03d", i))
	}
	c.refused(409, "conflict", "PUT", "/v1/muted-words/{word}", a, nil, "onemore")
	for i := 1; i < 200; i++ {
		c.want(204, "DELETE", "/v1/muted-words/{word}", a, nil, nil, fmt.Sprintf("w%03d", i))
	}
	c.want(204, "DELETE", "/v1/muted-words/{word}", a, nil, nil, url.PathEscape("剧透"))
	for _, bad := range []string{"two%20words", "c++", strings.Repeat("x", 65)} {
		c.refused(400, "invalid", "PUT", "/v1/muted-words/{word}", a, nil, bad)
		c.refused(400, "invalid", "DELETE", "/v1/muted-words/{word}", a, nil, bad)
	}
	c.refused(401, "unauthorized", "GET", "/v1/muted-words", "", nil)
	c.refused(401, "unauthorized", "PUT", "/v1/muted-words/{word}", "", nil, "x")
	c.refused(401, "unauthorized", "DELETE", "/v1/muted-words/{word}", "", nil, "x")

	c.want(204, "POST", "/v1/posts/{id}/report", b, map[string]string{"reason": "spam"}, nil, post)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/report", a, map[string]string{"reason": "mine"}, post)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/report", b, map[string]string{"reason": " "}, post)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/report", b, map[string]string{"reason": strings.Repeat("x", 501)}, post)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/report", b, map[string]any{"reason": "x", "extra": 1}, post)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/report", b, map[string]string{"reason": "x"}, "abc")
	c.refused(404, "not_found", "POST", "/v1/posts/{id}/report", b, map[string]string{"reason": "x"}, 999999)
	c.refused(401, "unauthorized", "POST", "/v1/posts/{id}/report", "", map[string]string{"reason": "x"}, post)
	c.refused(413, "too_large", "POST", "/v1/posts/{id}/report", b, `{"reason":"`+strings.Repeat("x", 1<<20)+`"}`, post)
}

// TestModerationOnAdminListener: the moderation endpoints are served by
// the admin listener of the real server, not by the public one; three
// reports put a post in the list hidden, restoring it brings it back to
// other users' timelines, hiding it takes it out again.
func TestModerationOnAdminListener(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--report-min-age", "0") // accounts made here report
	c := newV1Client(t, s)
	v, a := c.login("13800000401"), c.login("13800000402")
	c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, c.me(a).ID)
	p := c.publish(a, "contested")
	c.waitTimeline(v, p.ID)
	for _, phone := range []string{"13800000411", "13800000412", "13800000413"} {
		c.want(204, "POST", "/v1/posts/{id}/report", c.login(phone), map[string]string{"reason": "rude"}, nil, p.ID)
	}
	admin := func(method, path string, want int) string { t.Helper(); return s.adminCall(method, path, want) }
	if body := admin("GET", "/admin/reports", 200); !strings.Contains(body, fmt.Sprintf(`"post_id":%d`, p.ID)) || !strings.Contains(body, `"reports":3`) || !strings.Contains(body, `"hidden":true`) {
		t.Fatalf("admin reports: %s", body)
	}
	if got := visibleTo(c, v, p.ID); got != ([3]bool{}) {
		t.Fatalf("reported post visible to another user in %v", got)
	}
	admin("POST", fmt.Sprintf("/admin/posts/%d/restore", p.ID), 204)
	if got := visibleTo(c, v, p.ID); got != [3]bool{true, true, true} {
		t.Fatalf("restored post visible in %v, want all", got)
	}
	admin("POST", fmt.Sprintf("/admin/posts/%d/hide", p.ID), 204)
	if got := visibleTo(c, v, p.ID); got != ([3]bool{}) {
		t.Fatalf("hidden post visible in %v", got)
	}
	for _, path := range []string{"/admin/reports", fmt.Sprintf("/admin/posts/%d/restore", p.ID)} {
		method := "GET"
		if strings.Contains(path, "restore") {
			method = "POST"
		}
		if r := s.do(method, path, v, nil); r.Status != 404 {
			t.Fatalf("public %s %s = %d, want 404", method, path, r.Status)
		}
	}
}
