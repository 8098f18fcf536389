package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// Defaults of Streams.
const (
	DefaultStreamsPerUser = 5
	DefaultStreams        = 20000
	DefaultHeartbeat      = 15 * time.Second
	// DefaultReplay bounds the entries a reconnect replays after
	// Last-Event-ID: two full pages of /v1/timeline. A client that missed
	// more reads the timeline again.
	DefaultReplay = 2 * feed.MaxTimelineLimit
	// streamWriteTimeout bounds one write of a stream: a client that does
	// not read for this long is dropped (the server's WriteTimeout, which
	// would end every stream after a fixed time, is pushed back instead).
	streamWriteTimeout = 30 * time.Second
	// streamSeen is how many recently sent post ids a stream remembers to
	// send each post once: the replay's, and the live ones (a retried
	// fan-out job publishes its entries again).
	streamSeen = 2048
	// streamBatch is the most queued events hydrated in one store call.
	streamBatch = 100
)

// Streams serves GET /v1/timeline/stream, the caller's timeline as
// Server-Sent Events, and bounds how many streams are open. The zero value
// is not usable: Events is required.
type Streams struct {
	Events feed.EventService
	// PerUser bounds the open streams of one user in this process
	// (DefaultStreamsPerUser if zero); Max bounds all of them
	// (DefaultStreams if zero). Over either, a stream is refused with 429.
	PerUser, Max int
	// Heartbeat is the period of the comment line that keeps idle streams
	// (and the proxies between) alive (DefaultHeartbeat if zero).
	Heartbeat time.Duration
	// Replay bounds the entries replayed after Last-Event-ID
	// (DefaultReplay if zero).
	Replay int
	// Trace logs each post event's arrival, hydration and write
	// (--trace-posts); nil: nothing.
	Trace *feed.Tracer
	// SessionCheck is how often a stream checks that its session is still
	// live (feed.SessionTTL if zero: a session unused for that long has
	// expired). Logouts, and the user's own block changes, end streams at
	// once (EventRevoke).
	SessionCheck time.Duration

	mu       sync.Mutex
	perUser  map[int64]int
	open     atomic.Int64
	done     chan struct{}
	doneOnce sync.Once
}

// Connected is the number of open streams: the gauge of connected clients.
func (st *Streams) Connected() int64 { return st.open.Load() }

// Shutdown ends every open stream and refuses new ones, so that clients
// reconnect to another process. Register it with http.Server's
// RegisterOnShutdown: Shutdown waits for handlers, and streams never end
// by themselves.
func (st *Streams) Shutdown() { st.doneOnce.Do(func() { close(st.closed()) }) }

func (st *Streams) closed() chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done == nil {
		st.done = make(chan struct{})
	}
	return st.done
}

// acquire takes a stream slot of userID; false when over a limit.
func (st *Streams) acquire(userID int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.perUser == nil {
		st.perUser = map[int64]int{}
	}
	if st.perUser[userID] >= cmp.Or(st.PerUser, DefaultStreamsPerUser) || st.open.Load() >= int64(cmp.Or(st.Max, DefaultStreams)) {
		return false
	}
	st.perUser[userID]++
	st.open.Add(1)
	return true
}

func (st *Streams) release(userID int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.perUser[userID]--; st.perUser[userID] <= 0 {
		delete(st.perUser, userID)
	}
	st.open.Add(-1)
}

