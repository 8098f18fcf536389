package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
)

// outcome of one request of TestPostgresRestart's load.
type restartReply struct {
	api      string // "compat" or "v1"
	op       string // "publish" or "read"
	began    time.Time
	took     time.Duration
	status   int
	body     string
	retry    string // Retry-After
	postID   int64  // an acknowledged publish's post
	transErr error  // no answer at all
}

// TestPostgresRestart stops the database of an API process and a worker
// process (serve --workers 0 plus worker, with Redis) while publishers and
// readers of both APIs run, holds it down, and starts it again, on a
// PostgreSQL of the test's own. While it is away every request is answered
// at once with 503 unavailable (Retry-After) or succeeds, never 500 and
// never a hang; within 5 s of its return every request succeeds again with
// no restart of feedd; every acknowledged post reaches its followers'
// feeds, once, and every job is completed (docs/operations.md, "When
// PostgreSQL restarts").
func TestPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL and two feedd processes")
	}
	pg := testenv.StartPostgres(t)
	redisURL, prefix := testenv.RedisURL(t)
	common := []string{"--database-url", pg.URL, "--redis-url", redisURL, "--redis-prefix", prefix}
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, common...)...)
	// Small inbox writes: the big author's post below keeps a job running
	// while PostgreSQL stops.
	worker := startProc(t, nil, append([]string{"worker", "--workers", "4", "--fanout-batch", "20"}, common...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("API process:")
			api.logs.dumpIfFailed(t)
			t.Log("worker process:")
			worker.logs.dumpIfFailed(t)
			t.Logf("PostgreSQL log:\n%s", pg.Log())
		}
	})
	c := api.client(t)
	authors := []string{c.login("13900000001"), c.login("13900000002")}
	fans := []string{c.login("13900000011"), c.login("13900000012")}
	for _, a := range authors {
		id := c.me(a)
		for _, f := range fans {
			c.must("PUT", fmt.Sprintf("/follow/%d/true", id), f, nil, nil)
		}
	}
	conn, err := pgx.Connect(context.Background(), pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	big := c.login("13900000003")
	bigFans := seedFans(t, conn, c.me(big), 3000)

	hc := &http.Client{Timeout: 15 * time.Second}
	send := func(api, op, method, path, token string, body any) restartReply {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, c.base+path, rd)
		if api == "v1" {
			req.Header.Set("Authorization", "Bearer "+token)
		} else {
			req.Header.Set("authorization", token)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		r := restartReply{api: api, op: op, began: time.Now()}
		resp, err := hc.Do(req)
		r.took = time.Since(r.began)
		if err != nil {
			r.transErr = err
			return r
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.status, r.body, r.retry = resp.StatusCode, string(b), resp.Header.Get("Retry-After")
		switch {
		case op == "publish" && api == "compat" && r.status == 200:
			var env struct {
				Success bool
				Data    int64
			}
			if json.Unmarshal(b, &env) == nil && env.Success {
				r.postID = env.Data
			}
		case op == "publish" && api == "v1" && r.status == 201:
			var p struct{ ID int64 }
			if json.Unmarshal(b, &p) == nil {
				r.postID = p.ID
			}
		}
		return r
	}

	var (
		mu      sync.Mutex
		replies []restartReply
		wg      sync.WaitGroup
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	loop := func(pause time.Duration, next func(i int) restartReply) {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := next(i)
			mu.Lock()
			replies = append(replies, r)
			mu.Unlock()
			time.Sleep(pause)
		}
	}
	for k, a := range authors {
		wg.Add(1)
		go loop(50*time.Millisecond, func(i int) restartReply {
			if (i+k)%2 == 0 {
				return send("compat", "publish", "POST", "/blog", a, map[string]string{"title": "t", "content": fmt.Sprintf("compat %d", i)})
			}
			return send("v1", "publish", "POST", "/v1/posts", a, map[string]string{"title": "t", "content": fmt.Sprintf("v1 %d", i)})
		})
	}
	for k, f := range fans {
		wg.Add(1)
		go loop(20*time.Millisecond, func(i int) restartReply {
			if (i+k)%2 == 0 {
				return send("compat", "read", "GET", fmt.Sprintf("/blog/of/follow?lastId=%d", time.Now().UnixMilli()+1), f, nil)
			}
			return send("v1", "read", "GET", "/v1/timeline", f, nil)
		})
	}

	// answered reports whether, of the requests begun since, the last n of
	// each API's publishes and of its reads are all ones that ok accepts.
	answered := func(since time.Time, n int, ok func(restartReply) bool) bool {
		mu.Lock()
		defer mu.Unlock()
		run := map[string]int{} // per kind: ok answers in a row, newest first; -1 once one is not
		for i := len(replies) - 1; i >= 0; i-- {
			r := replies[i]
			switch k := r.api + " " + r.op; {
			case !r.began.After(since) || run[k] < 0 || run[k] >= n:
			case ok(r):
				run[k]++
			default:
				run[k] = -1
			}
		}
		full := 0
		for _, v := range run {
			if v >= n {
				full++
			}
		}
		return full == 4
	}
	succeeded := func(r restartReply) bool { return r.transErr == nil && (r.status == 200 || r.status == 201) }
	refused := func(r restartReply) bool { return r.transErr == nil && r.status == 503 }

	waitFor(t, "the load answered, every API's publishes and reads", func() bool { return answered(time.Time{}, 3, succeeded) })
	var bigPost int64
	c.must("POST", "/blog", big, map[string]string{"title": "big", "content": "to 3000"}, &bigPost)
	waitFor(t, "the big post's job running", func() bool {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE state = 'running' AND args->>'post_id' = $1`, fmt.Sprint(bigPost)).Scan(&n)
		return err == nil && n == 1
	})
	down := time.Now()
	pg.Stop(t) // pg_ctl stop -m fast: sessions ended, transactions rolled back
	// Away until every API's publishes and reads have been refused.
	waitFor(t, "every API's publishes and reads refused while PostgreSQL is away", func() bool { return answered(down, 2, refused) })
	pg.Start(t)
	up := time.Now()
	t.Logf("PostgreSQL away for %v", up.Sub(down).Round(time.Millisecond))
	// The load goes on until every API's publishes and reads succeed again,
	// ten in a row (a failure later than 5 s after the return fails below).
	waitFor(t, "every API's publishes and reads succeeding again", func() bool { return answered(up, 10, succeeded) })
	stop()
	wg.Wait()

	var acked []int64
	unavailable := map[string]int{}
	var backAt time.Time // the end of the last failure
	for _, r := range replies {
		ok := r.transErr == nil && (r.status == 200 || r.status == 201)
		switch {
		case r.transErr != nil:
			t.Errorf("%s %s at %v: no answer: %v", r.api, r.op, r.began.Sub(down), r.transErr)
		case r.took > 5*time.Second:
			t.Errorf("%s %s at %v took %v: a hang, not a fast failure", r.api, r.op, r.began.Sub(down), r.took)
		case ok:
		case r.status == 503 && r.retry != "" && refusedUnavailable(r):
			unavailable[r.api]++
		default:
			t.Errorf("%s %s at %v: status %d %s (Retry-After %q); want success or 503 unavailable", r.api, r.op, r.began.Sub(down), r.status, r.body, r.retry)
		}
		if !ok && r.began.Add(r.took).After(backAt) {
			backAt = r.began.Add(r.took)
		}
		if r.postID != 0 {
			acked = append(acked, r.postID)
		}
	}
	t.Logf("%d requests: %d acknowledged posts; refused 503 unavailable: %v; last failure %v after PostgreSQL's return",
		len(replies), len(acked), unavailable, backAt.Sub(up).Round(time.Millisecond))
	if unavailable["compat"] == 0 || unavailable["v1"] == 0 {
		t.Errorf("no request of each API was refused while PostgreSQL was away (%v): the outage was not observed", unavailable)
	}
	if d := backAt.Sub(up); d > 5*time.Second {
		t.Errorf("requests still failed %v after PostgreSQL was back; want within 5s", d)
	}

	// Every acknowledged post reaches both fans, once; every job completes.
	sort.Slice(acked, func(i, j int) bool { return acked[i] < acked[j] })
	for _, f := range fans {
		waitFor(t, "every acknowledged post in a fan's feed", func() bool {
			seen := map[int64]int{}
			for _, b := range c.scrollAll(f, 50) {
				seen[b.ID]++
			}
			for _, id := range acked {
				if seen[id] != 1 {
					return false
				}
			}
			return true
		})
	}
	// The big post, running when PostgreSQL stopped, reaches a sample of
	// its audience (the first, the last and every 100th), once each.
	for i := 0; i < len(bigFans); i += max(1, len(bigFans)/30) {
		for _, k := range []int{i, len(bigFans) - 1} {
			waitFor(t, "the big post in a follower's feed", func() bool {
				n := 0
				for _, b := range c.scrollAll(bigFans[k], 50) {
					if b.ID == bigPost {
						n++
					}
				}
				if n > 1 {
					t.Fatalf("follower %d holds the big post %d times", k, n)
				}
				return n == 1
			})
		}
	}
	conn.Close(context.Background()) // cut by the restart
	if conn, err = pgx.Connect(context.Background(), pg.URL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every job completed", func() bool {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&n)
		return err == nil && n == 0
	})
	// The jobs inserted before PostgreSQL's return, those running or
	// waiting while it was away among them: when the last small one was
	// completed (the big one takes its own time to deliver), and the most
	// attempts any took.
	var last, bigDone time.Time
	var attempts int
	if err := conn.QueryRow(context.Background(), `SELECT max(finalized_at) FILTER (WHERE args->>'post_id' <> $2), max(finalized_at) FILTER (WHERE args->>'post_id' = $2), max(attempt)
		FROM river_job WHERE created_at < $1`, up, fmt.Sprint(bigPost)).Scan(&last, &bigDone, &attempts); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged posts in both fans' feeds, once each; the jobs inserted before PostgreSQL's return completed %v after it (the big fan-out %v), with at most %d attempts",
		len(acked), last.Sub(up).Round(time.Millisecond), bigDone.Sub(up).Round(time.Millisecond), attempts)
	if d := last.Sub(up); d > 5*time.Second {
		t.Errorf("the jobs of before the outage completed %v after PostgreSQL's return; want within 5s", d)
	}
}

// seedFans creates n users following author directly in the database, with
// a session each, and returns their tokens.
func seedFans(t *testing.T, conn *pgx.Conn, author int64, n int) []string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	rows, err := conn.Query(ctx, `INSERT INTO users (phone, nick_name, created_at, active_at)
		SELECT '1770' || lpad(g::text, 7, '0'), 'fan' || g, $1, $1 FROM generate_series(1, $2) g RETURNING id`, now, n)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO follows (follower_id, followee_id, created_at) SELECT unnest($1::bigint[]), $2, $3`, ids, author, now); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE users SET fans = $1 WHERE id = $2`, n, author); err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, len(ids))
	hashes := make([]string, len(ids))
	for i := range ids {
		tokens[i] = fmt.Sprintf("seeded-fan-token-%d-%s", i, testenv.Unique())
		hashes[i] = feed.HashSecret(tokens[i])
	}
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, expires_at) SELECT unnest($1::text[]), unnest($2::bigint[]), $3`,
		hashes, ids, time.Now().Add(feed.SessionTTL).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// refusedUnavailable reports whether r is the refusal of a dependency out
// of reach in its API's format.
func refusedUnavailable(r restartReply) bool {
	if r.api == "v1" {
		var e struct {
			Error struct{ Code string }
		}
		return json.Unmarshal([]byte(r.body), &e) == nil && e.Error.Code == "unavailable"
	}
	var env struct {
		Success  bool
		ErrorMsg string
	}
	return json.Unmarshal([]byte(r.body), &env) == nil && !env.Success && strings.Contains(env.ErrorMsg, "unavailable")
}
