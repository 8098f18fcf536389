package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/redis"
)

// backendArgs are the feedd flags of one production backend under test.
type backendArgs struct {
	name   string
	args   []string
	rdb    goredis.UniversalClient
	prefix string
	dbURL  string
}

func singleNode(t *testing.T) *backendArgs {
	url, prefix := testenv.RedisURL(t)
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	t.Cleanup(func() { cleanupKeys(rdb, prefix); rdb.Close() })
	db := testenv.PostgresURL(t)
	return &backendArgs{name: "redis", rdb: rdb, prefix: prefix, dbURL: db,
		args: []string{"--database-url", db, "--redis-url", url, "--redis-prefix", prefix, "--inbox-layout", "zset"}}
}

func cluster(t *testing.T) *backendArgs {
	addrs, prefix := testenv.RedisCluster(t)
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { cleanupKeys(rdb, prefix); rdb.Close() })
	db := testenv.PostgresURL(t)
	return &backendArgs{name: "cluster", rdb: rdb, prefix: prefix, dbURL: db,
		args: []string{"--database-url", db, "--redis-cluster", joinComma(addrs), "--redis-prefix", prefix, "--inbox-layout", "zset"}}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// cleanupKeys deletes a test's keys from a shared Redis (node or cluster).
func cleanupKeys(rdb goredis.UniversalClient, prefix string) {
	ctx := context.Background()
	del := func(c *goredis.Client) {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for _, k := range keys {
			c.Del(ctx, k)
		}
	}
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { del(n); return nil })
	case *goredis.Client:
		del(c)
	}
}

// inboxIDs returns the post ids in a Redis inbox (without its sentinel): in
// the sorted set of --inbox-layout zset (decimal ids), or in the head of a
// packed one (packed entries: the id is their last 8 bytes).
func (b *backendArgs) inboxIDs(t *testing.T, userID int64) []int64 {
	t.Helper()
	var ids []int64
	for _, head := range []struct {
		key    string
		packed bool
	}{{redis.InboxKey(b.prefix, userID), false}, {redis.PackedHeadKey(b.prefix, userID), true}} {
		members, err := b.rdb.ZRangeByScore(context.Background(), head.key, &goredis.ZRangeBy{Min: "(-inf", Max: "+inf"}).Result()
		if err != nil {
			t.Fatal(err)
		}
		packed := head.packed
		for _, m := range members {
			if packed && len(m) == redis.PackedEntrySize {
				ids = append(ids, int64(binary.BigEndian.Uint64([]byte(m[6:]))))
				continue
			}
			id, err := strconv.ParseInt(m, 10, 64)
			if err != nil || packed {
				t.Fatalf("inbox member %q is not a post id", m)
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// holders counts the users among ids whose Redis inbox holds postID, with
// pipelined ZSCOREs.
func (b *backendArgs) holders(t *testing.T, postID int64, ids []int64) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	member := strconv.FormatInt(postID, 10)
	for start := 0; start < len(ids); start += 5000 {
		chunk := ids[start:min(start+5000, len(ids))]
		cmds, err := b.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, id := range chunk {
				p.ZScore(ctx, redis.InboxKey(b.prefix, id), member)
			}
			return nil
		})
		if err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			if c.Err() == nil {
				n++
			}
		}
	}
	return n
}

// seedPG creates an author with phone and n followers directly in the
// PostgreSQL database at url (migrating it first), and returns the ids of
// the author and the followers.
func seedPG(t *testing.T, url, phone string, n int) (int64, []int64) {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var author int64
	if err := conn.QueryRow(ctx, `INSERT INTO users (phone, nick_name, fans, created_at, active_at) VALUES ($1, 'author', $2, 0, $3) RETURNING id`, phone, n, time.Now().UnixMilli()).Scan(&author); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO users (phone, nick_name, followee, created_at, active_at)
		SELECT '170' || lpad(g::text, 8, '0'), 'f' || g, 1, 0, $2 FROM generate_series(1, $1::int) g`, n, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO follows (follower_id, followee_id, created_at) SELECT id, $1, 0 FROM users WHERE id <> $1`, author); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, `SELECT follower_id FROM follows WHERE followee_id = $1 ORDER BY 1`, author)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return author, ids
}