// v1TimelineStream streams the caller's timeline: every entry that lands
// in it as `event: post` with the entry's cursor as id, deletes as
// `event: delete`, a comment as heartbeat. With Last-Event-ID (or the
// last_event_id query parameter, for a first connection that follows a
// timeline read), it first replays the entries after that cursor, oldest
// first, then goes live: it subscribes before it reads, and sends each post
// once, so nothing is lost or repeated in between.
func (s *Server) v1TimelineStream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.Streams
		if st == nil {
			s.v1Fail(w, r, feed.Errorf(feed.ENOTFOUND, "live streams are not enabled"))
			return
		}
		var from *feed.Cursor
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			v, _, err := queryOne(r, "last_event_id")
			if err != nil {
				s.v1Fail(w, r, err)
				return
			}
			last = v
		}
		if last != "" {
			c, err := feed.DecodeCursor(last)
			if err != nil {
				s.v1Fail(w, r, feed.Errorf(feed.EINVALID, "Last-Event-ID is not an event id of this stream"))
				return
			}
			from = &c
		}
		uid := userID(r)
		// Opening a stream (a reconnect too) is counted per user, and it
		// holds its request's concurrency slot until it is live.
		if err := s.Service.CountWrite(r.Context(), uid, feed.WriteStream); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		live := keepAdmission(r)
		tok, _ := bearer(r)
		if !st.acquire(uid) {
			live()
			s.v1Fail(w, r, feed.TooMany(5*time.Second, fmt.Sprintf("open streams (at most %d per user)", cmp.Or(st.PerUser, DefaultStreamsPerUser))))
			return
		}
		// The stream outlives the handler when the connection is hijacked:
		// its context is its own, ended by the client closing or by the end
		// of the stream.
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		cleanup := func(sub feed.Subscription) {
			live()
			if sub != nil {
				sub.Close()
			}
			cancel()
			st.release(uid)
		}
		// Until the stream is open, the request's context applies, and a
		// broker that cannot be reached is given 10 s.
		octx, ocancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer ocancel()
		authors, err := s.Service.StreamAuthors(octx, uid)
		if err != nil {
			cleanup(nil)
			s.v1Fail(w, r, err)
			return
		}
		sub, err := st.Events.Subscribe(octx, uid, authors)
		if err != nil {
			cleanup(nil)
			s.v1Fail(w, r, err)
			return
		}
		out := &sse{seen: map[int64]bool{}}
		if conn := hijack(w); conn != nil {
			// An HTTP/1.1 connection of its own: the handler returns, and
			// with it the server's goroutines and buffers of the request;
			// the stream keeps a goroutine that writes and one that notices
			// the client leaving (a read that fails).
			out.conn = conn
			go func() {
				var b [64]byte
				for {
					if _, err := conn.Read(b[:]); err != nil {
						cancel()
						return
					}
				}
			}()
			go func() {
				defer cleanup(sub)
				defer conn.Close()
				if out.header() == nil {
					s.streamLoop(ctx, streamOf{uid, tok, from, live}, sub, out)
				}
			}()
			return
		}
		defer cleanup(sub)
		stop := context.AfterFunc(r.Context(), cancel)
		defer stop()
		out.w, out.rc = w, http.NewResponseController(w)
		// The server's deadlines are for requests, not for streams.
		_ = out.rc.SetReadDeadline(time.Time{})
		h := w.Header()
		for k, v := range streamHeader {
			h.Set(k, v)
		}
		w.WriteHeader(http.StatusOK)
		s.streamLoop(ctx, streamOf{uid, tok, from, live}, sub, out)
	})
}

// streamHeader is the header of every stream response.
var streamHeader = map[string]string{
	"Content-Type":      "text/event-stream",
	"Cache-Control":     "no-store",
	"X-Accel-Buffering": "no",
}

// hijack takes over w's HTTP/1.x connection, with no deadline left on it;
// nil when it cannot (HTTP/2, a wrapper without Unwrap).
func hijack(w http.ResponseWriter) net.Conn {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil
	}
	return conn
}

// streamOf is what a stream's loop knows of its request.
type streamOf struct {
	uid   int64
	token string       // its session's token, checked every SessionCheck
	from  *feed.Cursor // replay the entries after it (nil: none)
	live  func()       // releases the request's concurrency slot
}

// errRevoked ends a stream that must reconnect (feed.EventRevoke).
var errRevoked = errors.New("session ended or blocks changed")

// streamLoop sends the stream until ctx ends, the server shuts down, the
// subscription ends, the session ends or a write fails: first ": open",
// then the replay after from (if any), then live events, with heartbeats.
func (s *Server) streamLoop(ctx context.Context, o streamOf, sub feed.Subscription, out *sse) {
	st := s.Streams
	uid, from := o.uid, o.from
	done := st.closed() // closed on shutdown: a stream opened then ends at once
	// A comment first, so the client knows the stream is open.
	if out.comment("open") != nil {
		return
	}
	if from != nil {
		views, err := s.Service.StreamCatchUp(ctx, uid, *from, cmp.Or(st.Replay, DefaultReplay))
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Warn("stream replay", "user_id", uid, "error", err)
			}
			return
		}
		if out.posts(views) != nil {
			return
		}
	}
	o.live()
	beat := time.NewTicker(cmp.Or(st.Heartbeat, DefaultHeartbeat))
	defer beat.Stop()
	check := time.NewTicker(cmp.Or(st.SessionCheck, feed.SessionTTL))
	defer check.Stop()
	events := sub.Events()
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			// A stream is the use of its session, as a request is: the
			// check extends it; an expired or ended one ends the stream.
			if _, err := s.Service.Authenticate(ctx, o.token); err != nil {
				s.Log.Info("stream ended", "user_id", uid, "reason", "session: "+feed.ErrorMessage(err))
				return
			}
		case <-done:
			return // shutting down: the client reconnects elsewhere
		case <-beat.C:
			if out.comment("") != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				if err := sub.Err(); err != nil {
					s.Log.Info("stream ended", "user_id", uid, "reason", err)
				}
				return
			}
			batch := []feed.Event{ev}
			for len(batch) < streamBatch && len(events) > 0 {
				if ev, ok := <-events; ok {
					batch = append(batch, ev)
				}
			}
			if err := s.streamEvents(ctx, uid, out, batch); err != nil {
				if errors.Is(err, errRevoked) {
					s.Log.Info("stream ended", "user_id", uid, "reason", err.Error())
				} else if ctx.Err() == nil {
					s.Log.Warn("stream events", "user_id", uid, "error", err)
				}
				return
			}
		}
	}
}

