package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/internal/testenv"
)

// sseEvent is one event of a stream as a client parses it.
type sseEvent struct {
	Kind, ID, Data string
	At             time.Time // when the client read it
}

// sseStream is an open GET /v1/timeline/stream.
type sseStream struct {
	beats  atomic.Int64 // comment lines but the first (": open")
	events chan sseEvent
	notes  chan sseEvent // the notification events, apart from the timeline's
	resp   *http.Response
	cancel context.CancelFunc
}

// openStream opens token's stream on c's server from the loopback address
// local (127.0.0.x, a client of its own), with Last-Event-ID last when not
// empty. The response is checked against the OpenAPI document.
func (c *v1Client) openStream(token, last, local string) *sseStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", c.s.base+"/v1/timeline/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("open stream: %v", err)
	}
	if err := c.api.checkResponse("GET", "/v1/timeline/stream", resp.StatusCode, resp.Header, nil); err != nil || resp.StatusCode != 200 {
		cancel()
		resp.Body.Close()
		c.t.Fatalf("open stream: %d %v", resp.StatusCode, err)
	}
	s := &sseStream{events: make(chan sseEvent, 1000), notes: make(chan sseEvent, 1000), resp: resp, cancel: cancel}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Kind == "notification" {
					s.notes <- ev
				} else if ev.Kind != "" {
					ev.At = time.Now()
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				if line != ": open" {
					s.beats.Add(1)
				}
			case strings.HasPrefix(line, "event: "):
				ev.Kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	c.t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() { s.cancel() }

// next returns the stream's next event; it fails the test after 30 s.
func (s *sseStream) next(t testing.TB) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no stream event within 30s")
	}
	return sseEvent{}
}

// quiet checks that no event arrives for a while (no duplicate follows).
func (s *sseStream) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Errorf("unexpected event %s %s %.100s", ev.Kind, ev.ID, ev.Data)
		}
	case <-time.After(d):
	}
}

// post decodes a post event; its data must be the post as /v1/timeline
// returns it and its id the entry's cursor.
func (ev sseEvent) post(t testing.TB, c *v1Client, token string) apiPost {
	t.Helper()
	if ev.Kind != "post" || ev.ID == "" {
		t.Fatalf("event %q id %q, want a post event with an id", ev.Kind, ev.ID)
	}
	var p apiPost
	if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
		t.Fatalf("post event data %q: %v", ev.Data, err)
	}
	if err := c.api.validate(map[string]any{"$ref": "#/components/schemas/Post"}, mustJSON(t, ev.Data), "event"); err != nil {
		t.Fatalf("post event data: %v", err)
	}
	return p
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// publishV1 publishes a post of token and returns its id and when the
// request returned.
func (c *v1Client) publishV1(token, title string) (int64, time.Time) {
	c.t.Helper()
	var p apiPost
	c.want(201, "POST", "/v1/posts", token, map[string]string{"title": title, "content": "live " + title}, &p)
	return p.ID, time.Now()
}