func pgQueryInt(t *testing.T, url, q string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// publishBursts publishes n posts from token in bursts of concurrent
// requests, so that many share a millisecond; it returns the ids.
func publishBursts(t *testing.T, c *server, token string, n int) []int64 {
	t.Helper()
	var mu sync.Mutex
	var ids []int64
	for made := 0; made < n; {
		burst := min(12, n-made)
		var wg sync.WaitGroup
		for i := 0; i < burst; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				var id int64
				c.must("POST", "/blog", token, map[string]any{"title": fmt.Sprintf("post %d", made+i), "content": "burst"}, &id)
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		made += burst
	}
	return ids
}

// feedOrder sorts blogs as a feed: creation time descending, then id.
func feedOrder(t *testing.T, posts []blog) []int64 {
	t.Helper()
	type k struct {
		ms int64
		id int64
	}
	var ks []k
	for _, p := range posts {
		tm, err := time.Parse(time.RFC3339Nano, p.Created)
		if err != nil {
			t.Fatalf("createTime %q: %v", p.Created, err)
		}
		ks = append(ks, k{tm.UnixMilli(), p.ID})
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].ms != ks[j].ms {
			return ks[i].ms > ks[j].ms
		}
		return ks[i].id > ks[j].id
	})
	out := make([]int64, len(ks))
	for i, x := range ks {
		out[i] = x.id
	}
	return out
}

func ids(posts []blog) []int64 {
	out := make([]int64, len(posts))
	for i, p := range posts {
		out[i] = p.ID
	}
	return out
}

// TestProductionScenario is the core scenario on PostgreSQL + Redis (one
// node, then a 3-node Cluster) with an API-only process and two worker
// processes: every follower's Redis inbox holds exactly the 200 posts, and
// scrolling sees each once, in feed order.
func TestProductionScenario(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) *backendArgs{singleNode, cluster} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, b.args...)...)
			startProc(t, nil, append([]string{"worker", "--workers", "4"}, b.args...)...)
			startProc(t, nil, append([]string{"worker", "--workers", "4"}, b.args...)...)
			c := api.client(t)
			author, f1, f2 := c.login("13800000001"), c.login("13800000002"), c.login("13800000003")
			authorID, f1ID, f2ID := c.me(author), c.me(f1), c.me(f2)
			c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f1, nil, nil)
			c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f2, nil, nil)
			posted := publishBursts(t, c, author, 200)
			slices.Sort(posted)
			for _, f := range []int64{f1ID, f2ID, authorID} {
				waitFor(t, "fan-out to Redis", func() bool { return len(b.inboxIDs(t, f)) >= 200 })
				if got := b.inboxIDs(t, f); !slices.Equal(got, posted) {
					t.Fatalf("inbox of %d holds %d ids, want exactly the 200 posted", f, len(got))
				}
			}
			all := c.scrollAll(f1, feed.MaxPageSize)
			want := feedOrder(t, all)
			times := map[string]bool{}
			for _, p := range all {
				times[p.Created] = true
			}
			t.Logf("200 posts on %d distinct milliseconds", len(times))
			if len(all) != 200 {
				t.Fatalf("feed has %d posts", len(all))
			}
			for _, tok := range []string{f1, f2} {
				for _, size := range []int{1, 7, 10, feed.MaxPageSize} {
					if got := ids(c.scrollAll(tok, size)); !slices.Equal(got, want) {
						t.Fatalf("size %d: scroll differs from feed order\n got %v\nwant %v", size, got, want)
					}
				}
			}
		})
	}
}

