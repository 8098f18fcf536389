package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/feedd/feedd/redis"
)

// holds reports whether the Redis set key holds post id.
func (b *backendArgs) holds(t *testing.T, key string, id int64) bool {
	t.Helper()
	_, err := b.rdb.ZScore(context.Background(), key, strconv.FormatInt(id, 10)).Result()
	return err == nil
}

func (s *server) feedIDs(token string) []int64 { return ids(s.scrollAll(token, 7)) }

// waitJobsDone waits until no River job in the database at url is pending.
func waitJobsDone(t *testing.T, url string) {
	t.Helper()
	waitFor(t, "jobs done", func() bool {
		return pgQueryInt(t, url, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`) == 0
	})
}

func noDuplicates(t *testing.T, what string, ids []int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("%s: post %d twice in %v", what, id, ids)
		}
		seen[id] = true
	}
}

// TestHybridEndToEnd drives the large-system features through the real
// server on PostgreSQL + Redis with --pull-threshold 3: pull mode (posts in
// every follower's feed, in no follower's inbox), leaving it without losing
// or doubling a post, backfill on follow, removal on unfollow, deletes, and
// an inactive user skipped by fan-out whose feed is right on return.
func TestHybridEndToEnd(t *testing.T) {
	clk := useClock(t)
	b := singleNode(t)
	s := startServer(t, append([]string{"--pull-threshold", "3", "--active-days", "30", "--backfill", "50"}, b.args...)...)
	a := s.login("13800000001")
	aID := s.me(a)
	var fans []string
	var fanIDs []int64
	for i := 0; i < 5; i++ {
		tok := s.login(fmt.Sprintf("1390000000%d", i))
		fans, fanIDs = append(fans, tok), append(fanIDs, s.me(tok))
		s.must("PUT", fmt.Sprintf("/follow/%d/true", aID), tok, nil, nil)
	}

	// Pull mode: the post reaches every feed, and no follower's inbox.
	var p1 int64
	s.must("POST", "/blog", a, map[string]any{"title": "big news", "content": "to all"}, &p1)
	for i, tok := range fans {
		waitFor(t, "post in feed", func() bool { return slices.Contains(s.feedIDs(tok), p1) })
		if b.holds(t, redis.InboxKey(b.prefix, fanIDs[i]), p1) {
			t.Fatalf("follower %d's Redis inbox holds a pull-mode post", fanIDs[i])
		}
	}
	if !b.holds(t, redis.OutboxKey(b.prefix, aID), p1) {
		t.Fatal("the author's outbox lacks the post")
	}

	// Backfill on follow, removal on unfollow.
	bTok := s.login("13700000001")
	bID := s.me(bTok)
	var bPosts []int64
	for i := 0; i < 3; i++ {
		var id int64
		s.must("POST", "/blog", bTok, map[string]any{"title": fmt.Sprintf("b%d", i), "content": "small"}, &id)
		bPosts = append(bPosts, id)
	}
	g := s.login("13700000002")
	gID := s.me(g)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", bID), g, nil, nil)
	waitFor(t, "backfill", func() bool {
		f := s.feedIDs(g)
		return len(f) == 3 && slices.Contains(f, bPosts[0]) && slices.Contains(f, bPosts[2])
	})
	for _, id := range bPosts {
		if !b.holds(t, redis.InboxKey(b.prefix, gID), id) {
			t.Fatalf("backfilled post %d not in the inbox", id)
		}
	}
	s.must("PUT", fmt.Sprintf("/follow/%d/false", bID), g, nil, nil)
	if f := s.feedIDs(g); len(f) != 0 {
		t.Fatalf("after unfollow the feed still shows %v", f)
	}
	waitFor(t, "removal from the inbox", func() bool { return !b.holds(t, redis.InboxKey(b.prefix, gID), bPosts[1]) })

	// Deletes disappear from every feed.
	s.must("DELETE", fmt.Sprintf("/blog/%d", p1), a, nil, nil)
	for _, tok := range fans {
		if slices.Contains(s.feedIDs(tok), p1) {
			t.Fatal("deleted post still in a feed")
		}
	}

	// Leaving pull mode: three unfollow (5 -> 2 followers, under 9/10 of
	// 3); the remaining followers' inboxes get the post published in pull
	// mode, and their feeds never lose or double it.
	var p2 int64
	s.must("POST", "/blog", a, map[string]any{"title": "while big", "content": "pull"}, &p2)
	waitFor(t, "post in feed", func() bool { return slices.Contains(s.feedIDs(fans[0]), p2) })
	for _, tok := range fans[2:] {
		s.must("PUT", fmt.Sprintf("/follow/%d/false", aID), tok, nil, nil)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !b.holds(t, redis.InboxKey(b.prefix, fanIDs[0]), p2) || !b.holds(t, redis.InboxKey(b.prefix, fanIDs[1]), p2) {
		for _, tok := range fans[:2] {
			f := s.feedIDs(tok)
			noDuplicates(t, "while leaving pull mode", f)
			if !slices.Contains(f, p2) {
				t.Fatalf("post %d missing from a feed while the author leaves pull mode: %v", p2, f)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the author's posts were not pushed when leaving pull mode")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var p3 int64
	s.must("POST", "/blog", a, map[string]any{"title": "small again", "content": "push"}, &p3)
	waitFor(t, "push delivery", func() bool { return b.holds(t, redis.InboxKey(b.prefix, fanIDs[0]), p3) })
	for _, tok := range fans[:2] {
		f := s.feedIDs(tok)
		noDuplicates(t, "after leaving pull mode", f)
		if !slices.Contains(f, p2) || !slices.Contains(f, p3) {
			t.Fatalf("feed after leaving pull mode: %v", f)
		}
	}

	// An inactive user is skipped by fan-out and gets a correct feed on return.
	h := s.login("13600000001")
	hID := s.me(h)
	k := s.login("13600000002")
	kID := s.me(k)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", bID), h, nil, nil)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", bID), k, nil, nil)
	waitFor(t, "backfill", func() bool { return len(s.feedIDs(h)) == 3 })
	waitJobsDone(t, b.dbURL)                    // the follow jobs ran (a month ago, for the server)
	clk.shift.Store(int64(31 * 24 * time.Hour)) // a month passes; every session has expired
	bTok = s.login("13700000001")
	s.login("13600000002") // k comes back (a login marks the user active); h stays away
	var p4 int64
	s.must("POST", "/blog", bTok, map[string]any{"title": "while you were away", "content": "hello"}, &p4)
	waitFor(t, "delivery to the active follower", func() bool { return b.holds(t, redis.InboxKey(b.prefix, kID), p4) })
	waitJobsDone(t, b.dbURL) // the post's fan-out is over: whatever it delivers is delivered
	if b.holds(t, redis.InboxKey(b.prefix, hID), p4) {
		t.Fatal("fan-out delivered to a user idle past --active-days")
	}
	h = s.login("13600000001") // back
	var page scroll
	s.must("GET", fmt.Sprintf("/blog/of/follow?lastId=%d", clk.Now().UnixMilli()+1), h, nil, &page)
	if len(page.List) == 0 || page.List[0].ID != p4 || len(page.List) != 4 {
		t.Fatalf("first page after the return: %+v, want %d first and B's 3 older posts", page.List, p4)
	}
}