// testStream is the stream's contract on the server behind c: a follower
// and the author each get every one of 10 posts once and in order (one
// worker delivers them in publish order), then, after a disconnect, 5
// missed posts are replayed exactly through Last-Event-ID, oldest first,
// and the stream goes on live with no duplicate. It returns the latencies
// from each publish returning to the follower reading its event.
func testStream(t *testing.T, c *v1Client) []time.Duration {
	author := c.login("13900000001")
	reader := c.login("13900000002")
	authorID := c.me(author).ID
	c.want(204, "PUT", "/v1/following/{id}", reader, nil, nil, authorID)

	rs := c.openStream(reader, "", "127.0.0.2")
	as := c.openStream(author, "", "127.0.0.3")
	var ids []int64
	var published []time.Time
	for i := range 10 {
		id, at := c.publishV1(author, fmt.Sprintf("post %d", i))
		ids = append(ids, id)
		published = append(published, at)
	}
	var lat []time.Duration
	var last string
	for i, id := range ids {
		ev := rs.next(t)
		if p := ev.post(t, c, reader); p.ID != id || p.Author.ID != authorID {
			t.Fatalf("follower's event %d is post %d, want %d", i, p.ID, id)
		}
		lat = append(lat, ev.At.Sub(published[i]))
		last = ev.ID
		if p := as.next(t).post(t, c, author); p.ID != id {
			t.Fatalf("author's event %d is post %d, want %d", i, p.ID, id)
		}
	}
	// The id is the entry's native cursor: the timeline after it is the
	// posts before the newest.
	var page apiPage[apiPost]
	c.want(200, "GET", "/v1/timeline?cursor="+last, reader, nil, &page)
	if len(page.Data) == 0 || page.Data[0].ID != ids[8] {
		t.Fatalf("timeline after the last event id starts with %v, want post %d", page.Data, ids[8])
	}
	rs.quiet(t, 300*time.Millisecond)

	// Disconnect; 5 posts land meanwhile; reconnect with Last-Event-ID.
	rs.close()
	var missed []int64
	for i := range 5 {
		id, _ := c.publishV1(author, fmt.Sprintf("missed %d", i))
		missed = append(missed, id)
	}
	waitFor(t, "the missed posts in the follower's timeline", func() bool {
		var page apiPage[apiPost]
		c.want(200, "GET", "/v1/timeline?limit=5", reader, nil, &page)
		return len(page.Data) == 5 && page.Data[0].ID == missed[4] && page.Data[4].ID == missed[0]
	})
	rs = c.openStream(reader, last, "127.0.0.2")
	for i, id := range missed {
		if p := rs.next(t).post(t, c, reader); p.ID != id {
			t.Fatalf("replayed event %d is post %d, want %d", i, p.ID, id)
		}
	}
	id, _ := c.publishV1(author, "live again")
	if p := rs.next(t).post(t, c, reader); p.ID != id {
		t.Fatalf("live event after the replay is post %d, want %d", p.ID, id)
	}
	// A delete reaches the follower's stream.
	c.want(204, "DELETE", "/v1/posts/{id}", author, nil, nil, id)
	if ev := rs.next(t); ev.Kind != "delete" || ev.Data != fmt.Sprintf(`{"id":%d}`, id) {
		t.Fatalf("after a delete: event %q %q", ev.Kind, ev.Data)
	}
	rs.quiet(t, 300*time.Millisecond)
	return lat
}

// logLatency reports the median and worst of the stream latencies (the
// figures of BENCHMARKS.md come from feedd bench; this is a smoke view).
func logLatency(t *testing.T, lat []time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	t.Logf("event latency after publish returned: p50 %v, max %v (n=%d)", s[len(s)/2], s[len(s)-1], len(s))
}

// TestStreamEmbedded: the stream's contract on the embedded default.
func TestStreamEmbedded(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--workers", "1")
	logLatency(t, testStream(t, newV1Client(t, s)))
}

// TestStreamProduction: the stream's contract with the API process apart
// from the worker process, on PostgreSQL with Redis or a Redis Cluster
// (events over Redis Pub/Sub) and on PostgreSQL alone (events over
// LISTEN/NOTIFY).
func TestStreamProduction(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"redis", "cluster", "postgres"} {
		t.Run(mode, func(t *testing.T) {
			var args []string
			switch mode {
			case "redis":
				args = singleNode(t).args
			case "cluster":
				args = cluster(t).args
			default:
				args = []string{"--database-url", testenv.PostgresURL(t)}
			}
			api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, args...)...)
			w := startProc(t, nil, append([]string{"worker", "--workers", "1"}, args...)...)
			t.Cleanup(func() { api.logs.dumpIfFailed(t); w.logs.dumpIfFailed(t) })
			logLatency(t, testStream(t, newV1Client(t, api.client(t))))
		})
	}
}

