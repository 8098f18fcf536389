package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// apiComment is a comment as the native API shows it.
type apiComment struct {
	ID       int64    `json:"id"`
	PostID   int64    `json:"post_id"`
	ParentID *int64   `json:"parent_id"`
	Author   *apiUser `json:"author"`
	ReplyTo  *struct {
		CommentID int64    `json:"comment_id"`
		User      *apiUser `json:"user"`
		Collapsed string   `json:"collapsed"`
	} `json:"reply_to"`
	Text       string       `json:"text"`
	LikeCount  int          `json:"like_count"`
	LikedByMe  bool         `json:"liked_by_me"`
	ReplyCount int          `json:"reply_count"`
	Deleted    bool         `json:"deleted"`
	Hidden     bool         `json:"hidden"`
	Collapsed  *string      `json:"collapsed"`
	CreatedAt  time.Time    `json:"created_at"`
	Replies    []apiComment `json:"replies"`
}

func (c *v1Client) addComment(token string, post int64, text string, replyTo int64) apiComment {
	c.t.Helper()
	body := map[string]any{"text": text}
	if replyTo != 0 {
		body["reply_to"] = replyTo
	}
	var out apiComment
	r := c.want(201, "POST", "/v1/posts/{id}/comments", token, body, &out, post)
	if loc := r.Header.Get("Location"); loc != fmt.Sprintf("/v1/comments/%d", out.ID) {
		c.t.Fatalf("Location %q for comment %d", loc, out.ID)
	}
	return out
}