// streamEvents sends a batch of events in order, the posts hydrated in one
// store call per run of posts.
func (s *Server) streamEvents(ctx context.Context, uid int64, out *sse, batch []feed.Event) error {
	var run []feed.Entry
	tr := s.Streams.Trace
	flushRun := func() error {
		if len(run) == 0 {
			return nil
		}
		views, err := s.Service.StreamViews(ctx, uid, run)
		if tr.Enabled() {
			for _, e := range run {
				tr.Stage(e.PostID, "stream hydrated", "user_id", uid, "error", err)
			}
		}
		run = run[:0]
		if err != nil {
			return err
		}
		err = out.posts(views)
		if tr.Enabled() {
			for _, v := range views {
				tr.Stage(v.ID, "stream sent", "user_id", uid, "error", err)
			}
		}
		return err
	}
	latest := latestNotifications(batch)
	lastMarker := -1 // the batch's last marker event sends the markers once
	for i, ev := range batch {
		if ev.Kind == feed.EventMarker {
			lastMarker = i
		}
	}
	for i, ev := range batch {
		if tr.Enabled() && (ev.Kind == feed.EventPost || ev.Kind == feed.EventDelete) {
			tr.Stage(ev.Entry.PostID, "stream received", "user_id", uid, "kind", ev.Kind)
		}
		switch ev.Kind {
		case feed.EventPost:
			if !out.seen[ev.Entry.PostID] {
				run = append(run, ev.Entry)
			}
		case feed.EventRevoke:
			return errRevoked // what comes after it is not for this stream
		case feed.EventDelete:
			if err := flushRun(); err != nil {
				return err
			}
			if err := out.event("delete", "", V1Deleted{ID: ev.Entry.PostID}); err != nil {
				return err
			}
		case feed.EventMarker:
			if i != lastMarker {
				continue
			}
			if err := flushRun(); err != nil {
				return err
			}
			if err := s.streamMarkers(ctx, uid, out); err != nil {
				return err
			}
		case feed.EventNotification:
			if !latest[i] {
				continue // the group's later event in this batch sends it
			}
			if err := flushRun(); err != nil {
				return err
			}
			if err := s.streamNotification(ctx, uid, out, ev.Entry.PostID); err != nil {
				return err
			}
		}
	}
	return flushRun()
}

// V1Deleted is the data of a stream's delete event.
type V1Deleted struct {
	ID int64 `json:"id"`
}

// sse writes one stream's events: to a hijacked connection (conn), or
// through the server (w, rc).
type sse struct {
	conn  net.Conn
	w     http.ResponseWriter
	rc    *http.ResponseController
	buf   bytes.Buffer
	seen  map[int64]bool
	order []int64 // seen's keys, oldest first
}

// posts sends views as post events, each post once.
func (o *sse) posts(views []feed.PostView) error {
	for _, v := range views {
		if o.seen[v.ID] {
			continue
		}
		o.seen[v.ID] = true
		o.order = append(o.order, v.ID)
		if len(o.order) > streamSeen {
			delete(o.seen, o.order[0])
			o.order = o.order[1:]
		}
		if err := o.write(func(b *bytes.Buffer) error {
			return frame(b, "post", feed.EncodeCursor(v.FeedEntry), NewV1Post(v))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (o *sse) event(kind, id string, data any) error {
	return o.write(func(b *bytes.Buffer) error { return frame(b, kind, id, data) })
}

// comment sends a comment line (a heartbeat when text is empty).
func (o *sse) comment(text string) error {
	return o.write(func(b *bytes.Buffer) error {
		_, err := fmt.Fprintf(b, ": %s\n\n", text)
		return err
	})
}

// write sends one frame and flushes it, with a write deadline of its own.
func (o *sse) write(fill func(*bytes.Buffer) error) error {
	o.buf.Reset()
	if err := fill(&o.buf); err != nil {
		return err
	}
	if o.conn != nil {
		o.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := o.conn.Write(o.buf.Bytes())
		return err
	}
	_ = o.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := o.w.Write(o.buf.Bytes()); err != nil {
		return err
	}
	return o.rc.Flush()
}

// header writes the response's status line and header on a hijacked
// connection; the body is delimited by the connection's end.
func (o *sse) header() error {
	return o.write(func(b *bytes.Buffer) error {
		b.WriteString("HTTP/1.1 200 OK\r\n")
		for k, v := range streamHeader {
			fmt.Fprintf(b, "%s: %s\r\n", k, v)
		}
		b.WriteString("Connection: close\r\n\r\n")
		return nil
	})
}

// frame renders one event: its JSON data is a single line (the encoder
// escapes line breaks in strings).
func frame(b *bytes.Buffer, kind, id string, data any) error {
	fmt.Fprintf(b, "event: %s\n", kind)
	if id != "" {
		fmt.Fprintf(b, "id: %s\n", id)
	}
	b.WriteString("data: ")
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false) // as /v1/timeline sends it
	if err := enc.Encode(data); err != nil {
		return err
	}
	b.WriteString("\n") // Encode ended the data line; this ends the event
	return nil
}