// v1StreamRefusals exercises the stream's documented refusals for
// TestV1API: no token, a Last-Event-ID that is no event id, and a sixth
// stream of one user (the default limit is 5).
func v1StreamRefusals(t *testing.T, c *v1Client, token string) {
	c.refused(401, "unauthorized", "GET", "/v1/timeline/stream", "", nil)
	c.refused(400, "invalid", "GET", "/v1/timeline/stream?last_event_id=nope", token, nil)
	var open []*sseStream
	for range 5 {
		open = append(open, c.openStream(token, "", "127.0.0.4"))
	}
	c.refused(429, "rate_limited", "GET", "/v1/timeline/stream", token, nil)
	for _, s := range open {
		s.close()
	}
}

// TestStreamHeartbeatAndShutdown: an idle stream gets heartbeats, and a
// graceful shutdown ends it (so its client reconnects elsewhere) without
// waiting for it.
func TestStreamHeartbeatAndShutdown(t *testing.T) {
	streamHeartbeat = 100 * time.Millisecond
	t.Cleanup(func() { streamHeartbeat = feedhttp.DefaultHeartbeat })
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	st := c.openStream(c.login("13900000003"), "", "127.0.0.2")
	waitFor(t, "three heartbeats", func() bool { return st.beats.Load() >= 3 })
	stopped := time.Now()
	s.stop()
	select {
	case _, ok := <-st.events:
		if ok {
			t.Fatal("an event instead of the end of the stream")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end with the server")
	}
	t.Logf("stream ended %v after the shutdown began", time.Since(stopped))
}

// TestStreamReplayProperty: whatever event id a client reconnects with, the
// replay is exactly the timeline's entries newer than it, oldest first, each
// once, also inside groups of posts that share a millisecond (the cursor
// is a keyset on score and post id). Random cursors over a timeline of
// tie groups of random sizes.
func TestStreamReplayProperty(t *testing.T) {
	clk := useClock(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	author := c.login("13900000004")
	reader := c.login("13900000005")
	c.want(204, "PUT", "/v1/following/{id}", reader, nil, nil, c.me(author).ID)
	ms := time.Now().UnixMilli()
	const n = 24
	for made := 0; made < n; {
		ms++
		clk.frozen.Store(ms)
		for k := 1 + rng.IntN(4); k > 0 && made < n; k-- {
			c.publishV1(author, fmt.Sprintf("tie %d", made))
			made++
		}
	}
	clk.frozen.Store(0)
	var tl []apiPost
	waitFor(t, "the timeline to hold every post", func() bool { tl = c.timeline(reader, 100); return len(tl) == n })
	for range 6 {
		k := rng.IntN(n)
		cursor := feed.EncodeCursor(feed.Entry{PostID: tl[k].ID, Score: tl[k].score()})
		st := c.openStream(reader, cursor, "127.0.0.2")
		for i := k - 1; i >= 0; i-- {
			if p := st.next(t).post(t, c, reader); p.ID != tl[i].ID {
				t.Fatalf("replay after entry %d (of %d): got post %d, want %d", k, n, p.ID, tl[i].ID)
			}
		}
		st.quiet(t, 200*time.Millisecond)
		st.close()
	}
}

// TestBenchStream is a smoke run of feedd bench stream: a few idle streams
// held in this process, a few publishes. Not parallel: its heap and
// goroutines per stream are differences of this process's, which the
// parallel tests' servers would move.
func TestBenchStream(t *testing.T) {
	out := runBenchJSON(t, "stream", "--streams", "30", "--publishes", "3", "--interval", "1ms", "--clients-apart=false")
	for _, f := range []string{"p50_ms", "loaded_p50_ms", "rss_mb", "heap_per_stream_kb", "goroutines_per_stream"} {
		if v, ok := out[f].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", f, out[f])
		}
	}
	if out["streams"] != float64(30) || out["clients_apart"] != false {
		t.Errorf("bench stream said %v", out)
	}
}
