package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	feed "github.com/feedd/feedd"
)

// StreamOptions sets up feedd bench stream.
type StreamOptions struct {
	// Streams is how many idle streams are held open at once.
	Streams int
	// PerUser is the server's --stream-limit-user: the idle streams are
	// spread over Streams/PerUser users.
	PerUser int
	// Publishes is how many posts each latency phase publishes, one every
	// Interval whether or not the previous one has reached the stream yet
	// (open loop: 20 ms is 50 posts/s).
	Publishes int
	Interval  time.Duration
	// WorkersApart records that the jobs are worked by another River client
	// than the one that inserts them, as 'feedd serve --workers 0' plus
	// 'feedd worker' (the caller wires Env so).
	WorkersApart bool
	// Hold opens the idle streams: one per token, against the server at
	// addr (host:port), until release is called. Nil holds them in this
	// process (HoldStreams), whose memory then counts the clients too.
	Hold func(ctx context.Context, addr string, tokens []string) (release func(), err error)
}

// StreamResult is what feedd bench stream measured.
type StreamResult struct {
	Backend      string  `json:"backend"`
	Publishes    int     `json:"publishes"`
	IntervalMs   float64 `json:"interval_ms"`   // between two publishes
	WorkersApart bool    `json:"workers_apart"` // API and workers on separate River clients
	// Latency from Service.Publish returning to a follower's stream client
	// reading the post's event, with no other stream open and with the
	// idle streams open; OutOfOrder counts the events read after an event
	// of a later post.
	P50ms               float64 `json:"p50_ms"`
	P90ms               float64 `json:"p90_ms"`
	P99ms               float64 `json:"p99_ms"`
	MaxMs               float64 `json:"max_ms"`
	OutOfOrder          int     `json:"out_of_order"`
	LoadedP50ms         float64 `json:"loaded_p50_ms"`
	LoadedP90ms         float64 `json:"loaded_p90_ms"`
	LoadedP99ms         float64 `json:"loaded_p99_ms"`
	LoadedMaxMs         float64 `json:"loaded_max_ms"`
	LoadedOutOfOrder    int     `json:"loaded_out_of_order"`
	Streams             int     `json:"streams"`
	ClientsApart        bool    `json:"clients_apart"` // the idle clients ran in another process
	BaseRSSMB           float64 `json:"base_rss_mb"`
	RSSMB               float64 `json:"rss_mb"` // with the idle streams open
	RSSPerStreamKB      float64 `json:"rss_per_stream_kb"`
	HeapPerStreamKB     float64 `json:"heap_per_stream_kb"` // heap and goroutine stacks in use
	GoroutinesPerStream float64 `json:"goroutines_per_stream"`
}

// Text is the result for people.
func (r *StreamResult) Text() string {
	where := "in this process (their memory counted too)"
	if r.ClientsApart {
		where = "in another process"
	}
	workers := "workers in the API's River client"
	if r.WorkersApart {
		workers = "workers apart (another River client)"
	}
	return fmt.Sprintf("live timeline stream, %s, %s\n"+
		"  event latency after publish, %d posts %.0f ms apart: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, %d out of order (one stream open)\n"+
		"      p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, %d out of order (%d idle streams open)\n"+
		"  %d idle streams (clients %s): RSS %.0f MB -> %.0f MB, %.1f KB each (heap+stacks %.1f KB, %.1f goroutines)\n",
		r.Backend, workers, r.Publishes, r.IntervalMs, r.P50ms, r.P90ms, r.P99ms, r.MaxMs, r.OutOfOrder,
		r.LoadedP50ms, r.LoadedP90ms, r.LoadedP99ms, r.LoadedMaxMs, r.LoadedOutOfOrder, r.Streams,
		r.Streams, where, r.BaseRSSMB, r.RSSMB, r.RSSPerStreamKB, r.HeapPerStreamKB, r.GoroutinesPerStream)
}

