package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestInboxCapEndToEnd: with --inbox-cap 50 an author posts 130 times, and
// the follower's compatible feed (every page of GET /blog/of/follow) holds
// between 50 and 62 posts (the cap plus the SQL inboxes' slack,
// feed.InboxSlack): the newest ones, newest first. On the
// SQLite inbox (the embedded default) and the PostgreSQL one (PostgreSQL
// without Redis).
func TestInboxCapEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"sqlite", func(t *testing.T) []string { return []string{"--data", t.TempDir()} }},
		{"postgres", func(t *testing.T) []string { return []string{"--database-url", testenv.PostgresURL(t)} }},
	} {
		t.Run(b.name, func(t *testing.T) {
			const cap, most, posts = 50, 62, 130
			// One worker takes the fan-out jobs in the order of the posts, so
			// the inboxes receive them in order.
			s := startServer(t, append([]string{"--inbox-cap", fmt.Sprint(cap), "--workers", "1"}, b.args(t)...)...)
			author, fan := s.login("13800000031"), s.login("13900000032")
			authorID := s.me(author)
			s.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), fan, nil, nil)

			var ids []int64
			for i := range posts {
				var id int64
				s.must("POST", "/blog", author, map[string]any{"title": fmt.Sprintf("post %d", i), "content": "hello"}, &id)
				ids = append(ids, id)
			}
			last := ids[len(ids)-1]
			waitFor(t, "fan-out of the last post", func() bool { return s.newest(fan) == last && s.newest(author) == last })
			want := slices.Clone(ids)
			slices.Reverse(want) // newest first
			for _, who := range []struct {
				name, token string
			}{{"follower", fan}, {"author", author}} {
				n := -1
				for _, size := range []int{1, 7, 10, 50} {
					got := s.scrollAll(who.token, size)
					gotIDs := make([]int64, len(got))
					for i, p := range got {
						gotIDs[i] = p.ID
					}
					if len(got) < cap || len(got) > most || !slices.Equal(gotIDs, want[:len(got)]) {
						t.Fatalf("%s's feed (pages of %d) holds %d posts, want %d to %d, the newest first:\n got %v\nwant the first of %v",
							who.name, size, len(got), cap, most, gotIDs, want)
					}
					if n >= 0 && len(got) != n {
						t.Fatalf("%s's feed holds %d posts in pages of %d, %d in others", who.name, len(got), size, n)
					}
					n = len(got)
				}
				t.Logf("%s's feed holds %d posts (cap %d)", who.name, n, cap)
			}
		})
	}
}

// newest returns the id of the first post of token's follow feed, 0 if none.
func (s *server) newest(token string) int64 {
	s.t.Helper()
	r := s.do("GET", fmt.Sprintf("/blog/of/follow?lastId=%d&size=1", time.Now().UnixMilli()+1), token, nil)
	if r.Status != 200 || !r.Success {
		s.t.Fatalf("GET /blog/of/follow: %s", r.Raw)
	}
	var page scroll
	if r.Data == nil || string(r.Data) == "null" {
		return 0
	}
	if err := json.Unmarshal(r.Data, &page); err != nil || len(page.List) == 0 {
		return 0
	}
	return page.List[0].ID
}
