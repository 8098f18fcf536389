package main

import (
	"fmt"
	"net/http"
	"testing"

	feed "github.com/feedd/feedd"
)

// TestWriteLimitsOfOtherWrites: deletes (both APIs, one count, comments'
// deletes and hides with them), blocks,
// mutes, muted words and notification changes each have a per-user limit
// (docs/operations.md, "Per-user write limits"): at 2 a minute, the third
// of each kind is refused, 429 with Retry-After on /v1 and the compatible
// refusal on /blog; another user is not refused, and a refusal left the
// post in place.
func TestWriteLimitsOfOtherWrites(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--delete-limit-user", "2/1m", "--block-limit-user", "2/1m",
		"--mute-limit-user", "2/1m", "--muted-word-limit-user", "2/1m", "--notification-limit-user", "2/1m")
	u, o := s.from("127.0.0.2"), s.from("127.0.0.3")
	uc, oc := u.v1(), o.v1()
	utok, otok := uc.login("13900000001"), oc.login("13900000002")
	oID := oc.me(otok).ID

	var posts []int64
	for i := range 3 {
		posts = append(posts, uc.publish(utok, fmt.Sprint("p", i)).ID)
	}
	if r := u.do("DELETE", fmt.Sprintf("/blog/%d", posts[0]), utok, nil); !r.Success {
		t.Fatalf("first delete: %s", r.Raw)
	}
	uc.want(204, "DELETE", "/v1/posts/{id}", utok, nil, nil, posts[1])
	uc.refused(429, feed.ETOOMANY, "DELETE", "/v1/posts/{id}", utok, nil, posts[2])
	wantWait(t, u.do("DELETE", fmt.Sprintf("/blog/%d", posts[2]), utok, nil), "compatible delete over the limit")
	uc.want(200, "GET", "/v1/posts/{id}", utok, nil, nil, posts[2])

	for _, k := range []struct{ put, del, arg string }{
		{"PUT", "DELETE", "/v1/blocks/{id}"},
		{"PUT", "DELETE", "/v1/mutes/{id}"},
		{"PUT", "DELETE", "/v1/muted-words/{word}"},
	} {
		arg := any(oID)
		if k.arg == "/v1/muted-words/{word}" {
			arg = "spoiler"
		}
		uc.want(204, k.put, k.arg, utok, nil, nil, arg)
		uc.want(204, k.del, k.arg, utok, nil, nil, arg)
		r, err := uc.send(k.put, k.arg, utok, nil, arg)
		if err != nil {
			t.Fatal(err)
		}
		want429(t, &http.Response{StatusCode: r.Status, Header: r.Header}, r.Raw, k.put+" "+k.arg+" over the limit")
	}
	uc.want(204, "POST", "/v1/notifications/read", utok, nil, nil)
	uc.want(204, "POST", "/v1/notifications/read", utok, nil, nil)
	uc.refused(429, feed.ETOOMANY, "DELETE", "/v1/notifications/{key}", utok, nil, feed.NotifyKey(1))

	// Comments: deletes and hides of comments count as deletes.
	w := s.from("127.0.0.4").v1()
	wtok := w.login("13900000003")
	wp := w.publish(wtok, "commented")
	var cs []int64
	for i := range 3 {
		cs = append(cs, oc.addComment(otok, wp.ID, fmt.Sprint("c", i), 0).ID)
	}
	w.want(204, "PUT", "/v1/comments/{id}/hidden", wtok, nil, nil, cs[0])
	w.want(204, "DELETE", "/v1/comments/{id}", wtok, nil, nil, cs[1])
	w.refused(429, feed.ETOOMANY, "DELETE", "/v1/comments/{id}", wtok, nil, cs[2])
	w.refused(429, feed.ETOOMANY, "DELETE", "/v1/comments/{id}/hidden", wtok, nil, cs[0])
	oc.want(200, "GET", "/v1/comments/{id}", otok, nil, nil, cs[2])

	// Per user: the other user is not refused.
	oc.want(204, "PUT", "/v1/mutes/{id}", otok, nil, nil, uc.me(utok).ID)
	oc.want(204, "POST", "/v1/notifications/read", otok, nil, nil)
}

// TestPostEditLimit: changes to one's posts (PATCH /v1/posts/{id}) have a
// per-user limit, --edit-limit-user: at 2 a minute, the third is refused
// 429 with Retry-After and changes nothing; another user is not refused.
func TestPostEditLimit(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--edit-limit-user", "2/1m")
	u, o := s.from("127.0.0.2").v1(), s.from("127.0.0.3").v1()
	utok, otok := u.login("13900000011"), o.login("13900000012")
	p, q := u.publish(utok, "mine"), o.publish(otok, "theirs")
	var got apiPost
	for _, policy := range []string{"following", "nobody"} {
		u.want(200, "PATCH", "/v1/posts/{id}", utok, map[string]string{"comment_policy": policy}, &got, p.ID)
	}
	r, err := u.send("PATCH", "/v1/posts/{id}", utok, map[string]string{"comment_policy": "everyone"}, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	want429(t, &http.Response{StatusCode: r.Status, Header: r.Header}, r.Raw, "a third change within the minute")
	u.want(200, "GET", "/v1/posts/{id}", utok, nil, &got, p.ID)
	if got.CommentPolicy != "nobody" {
		t.Errorf("comment policy %q after a refused change, want nobody", got.CommentPolicy)
	}
	for range 2 {
		o.want(200, "PATCH", "/v1/posts/{id}", otok, map[string]string{"comment_policy": "following"}, nil, q.ID)
	}
}
