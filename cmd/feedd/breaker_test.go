package main

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestRedisBreaker stops and restarts a redis-server of its own under a
// PostgreSQL + Redis feedd: while Redis is down the breaker is open (logged)
// and every login check, feed page and publish succeeds; once Redis is back
// the breaker closes (logged with the outage's length) and the posts of the
// outage reach the Redis inbox. It logs the medians of each request with
// Redis up and down, the figures of BENCHMARKS.md ("Recovery"); nothing
// here asserts a time.
func TestRedisBreaker(t *testing.T) {
	r := startOwnRedis(t)
	b := &backendArgs{rdb: r.client(t), dbURL: testenv.PostgresURL(t)}
	api := startProc(t, nil, "serve", "--addr", "127.0.0.1:0", "--workers", "2", "--database-url", b.dbURL, "--redis-url", r.url(), "--inbox-layout", "zset") // inboxIDs reads the sorted set
	c := api.client(t)
	author, reader := c.login("13800000001"), c.login("13800000002")
	authorID, readerID := c.me(author), c.me(reader)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), reader, nil, nil)

	var posts []int64
	const n = 25
	measure := func(label string) {
		var me, page, pub []time.Duration
		for i := range n {
			t0 := time.Now()
			c.must("GET", "/user/me", reader, nil, nil)
			me = append(me, time.Since(t0))
			t0 = time.Now()
			c.must("GET", "/blog/of/follow?lastId="+strconv.FormatInt(time.Now().UnixMilli()+1, 10), reader, nil, nil)
			page = append(page, time.Since(t0))
			var id int64
			t0 = time.Now()
			c.must("POST", "/blog", author, map[string]any{"title": label, "content": strconv.Itoa(i)}, &id)
			pub = append(pub, time.Since(t0))
			posts = append(posts, id)
		}
		med := func(ds []time.Duration) string {
			slices.Sort(ds)
			return fmt.Sprintf("%.2f ms", float64(ds[len(ds)/2])/1e6)
		}
		t.Logf("Redis %s: median GET /user/me %s, feed page %s, publish %s (%d each)", label, med(me), med(page), med(pub), n)
	}
	measure("up")
	waitFor(t, "delivery", func() bool { return len(b.inboxIDs(t, readerID)) == n })

	r.stop()
	// The first request that needs Redis finds it gone and opens the breaker.
	c.must("GET", "/blog/of/follow?lastId="+strconv.FormatInt(time.Now().UnixMilli()+1, 10), reader, nil, nil)
	api.logs.wait(t, "redis unavailable: serving degraded from the database, probing Redis in the background", nil)
	measure("down")

	back := time.Now()
	r.start(t)
	rec := api.logs.wait(t, "redis back: serving from Redis again", nil)
	t.Logf("breaker closed %.2f s after redis-server was started; outage logged as %v", time.Since(back).Seconds(), rec["outage"])
	if s, _ := rec["outage_s"].(float64); s <= 0 {
		t.Errorf("outage_s = %v, want the outage's length", rec["outage_s"])
	}
	want := slices.Clone(posts)
	slices.Sort(want)
	waitFor(t, "the outage's deliveries in Redis", func() bool { return slices.Equal(b.inboxIDs(t, readerID), want) })
	measure("back")
}