// comments reads every page of a post's comments in order.
func (c *v1Client) comments(token string, post int64, order string, limit int) []apiComment {
	c.t.Helper()
	var out []apiComment
	cursor := ""
	for i := 0; ; i++ {
		q := fmt.Sprintf("?order=%s&limit=%d", order, limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var page apiPage[apiComment]
		c.want(200, "GET", "/v1/posts/{id}/comments"+q, token, nil, &page, post)
		out = append(out, page.Data...)
		if page.NextCursor == nil {
			return out
		}
		if i > 100 {
			c.t.Fatal("comment pages do not end")
		}
		cursor = *page.NextCursor
	}
}

func apiCommentIDs(cs []apiComment) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// v1CommentExchanges sends every documented response of the comment routes
// (TestV1API checks that each was seen), checking what they do on the way:
// a and b are users who do not follow each other.
func v1CommentExchanges(t *testing.T, c *v1Client, a, b string) {
	aID, bID := c.me(a).ID, c.me(b).ID
	var p apiPost
	c.want(201, "POST", "/v1/posts", a, map[string]any{"title": "talk to me", "content": "c", "comment_policy": "everyone"}, &p)
	top := c.addComment(b, p.ID, "hello <b>there</b>", 0)
	if top.Text != "hello <b>there</b>" || top.Author == nil || top.Author.ID != bID || top.ParentID != nil || top.ReplyTo != nil {
		t.Fatalf("new comment %+v", top)
	}
	reply := c.addComment(a, p.ID, "welcome", top.ID)
	if reply.ParentID == nil || *reply.ParentID != top.ID || reply.ReplyTo == nil || reply.ReplyTo.CommentID != top.ID || reply.ReplyTo.User.ID != bID {
		t.Fatalf("reply %+v", reply)
	}
	var got apiComment
	c.want(200, "GET", "/v1/comments/{id}", b, nil, &got, reply.ID)
	if got.ID != reply.ID || got.Text != "welcome" {
		t.Fatalf("GET comment %+v", got)
	}
	var post apiPost
	c.want(200, "GET", "/v1/posts/{id}", b, nil, &post, p.ID)
	if post.CommentCount != 2 || post.CommentPolicy != "everyone" {
		t.Fatalf("post after two comments: %+v", post)
	}
	var blog struct {
		Comments int `json:"comments"`
	}
	c.s.must("GET", fmt.Sprintf("/blog/%d", p.ID), b, nil, &blog)
	if blog.Comments != 2 {
		t.Fatalf("the compatible blog record says %d comments, want 2", blog.Comments)
	}
	for _, order := range []string{"top", "new"} {
		list := c.comments(b, p.ID, order, 10)
		if len(list) != 1 || list[0].ID != top.ID || list[0].ReplyCount != 1 || len(list[0].Replies) != 1 || list[0].Replies[0].ID != reply.ID {
			t.Fatalf("%s comments %+v", order, list)
		}
	}
	var replies apiPage[apiComment]
	c.want(200, "GET", "/v1/comments/{id}/replies?limit=5", b, nil, &replies, top.ID)
	if len(replies.Data) != 1 || replies.Data[0].ID != reply.ID || replies.NextCursor != nil {
		t.Fatalf("replies %+v", replies)
	}
	c.want(204, "PUT", "/v1/comments/{id}/like", a, nil, nil, top.ID)
	c.want(204, "PUT", "/v1/comments/{id}/like", a, nil, nil, top.ID)
	c.want(200, "GET", "/v1/comments/{id}", a, nil, &got, top.ID)
	if got.LikeCount != 1 || !got.LikedByMe {
		t.Fatalf("after a like: %+v", got)
	}
	c.want(204, "DELETE", "/v1/comments/{id}/like", a, nil, nil, top.ID)
	c.want(204, "DELETE", "/v1/comments/{id}/like", a, nil, nil, top.ID)

	// The policy, when posting and later; the author alone may change it.
	c.want(200, "PATCH", "/v1/posts/{id}", a, map[string]any{"comment_policy": "following"}, &post, p.ID)
	if post.CommentPolicy != "following" {
		t.Fatalf("after PATCH: %+v", post)
	}
	c.refused(403, "forbidden", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": "refused"}, p.ID)
	c.refused(403, "forbidden", "PATCH", "/v1/posts/{id}", b, map[string]any{"comment_policy": "everyone"}, p.ID)
	c.refused(400, "invalid", "PATCH", "/v1/posts/{id}", a, map[string]any{"comment_policy": "friends"}, p.ID)
	c.refused(400, "invalid", "PATCH", "/v1/posts/{id}", a, map[string]any{}, p.ID)
	c.refused(404, "not_found", "PATCH", "/v1/posts/{id}", a, map[string]any{"comment_policy": "nobody"}, 1<<40)
	c.refused(401, "unauthorized", "PATCH", "/v1/posts/{id}", "", map[string]any{"comment_policy": "nobody"}, p.ID)
	c.refused(413, "too_large", "PATCH", "/v1/posts/{id}", a, `{"comment_policy":"`+strings.Repeat("x", 1<<20)+`"}`, p.ID)
	c.want(200, "PATCH", "/v1/posts/{id}", a, map[string]any{"comment_policy": "everyone"}, &post, p.ID)
	c.refused(400, "invalid", "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "comment_policy": "some"}, nil)

	// Hiding, by the post's author only.
	c.refused(403, "forbidden", "PUT", "/v1/comments/{id}/hidden", b, nil, reply.ID)
	c.want(204, "PUT", "/v1/comments/{id}/hidden", a, nil, nil, top.ID)
	c.want(200, "GET", "/v1/comments/{id}", a, nil, &got, top.ID)
	if !got.Hidden {
		t.Fatalf("the post's author does not see the hidden mark: %+v", got)
	}
	c.want(200, "GET", "/v1/comments/{id}", b, nil, &got, top.ID)
	if got.Hidden {
		t.Fatalf("the comment's author sees the hidden mark: %+v", got)
	}
	c.refused(403, "forbidden", "DELETE", "/v1/comments/{id}/hidden", b, nil, top.ID)
	c.want(204, "DELETE", "/v1/comments/{id}/hidden", a, nil, nil, top.ID)

	// Reports.
	c.want(204, "POST", "/v1/comments/{id}/report", a, map[string]string{"reason": "spam"}, nil, top.ID)
	c.refused(400, "invalid", "POST", "/v1/comments/{id}/report", b, map[string]string{"reason": "mine"}, top.ID)
	c.refused(404, "not_found", "POST", "/v1/comments/{id}/report", b, map[string]string{"reason": "x"}, 1<<40)
	c.refused(401, "unauthorized", "POST", "/v1/comments/{id}/report", "", map[string]string{"reason": "x"}, top.ID)
	c.refused(413, "too_large", "POST", "/v1/comments/{id}/report", b, `{"reason":"`+strings.Repeat("x", 1<<20)+`"}`, top.ID)

	// Refusals of the rest.
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": " "}, p.ID)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": "x", "reply_to": 0}, p.ID)
	c.refused(400, "invalid", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": strings.Repeat("x", 1001)}, p.ID)
	c.refused(404, "not_found", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": "x"}, 1<<40)
	c.refused(404, "not_found", "POST", "/v1/posts/{id}/comments", b, map[string]any{"text": "x", "reply_to": 1 << 40}, p.ID)
	c.refused(401, "unauthorized", "POST", "/v1/posts/{id}/comments", "", map[string]any{"text": "x"}, p.ID)
	c.refused(413, "too_large", "POST", "/v1/posts/{id}/comments", b, `{"text":"`+strings.Repeat("x", 1<<20)+`"}`, p.ID)
	c.refused(400, "invalid", "GET", "/v1/posts/{id}/comments?order=best", b, nil, p.ID)
	c.refused(400, "invalid", "GET", "/v1/posts/{id}/comments?order=new&cursor=x", b, nil, p.ID)
	c.refused(404, "not_found", "GET", "/v1/posts/{id}/comments", b, nil, 1<<40)
	c.refused(401, "unauthorized", "GET", "/v1/posts/{id}/comments", "", nil, p.ID)
	c.refused(400, "invalid", "GET", "/v1/comments/{id}", b, nil, "abc")
	c.refused(404, "not_found", "GET", "/v1/comments/{id}", b, nil, 1<<40)
	c.refused(401, "unauthorized", "GET", "/v1/comments/{id}", "", nil, top.ID)
	c.refused(400, "invalid", "GET", "/v1/comments/{id}/replies", b, nil, reply.ID)
	c.refused(404, "not_found", "GET", "/v1/comments/{id}/replies", b, nil, 1<<40)
	c.refused(401, "unauthorized", "GET", "/v1/comments/{id}/replies", "", nil, top.ID)
	for _, m := range []string{"PUT", "DELETE"} {
		c.refused(400, "invalid", m, "/v1/comments/{id}/like", b, nil, "abc")
		c.refused(404, "not_found", m, "/v1/comments/{id}/like", b, nil, 1<<40)
		c.refused(401, "unauthorized", m, "/v1/comments/{id}/like", "", nil, top.ID)
		c.refused(400, "invalid", m, "/v1/comments/{id}/hidden", a, nil, "abc")
		c.refused(404, "not_found", m, "/v1/comments/{id}/hidden", a, nil, 1<<40)
		c.refused(401, "unauthorized", m, "/v1/comments/{id}/hidden", "", nil, top.ID)
	}
	c.refused(400, "invalid", "POST", "/v1/comments/{id}/report", b, map[string]string{"reason": "x"}, "abc")
	c.refused(400, "invalid", "DELETE", "/v1/comments/{id}", b, nil, "abc")
	c.refused(404, "not_found", "DELETE", "/v1/comments/{id}", b, nil, 1<<40)
	c.refused(401, "unauthorized", "DELETE", "/v1/comments/{id}", "", nil, top.ID)
	c.refused(403, "forbidden", "DELETE", "/v1/comments/{id}", b, nil, reply.ID)

	// Deletes: the post's author deletes the thread, which stays for its
	// reply; its reply's author deletes that, and both are gone.
	c.want(204, "DELETE", "/v1/comments/{id}", a, nil, nil, top.ID)
	list := c.comments(b, p.ID, "new", 10)
	if len(list) != 1 || !list[0].Deleted || list[0].Author != nil || list[0].Text != "" || len(list[0].Replies) != 1 {
		t.Fatalf("after deleting the thread %+v", list)
	}
	c.want(204, "DELETE", "/v1/comments/{id}", a, nil, nil, reply.ID)
	if list := c.comments(b, p.ID, "top", 10); len(list) != 0 {
		t.Fatalf("after deleting the reply: %+v", list)
	}
	c.want(200, "GET", "/v1/posts/{id}", a, nil, &post, p.ID)
	if post.CommentCount != 0 {
		t.Fatalf("comment_count %d after deleting both", post.CommentCount)
	}
	_ = aID
}

// TestCommentScroll: a post's comments in both orders over many pages and a
// thread's replies, through the real server; a blocked user may neither
// comment nor read; the comment limit answers 429 with Retry-After.
func TestCommentScroll(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--comment-limit-user", "13/1m")
	c := newV1Client(t, s)
	a, b, x := c.login("13800000501"), c.login("13800000502"), c.login("13800000503")
	p := c.publish(a, "many comments")
	var made []int64
	for i := range 24 {
		who := a
		if i%2 == 1 {
			who = b
		}
		made = append(made, c.addComment(who, p.ID, fmt.Sprintf("comment %d", i), 0).ID)
	}
	for _, id := range made[:3] {
		c.want(204, "PUT", "/v1/comments/{id}/like", x, nil, nil, id)
	}
	c.want(204, "PUT", "/v1/comments/{id}/like", b, nil, nil, made[2])
	newest := c.comments(x, p.ID, "new", 5)
	want := slices.Clone(made)
	slices.Reverse(want)
	if got := apiCommentIDs(newest); !slices.Equal(got, want) {
		t.Fatalf("new order %v, want %v", got, want)
	}
	top := apiCommentIDs(c.comments(x, p.ID, "top", 5))
	wantTop := append([]int64{made[2], made[1], made[0]}, want[:21]...)
	if !slices.Equal(top, wantTop) {
		t.Fatalf("top order %v, want %v", top, wantTop)
	}
	for i := range 7 {
		c.addComment(x, p.ID, fmt.Sprintf("reply %d", i), made[0])
	}
	var rs []apiComment
	cursor := ""
	for {
		q := "?limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var page apiPage[apiComment]
		c.want(200, "GET", "/v1/comments/{id}/replies"+q, a, nil, &page, made[0])
		rs = append(rs, page.Data...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(rs) != 7 || rs[0].Text != "reply 0" || rs[6].Text != "reply 6" {
		t.Fatalf("replies %+v", rs)
	}
	c.want(204, "PUT", "/v1/blocks/{id}", a, nil, nil, c.me(x).ID)
	c.refused(404, "not_found", "POST", "/v1/posts/{id}/comments", x, map[string]any{"text": "blocked"}, p.ID)
	c.refused(404, "not_found", "GET", "/v1/posts/{id}/comments", x, nil, p.ID)

	// The 13th comment of a is the last its limit allows.
	c.addComment(a, p.ID, "the last allowed", 0)
	r, err := c.send("POST", "/v1/posts/{id}/comments", a, map[string]any{"text": "one too many"}, p.ID)
	if err != nil || r.Status != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Raw), "too many comments") {
		t.Fatalf("over the comment limit: %v %d %q %s", err, r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
}

// TestCommentModerationOnAdminListener: reports put a comment in the admin
// listener's list; the admin hides, restores and deletes it; the public
// listener has none of these routes.
func TestCommentModerationOnAdminListener(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--report-min-age", "0")
	c := newV1Client(t, s)
	a, b := c.login("13800000601"), c.login("13800000602")
	p := c.publish(a, "contested")
	cm := c.addComment(b, p.ID, "rude words", 0)
	for _, phone := range []string{"13800000611", "13800000612", "13800000613"} {
		c.want(204, "POST", "/v1/comments/{id}/report", c.login(phone), map[string]string{"reason": "rude"}, nil, cm.ID)
	}
	admin := func(method, path string, want int) string { t.Helper(); return s.adminCall(method, path, want) }
	if body := admin("GET", "/admin/comments/reports", 200); !strings.Contains(body, fmt.Sprintf(`"comment_id":%d`, cm.ID)) || !strings.Contains(body, `"reports":3`) || !strings.Contains(body, `"hidden":true`) {
		t.Fatalf("admin comment reports: %s", body)
	}
	if list := c.comments(a, p.ID, "top", 10); len(list) != 0 {
		t.Fatalf("a comment hidden by reports is shown to the post's author: %+v", list)
	}
	admin("POST", fmt.Sprintf("/admin/comments/%d/restore", cm.ID), 204)
	if list := c.comments(a, p.ID, "top", 10); len(list) != 1 {
		t.Fatalf("a restored comment: %+v", list)
	}
	admin("POST", fmt.Sprintf("/admin/comments/%d/hide", cm.ID), 204)
	if list := c.comments(a, p.ID, "top", 10); len(list) != 0 {
		t.Fatalf("a comment the admin hid: %+v", list)
	}
	admin("DELETE", fmt.Sprintf("/admin/comments/%d", cm.ID), 204)
	admin("DELETE", fmt.Sprintf("/admin/comments/%d", cm.ID), 404)
	admin("POST", "/admin/comments/abc/hide", 400)
	var post apiPost
	c.want(200, "GET", "/v1/posts/{id}", a, nil, &post, p.ID)
	if post.CommentCount != 0 {
		t.Fatalf("comment_count %d after the admin's delete", post.CommentCount)
	}
	for _, path := range []string{"/admin/comments/reports", fmt.Sprintf("/admin/comments/%d/restore", cm.ID)} {
		method := "GET"
		if strings.Contains(path, "restore") {
			method = "POST"
		}
		if r := s.do(method, path, a, nil); r.Status != 404 {
			t.Fatalf("public %s %s = %d, want 404", method, path, r.Status)
		}
	}
}

// adminCall sends a request without a body to the admin listener, which
// must answer want, and returns the body.
func (s *server) adminCall(method, path string, want int) string {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.admin+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("admin %s %s = %d %s, want %d", method, path, resp.StatusCode, body, want)
	}
	return string(body)
}