// Stream measures GET /v1/timeline/stream on the wired process: event
// latency after publish, then how much memory idle streams cost, then the
// latency again with them open.
func Stream(ctx context.Context, env *Env, opt StreamOptions) (*StreamResult, error) {
	if opt.Streams < 1 || opt.Publishes < 1 || opt.PerUser < 1 {
		return nil, fmt.Errorf("bench: --streams, --publishes and --stream-limit-user must be at least 1")
	}
	if env.Connected == nil {
		return nil, fmt.Errorf("bench: the handler has no streams")
	}
	RaiseFileLimit()
	idleUsers := (opt.Streams + opt.PerUser - 1) / opt.PerUser
	bar := newProgress(env.Progress, "load users", idleUsers+2)
	first, err := env.Store.CreateUsers(ctx, "stream-", idleUsers+2, bar.set)
	bar.finish()
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	author, reader := first, first+1
	if err := env.Store.FollowRange(ctx, author, reader, 1, func(int) {}); err != nil {
		return nil, err
	}
	session := func(uid int64) (string, error) {
		raw := make([]byte, 24)
		rand.Read(raw)
		token := base64.RawURLEncoding.EncodeToString(raw)
		now := time.Now()
		return token, env.Service.Auth.CreateSession(ctx, feed.HashSecret(token), uid, now, now.Add(feed.SessionTTL))
	}
	readerToken, err := session(reader)
	if err != nil {
		return nil, err
	}
	tokens := make([]string, opt.Streams)
	bar = newProgress(env.Progress, "sessions", idleUsers)
	for u := range idleUsers {
		t, err := session(first + 2 + int64(u))
		if err != nil {
			return nil, err
		}
		for k := u * opt.PerUser; k < min((u+1)*opt.PerUser, opt.Streams); k++ {
			tokens[k] = t
		}
		bar.set(u + 1)
	}
	bar.finish()
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: env.Handler(nil), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()

	live, err := openLiveStream(ctx, addr, readerToken)
	if err != nil {
		return nil, err
	}
	defer live.close()
	// measure publishes n posts, one every opt.Interval (open loop), then
	// waits for each one's event: the latencies, and how many events came
	// after an event of a later post.
	measure := func(label string, n, base int) (Latencies, int, error) {
		bar := newProgress(env.Progress, label, n)
		defer bar.finish()
		ids := make([]int64, 0, n)
		returned := make([]time.Time, 0, n)
		seq0 := live.seq()
		tick := time.NewTicker(opt.Interval)
		defer tick.Stop()
		for i := range n {
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-tick.C:
			}
			p, err := env.Service.Publish(ctx, author, benchPost(base+i))
			if err != nil {
				return nil, 0, err
			}
			ids = append(ids, p.ID)
			returned = append(returned, time.Now())
			bar.set(i + 1)
		}
		lat := make(Latencies, 0, n)
		for i, id := range ids {
			at, err := live.wait(ctx, id, 30*time.Second)
			if err != nil {
				return nil, 0, err
			}
			lat = append(lat, max(at.Sub(returned[i]), 0))
		}
		return lat, live.outOfOrder(seq0), nil
	}
	// Untimed publishes at the same rate first, so that River's queue and
	// every pool (the API's and the workers' connections, each opened at
	// its first use) are warm when the timed ones start.
	if _, _, err := measure("warm up", min(opt.Publishes, 20), 0); err != nil {
		return nil, err
	}
	quiet, quietOOO, err := measure("latency: one stream", opt.Publishes, 1000)
	if err != nil {
		return nil, err
	}

	baseRSS, baseHeap, baseG := memoryNow()
	hold := opt.Hold
	if hold == nil {
		hold = HoldStreams
	}
	env.logf("opening %d idle streams", opt.Streams)
	release, err := hold(ctx, addr, tokens)
	if err != nil {
		return nil, fmt.Errorf("open idle streams: %w", err)
	}
	defer release()
	if err := poll(ctx, 50*time.Millisecond, 5*time.Minute, func() (bool, error) {
		return env.Connected() >= int64(opt.Streams)+1, nil
	}); err != nil {
		return nil, fmt.Errorf("idle streams: %d of %d connected: %w", env.Connected()-1, opt.Streams, err)
	}
	rss, heap, g := memoryNow()
	loaded, loadedOOO, err := measure("latency: idle streams open", opt.Publishes, 2000)
	if err != nil {
		return nil, err
	}
	n := float64(opt.Streams)
	return &StreamResult{
		Backend: env.Backend(), Publishes: opt.Publishes,
		IntervalMs: ms(opt.Interval), WorkersApart: opt.WorkersApart,
		P50ms: round(ms(quiet.Quantile(0.5)), 2), P90ms: round(ms(quiet.Quantile(0.9)), 2),
		P99ms: round(ms(quiet.Quantile(0.99)), 2), MaxMs: round(ms(quiet.Quantile(1)), 2), OutOfOrder: quietOOO,
		LoadedP50ms: round(ms(loaded.Quantile(0.5)), 2), LoadedP90ms: round(ms(loaded.Quantile(0.9)), 2),
		LoadedP99ms: round(ms(loaded.Quantile(0.99)), 2), LoadedMaxMs: round(ms(loaded.Quantile(1)), 2), LoadedOutOfOrder: loadedOOO,
		Streams: opt.Streams, ClientsApart: opt.Hold != nil,
		BaseRSSMB: round(float64(baseRSS)/(1<<20), 1), RSSMB: round(float64(rss)/(1<<20), 1),
		RSSPerStreamKB:      round(float64(rss-baseRSS)/n/1024, 1),
		HeapPerStreamKB:     round(float64(heap-baseHeap)/n/1024, 1),
		GoroutinesPerStream: round(float64(g-baseG)/n, 2),
	}, nil
}

