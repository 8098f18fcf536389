package main

import (
	"net/url"
	"slices"
	"testing"
)

// invisibleSpellings spell the muted word "spoiler" with Unicode format
// characters (category Cf) inside, which show nothing: a word filter that
// reads them as word boundaries lets each through.
var invisibleSpellings = []string{
	"spoi\u200bler",       // ZERO WIDTH SPACE
	"spoi\u200dler",       // ZERO WIDTH JOINER
	"SPOI\u2060LER",       // WORD JOINER, and another case
	"spoi\u00adler",       // SOFT HYPHEN
	"\ufeffsp\u200coiler", // BYTE ORDER MARK before, ZERO WIDTH NON-JOINER inside
}

// TestMutedWordsIgnoreFormatCharacters: a muted word matches whatever
// format characters are put inside it, on every route that applies muted
// words (docs/API.md, "Muted words"): posts leave the viewer's timelines
// (chronological, ranked, compatible) and live stream; comments and
// replies are collapsed in a post's comments (both orders, with their
// first replies), by id and in a thread's replies. A reader without the
// word sees them all.
func TestMutedWordsIgnoreFormatCharacters(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	v, w, a := c.login("13800000351"), c.login("13800000352"), c.login("13800000353")
	aID := c.me(a).ID
	c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, aID)
	c.want(204, "PUT", "/v1/following/{id}", w, nil, nil, aID)
	c.want(204, "PUT", "/v1/muted-words/{word}", v, nil, nil, "Spoiler")
	stream := c.openStream(v, "", "127.0.0.2")

	var muted []int64
	for _, sp := range invisibleSpellings {
		muted = append(muted, c.publish(a, "the finale: "+sp+" inside").ID)
	}
	for _, id := range muted {
		c.waitTimeline(w, id) // delivered, to v as well (the same job)
	}
	plain := c.publish(a, "an ordinary day")
	c.waitTimeline(v, plain.ID)
	if p := stream.next(t).post(t, c, v); p.ID != plain.ID {
		t.Errorf("v's stream sent post %d (%q) before the unmuted one", p.ID, p.Title)
	}
	for i, id := range muted {
		if got := visibleTo(c, v, id); got != [3]bool{} {
			t.Errorf("%+q: the post is in v's (chronological, ranked, compatible) timelines: %v", invisibleSpellings[i], got)
		}
		if got := visibleTo(c, w, id); got != [3]bool{true, true, true} {
			t.Errorf("%+q: the post is in w's timelines %v, want all three", invisibleSpellings[i], got)
		}
	}

	// Comments: a top-level one and a reply of each spelling, under a
	// post of a.
	post := c.publish(a, "talk about it")
	var tops, replies []int64
	for _, sp := range invisibleSpellings {
		top := c.addComment(a, post.ID, "big "+sp+" here", 0)
		tops = append(tops, top.ID)
		replies = append(replies, c.addComment(a, post.ID, "another "+sp, top.ID).ID)
	}
	for _, reader := range []struct {
		name, token string
		want        bool
	}{{"v", v, true}, {"w", w, false}} {
		seen := map[string]int{}
		check := func(route string, cm apiComment) {
			t.Helper()
			seen[route]++
			if got := cm.Collapsed != nil && *cm.Collapsed == "muted_word"; got != reader.want {
				t.Errorf("%s: comment %d %q on %s: collapsed %v, want %v", reader.name, cm.ID, cm.Text, route, got, reader.want)
			}
		}
		for _, order := range []string{"top", "new"} {
			for _, cm := range c.comments(reader.token, post.ID, order, 50) {
				check("GET /v1/posts/{id}/comments?order="+order, cm)
				for _, r := range cm.Replies {
					check("first replies, order="+order, r)
				}
			}
		}
		for i := range tops {
			for _, id := range []int64{tops[i], replies[i]} {
				var cm apiComment
				c.want(200, "GET", "/v1/comments/{id}", reader.token, nil, &cm, id)
				check("GET /v1/comments/{id}", cm)
			}
			var page apiPage[apiComment]
			c.want(200, "GET", "/v1/comments/{id}/replies", reader.token, nil, &page, tops[i])
			for _, r := range page.Data {
				check("GET /v1/comments/{id}/replies", r)
			}
		}
		n := len(invisibleSpellings)
		want := map[string]int{"GET /v1/posts/{id}/comments?order=top": n, "GET /v1/posts/{id}/comments?order=new": n,
			"first replies, order=top": n, "first replies, order=new": n, "GET /v1/comments/{id}": 2 * n, "GET /v1/comments/{id}/replies": n}
		for route, k := range want {
			if seen[route] != k {
				t.Errorf("%s: %d comments read on %s, want %d", reader.name, seen[route], route, k)
			}
		}
	}

	// A muted word given with format characters is stored without them.
	c.want(204, "PUT", "/v1/muted-words/{word}", w, nil, nil, url.PathEscape("Fi\u00adnale"))
	var words struct{ Data []string }
	c.want(200, "GET", "/v1/muted-words", w, nil, &words)
	if !slices.Equal(words.Data, []string{"finale"}) {
		t.Fatalf("w's muted words %q, want [finale]", words.Data)
	}
	if got := visibleTo(c, w, muted[0]); got != [3]bool{} {
		t.Fatalf("a post with \"finale\" is in the timelines %v of a reader who muted \"fi\\u00adnale\"", got)
	}
}
