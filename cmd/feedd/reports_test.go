package main

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestReportsResistBrigade runs the report rule's defaults on the real
// server (--report-min-age 24h, --report-limit 20/24h): three accounts
// made a minute earlier report a post and it stays in its followers'
// timelines; a user its author blocks cannot report it (404); one account
// files 20 reports and the 21st is refused with 429 and Retry-After; a day
// later, the same three accounts, old enough now, hide it.
func TestReportsResistBrigade(t *testing.T) {
	var offset atomic.Int64
	clock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	t.Cleanup(func() { clock = time.Now })
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	author, follower, busy, blocked := c.login("13800000951"), c.login("13800000952"), c.login("13800000953"), c.login("13800000954")
	brigade := []string{"13800000961", "13800000962", "13800000963"}
	c.want(204, "PUT", "/v1/following/{id}", follower, nil, nil, c.me(author).ID)
	c.want(204, "PUT", "/v1/blocks/{id}", author, nil, nil, c.me(blocked).ID)
	p := c.publish(author, "a post some dislike")
	c.waitTimeline(follower, p.ID)
	shown := func(tok string) bool { return slices.Contains(postIDs(c.timeline(tok, 50)), p.ID) }

	report := func(tok string, id int64) *v1Reply {
		t.Helper()
		r, err := c.send("POST", "/v1/posts/{id}/report", tok, map[string]string{"reason": "rude"}, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, phone := range brigade {
		if r := report(c.login(phone), p.ID); r.Status != 204 {
			t.Fatalf("report by a new account: %d %s", r.Status, r.Raw)
		}
	}
	if !shown(follower) {
		t.Fatal("three accounts a minute old hid the post")
	}
	c.refused(404, "not_found", "POST", "/v1/posts/{id}/report", blocked, map[string]string{"reason": "rude"}, p.ID)

	for i := range 21 {
		q := c.publish(author, fmt.Sprintf("post %d", i))
		r := report(busy, q.ID)
		if i < 20 && r.Status != 204 {
			t.Fatalf("report %d of one user: %d %s", i+1, r.Status, r.Raw)
		}
		if i == 20 {
			ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
			if r.Status != 429 || err != nil || ra < 1 {
				t.Fatalf("21st report of one user: %d Retry-After %q %s, want 429 with Retry-After", r.Status, r.Header.Get("Retry-After"), r.Raw)
			}
		}
	}

	offset.Store(int64(25 * time.Hour)) // sessions expired meanwhile: log in again
	follower = c.login("13800000952")
	for i, phone := range brigade {
		report(c.login(phone), p.ID)
		if got := shown(follower); got != (i < 2) {
			t.Fatalf("after %d reports by accounts a day old, shown = %v", i+1, got)
		}
	}
}