// memoryNow returns, after a full collection, the process's resident set,
// its heap and stacks in use, and its goroutines.
func memoryNow() (rss, heap int64, goroutines int) {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return residentBytes(), int64(m.HeapInuse + m.StackInuse), runtime.NumGoroutine()
}

// residentBytes is VmRSS of /proc/self/status (0 where there is none).
func residentBytes() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// RaiseFileLimit raises this process's open-file limit to its hard limit:
// every stream is a descriptor (two when the clients are in-process).
func RaiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// HoldStreams opens one idle stream per token against addr, each from a
// loopback source address of 127.0.0.2 .. 127.0.0.201 in turn (one address
// alone would run out of ephemeral ports), waits until each is open, and
// holds them without reading (the kernel buffers the heartbeats) until
// release.
func HoldStreams(ctx context.Context, addr string, tokens []string) (func(), error) {
	conns := make([]net.Conn, len(tokens))
	release := func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	err := parallel(ctx, 32, len(tokens), func(ctx context.Context, i int) error {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%200))}, Timeout: 10 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		conns[i] = c
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /v1/timeline/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", addr, tokens[i]); err != nil {
			return err
		}
		// Read until the stream's first comment: the status line, the
		// headers and ": open" fit a small buffer.
		var buf [1024]byte
		n := 0
		for !bytes.Contains(buf[:n], []byte(": open")) {
			if n == len(buf) {
				return fmt.Errorf("stream %d: no ': open' in %q", i, buf[:n])
			}
			k, err := c.Read(buf[n:])
			if err != nil {
				return fmt.Errorf("stream %d: %w (read %q)", i, err, buf[:n])
			}
			n += k
		}
		if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200")) {
			return fmt.Errorf("stream %d: %q", i, buf[:n])
		}
		c.SetDeadline(time.Time{})
		return nil
	})
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// liveStream is a stream whose post events are timed as they are read.
type liveStream struct {
	resp *http.Response
	mu   sync.Mutex
	at   map[int64]time.Time
	ids  []int64       // post ids in the order their events were read
	cond chan struct{} // closed and replaced at each event
	err  error
}

func openLiveStream(ctx context.Context, addr, token string) (*liveStream, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/timeline/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("stream: %d %s", resp.StatusCode, b)
	}
	s := &liveStream{resp: resp, at: map[int64]time.Time{}, cond: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		post := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: post":
				post = true
			case post && strings.HasPrefix(line, "data: "):
				now := time.Now()
				var p struct{ ID int64 }
				json.Unmarshal([]byte(line[len("data: "):]), &p)
				s.mu.Lock()
				s.at[p.ID] = now
				s.ids = append(s.ids, p.ID)
				close(s.cond)
				s.cond = make(chan struct{})
				s.mu.Unlock()
			case line == "":
				post = false
			}
		}
		s.mu.Lock()
		s.err = fmt.Errorf("stream ended: %v", sc.Err())
		close(s.cond)
		s.cond = make(chan struct{})
		s.mu.Unlock()
	}()
	return s, nil
}

// wait returns when the event of post id was read.
func (s *liveStream) wait(ctx context.Context, id int64, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		at, ok := s.at[id]
		err, cond := s.err, s.cond
		s.mu.Unlock()
		if ok {
			return at, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		select {
		case <-cond:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline:
			return time.Time{}, fmt.Errorf("no event of post %d within %v", id, timeout)
		}
	}
}

// seq is how many post events were read so far.
func (s *liveStream) seq() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// outOfOrder counts the events read since the from'th that came after an
// event of a later post (ids grow with publish order).
func (s *liveStream) outOfOrder(from int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	var high int64
	for _, id := range s.ids[from:] {
		if id < high {
			n++
		}
		high = max(high, id)
	}
	return n
}

func (s *liveStream) close() { s.resp.Body.Close() }