// TestTwoWorkersShareBigFanout: a post to 100k followers is split into batch
// jobs that two worker processes share, and every follower gets it.
func TestTwoWorkersShareBigFanout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("100k followers")
	}
	b := singleNode(t)
	b.args = append(b.args, "--pull-threshold", "0") // these test push fan-out to a big audience
	authorID, followers := seedPG(t, b.dbURL, "13800000001", 100_000)
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, b.args...)...)
	startProc(t, nil, append([]string{"worker", "--workers", "2", "--fanout-split", "2000"}, b.args...)...)
	startProc(t, nil, append([]string{"worker", "--workers", "2", "--fanout-split", "2000"}, b.args...)...)
	c := api.client(t)
	tok := c.login("13800000001")
	if c.me(tok) != authorID {
		t.Fatal("logged in as someone else")
	}
	var postID int64
	start := time.Now()
	c.must("POST", "/blog", tok, map[string]any{"title": "to everyone", "content": "hello"}, &postID)
	audience := append([]int64{authorID}, followers...)
	waitFor(t, "100k deliveries", func() bool {
		return pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job WHERE state <> 'completed'`) == 0 &&
			pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job`) > 1
	})
	t.Logf("100k fan-out done in %v", time.Since(start))
	if n := b.holders(t, postID, audience); n != len(audience) {
		t.Fatalf("%d of %d inboxes hold the post", n, len(audience))
	}
	workers := pgQueryInt(t, b.dbURL, `SELECT count(DISTINCT attempted_by[array_length(attempted_by, 1)]) FROM river_job WHERE kind = 'feed_batch'`)
	batches := pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job WHERE kind = 'feed_batch'`)
	if batches != 49 || workers != 2 { // the post job delivers the first of 50 ranges itself
		t.Fatalf("%d batch jobs worked by %d processes, want 49 by 2", batches, workers)
	}
}

// TestWorkerKilledMidFanout: the only worker is SIGKILLed half way through a
// 100k-follower fan-out; a new worker finishes it, nothing lost or doubled.
func TestWorkerKilledMidFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("100k followers")
	}
	b := singleNode(t)
	b.args = append(b.args, "--pull-threshold", "0") // these test push fan-out to a big audience
	authorID, followers := seedPG(t, b.dbURL, "13800000001", 100_000)
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, b.args...)...)
	w := startProc(t, nil, append([]string{"worker", "--workers", "1", "--fanout-split", "2000", "--fanout-batch", "100"}, b.args...)...)
	c := api.client(t)
	tok := c.login("13800000001")
	var postID int64
	c.must("POST", "/blog", tok, map[string]any{"title": "to everyone", "content": "hello"}, &postID)
	waitFor(t, "some batches done", func() bool {
		return pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job WHERE kind = 'feed_batch' AND state = 'completed'`) >= 3
	})
	w.kill()
	done := pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job WHERE kind = 'feed_batch' AND state = 'completed'`)
	audience := append([]int64{authorID}, followers...)
	atKill := b.holders(t, postID, audience)
	if atKill >= len(audience) {
		t.Fatalf("fan-out finished before the kill")
	}
	t.Logf("killed after %d of 50 batch jobs, %d of %d deliveries", done, atKill, len(audience))
	startProc(t, nil, append([]string{"worker", "--workers", "2", "--job-timeout", "2s", "--rescue-after", "2s"}, b.args...)...)
	deadline := time.Now().Add(2 * time.Minute)
	for pgQueryInt(t, b.dbURL, `SELECT count(*) FROM river_job WHERE state <> 'completed'`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("fan-out not finished 2 minutes after the restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := b.holders(t, postID, audience); n != len(audience) {
		t.Fatalf("%d of %d inboxes hold the post", n, len(audience))
	}
	// Nothing doubled: each inbox holds this one post once (a sorted set
	// cannot hold a member twice; check no stray entry was written either).
	for _, id := range followers[:1000] {
		if got := b.inboxIDs(t, id); !slices.Equal(got, []int64{postID}) {
			t.Fatalf("inbox of %d: %v", id, got)
		}
	}
}

// ownRedis is a redis-server this test starts and stops itself.
type ownRedis struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

func startOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	bin := os.Getenv("FEED_REDIS_SERVER_BIN")
	if bin == "" {
		bin, _ = exec.LookPath("redis-server")
	}
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no redis-server (FEED_REDIS_SERVER_BIN); run scripts/test.sh")
		}
		t.Skip("no redis-server; run scripts/test.sh")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &ownRedis{bin: bin, dir: t.TempDir(), port: port}
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *ownRedis) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start runs the server with an append-only file, so a restart keeps data.
func (r *ownRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", r.dir)
	r.cmd.Stdout, r.cmd.Stderr = nil, nil
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port)})
	defer c.Close()
	waitFor(t, "redis-server up", func() bool { return c.Ping(context.Background()).Err() == nil })
}

func (r *ownRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Signal(os.Interrupt)
		r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *ownRedis) client(t *testing.T) goredis.UniversalClient {
	c := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port)})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisOutage: with Redis stopped, logins, publishes and feeds keep
// working (served from PostgreSQL); when Redis is back, every delivery made
// during the outage arrives in the inboxes.
func TestRedisOutage(t *testing.T) {
	r := startOwnRedis(t)
	b := &backendArgs{rdb: r.client(t), dbURL: testenv.PostgresURL(t)}
	args := []string{"--database-url", b.dbURL, "--redis-url", r.url(), "--inbox-layout", "zset"}
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "2"}, args...)...)
	c := api.client(t)
	author, reader := c.login("13800000001"), c.login("13800000002")
	authorID, readerID := c.me(author), c.me(reader)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), reader, nil, nil)
	before := publishBursts(t, c, author, 5)
	waitFor(t, "delivery", func() bool { return len(c.scrollAll(reader, 10)) == 5 })

	r.stop()
	during := publishBursts(t, c, author, 20) // no publish fails
	fresh := c.login("13800000003")           // nor a login
	c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), fresh, nil, nil)
	all := append(slices.Clone(before), during...)
	slices.Sort(all)
	for _, tok := range []string{reader, fresh} {
		got := ids(c.scrollAll(tok, 7))
		slices.Sort(got)
		if !slices.Equal(got, all) && tok == reader {
			t.Fatalf("feed during the outage: %v, want %v", got, all)
		}
	}
	if r := c.do("GET", "/healthz", "", nil); r.Status != 200 || !r.Success {
		t.Fatalf("healthz during the outage: %s", r.Raw)
	}
	if n := value(scrape(t, "http://"+api.admin), "feedd_degraded_reads_total"); n < 2 {
		t.Fatalf("feedd_degraded_reads_total is %v after two scrolls served from PostgreSQL", n)
	}

	r.start(t)
	waitFor(t, "deliveries after Redis returns", func() bool {
		return slices.Equal(b.inboxIDs(t, readerID), all)
	})
	if got := ids(c.scrollAll(reader, 10)); len(got) != 25 {
		t.Fatalf("feed after the outage has %d posts", len(got))
	}
}

// TestRedisFlushRebuild: after a FLUSHALL every inbox is rebuilt from
// PostgreSQL on its first read, identical to what fan-out had built.
func TestRedisFlushRebuild(t *testing.T) {
	r := startOwnRedis(t)
	b := &backendArgs{rdb: r.client(t), dbURL: testenv.PostgresURL(t)}
	args := []string{"--database-url", b.dbURL, "--redis-url", r.url(), "--inbox-layout", "zset"}
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "2"}, args...)...)
	c := api.client(t)
	a1, a2, reader := c.login("13800000001"), c.login("13800000002"), c.login("13800000003")
	readerID := c.me(reader)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", c.me(a1)), reader, nil, nil)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", c.me(a2)), reader, nil, nil)
	posted := append(publishBursts(t, c, a1, 30), publishBursts(t, c, a2, 30)...)
	slices.Sort(posted)
	waitFor(t, "fan-out", func() bool { return len(b.inboxIDs(t, readerID)) == 60 })
	ctx := context.Background()
	key := redis.InboxKey("", readerID)
	built, err := b.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	feedBefore := ids(c.scrollAll(reader, 10))

	if err := b.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	feedAfter := ids(c.scrollAll(reader, 10)) // the session comes back from PostgreSQL too
	if !slices.Equal(feedAfter, feedBefore) {
		t.Fatalf("feed after the flush differs:\n got %v\nwant %v", feedAfter, feedBefore)
	}
	rebuilt, err := b.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(zs []goredis.Z) string {
		zs = slices.DeleteFunc(slices.Clone(zs), func(z goredis.Z) bool { return z.Member == "-" }) // the rebuilt-inbox sentinel
		j, _ := json.Marshal(zs)
		return string(j)
	}
	if enc(rebuilt) != enc(built) {
		t.Fatalf("rebuilt inbox differs from the one fan-out built:\n got %s\nwant %s", enc(rebuilt), enc(built))
	}
}
