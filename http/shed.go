package http

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// Shed is admission control: it bounds how many requests feedd serves at
// once and how long a request may wait for its turn, and refuses the rest
// at once with 503 and Retry-After, so that overload costs a fast refusal
// instead of a queue without bound in which every request, and the fan-out
// sharing the machine with them, grows late.
//
// Reads (GET, HEAD) and writes have separate limits, and a read gives up
// waiting much sooner than a write: under overload reads are shed first. A
// refused read costs the client a retry of something idempotent; a write
// (above all a publish, whose post must then be fanned out) is worth the
// longer wait. /healthz and the OpenAPI document are never shed.
//
// The zero Shed admits everything.
type Shed struct {
	// Reads and Writes are the most requests of each kind served at once;
	// 0 leaves that kind unlimited.
	Reads, Writes int
	// ReadWait and WriteWait are the longest a request waits for a free
	// slot before it is refused.
	ReadWait, WriteWait time.Duration
	// RetryAfter is the Retry-After of a refusal (1 s if zero; whole seconds).
	RetryAfter time.Duration
	// OnShed, when set, is called for each refused request (the metrics'
	// feedd_refusals_total{reason="shed"}).
	OnShed func(r *http.Request)

	// Lag, when set, is how far fan-out is behind: the age of the oldest
	// new post whose delivery has not started. While it is above MaxLag
	// the limits tighten (by a quarter every tick, down to one request of
	// each kind), and they loosen again (by a sixteenth of the limits a
	// tick) once it is below half of MaxLag: an accepted publish must reach its followers,
	// so the API gives way to fan-out rather than let feeds go stale while
	// it still says yes. Lag must be cheap: it is read at most once a tick
	// (LagTick, default 100 ms) by a request.
	Lag     func() time.Duration
	MaxLag  time.Duration
	LagTick time.Duration
}

// ErrShed is the refusal of a request shed under load (code EBUSY:
// 503 in both APIs).
var ErrShed = feed.Errorf(feed.EBUSY, "server busy: retry after a moment")

// gate is a counting semaphore whose waits are bounded. Slots taken by
// reserve count as busy, which lowers the limit without a second counter.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64

	mu       sync.Mutex
	reserved int            // slots held by reserve
	waitBy   map[string]int // requests waiting, by client (feed.Client)
}

// reserve adjusts the slots held back from requests toward n (at most all
// but one), without waiting: a slot in use is taken when it is free again,
// at a later call.
func (g *gate) reserve(n int) {
	if g.slots == nil {
		return
	}
	n = min(max(n, 0), cap(g.slots)-1)
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.reserved > n {
		<-g.slots // the channel holds at least the reserved slots
		g.reserved--
	}
	for g.reserved < n {
		select {
		case g.slots <- struct{}{}:
			g.reserved++
		default:
			return
		}
	}
}

func newGate(n int) *gate {
	g := &gate{}
	if n > 0 {
		g.slots = make(chan struct{}, n)
	}
	return g
}

// enter takes a slot, waiting at most wait (and not at all when as many
// requests as there are slots already wait, or when half as many of its
// client's do: one client that opens many connections fills at most half
// of the queue, and another's request still finds a place in it); it
// reports whether it got one.
func (g *gate) enter(r *http.Request, wait time.Duration) bool {
	if g.slots == nil {
		return true
	}
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	client := feed.Client(r.Context())
	if wait <= 0 || !g.queue(client) {
		return false
	}
	defer g.unqueue(client)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return false
}

// queue counts a waiter of client, unless the queue or client's part of
// it is full.
func (g *gate) queue(client string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting.Load() >= int64(cap(g.slots)) || g.waitBy[client] >= max(cap(g.slots)/2, 1) {
		return false
	}
	if g.waitBy == nil {
		g.waitBy = map[string]int{}
	}
	g.waiting.Add(1)
	g.waitBy[client]++
	return true
}

func (g *gate) unqueue(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting.Add(-1)
	if g.waitBy[client]--; g.waitBy[client] <= 0 {
		delete(g.waitBy, client)
	}
}

func (g *gate) leave() {
	if g.slots != nil {
		<-g.slots
	}
}

// shedding returns next behind sh's admission control (none when sh is
// nil). A request takes its slot on arrival, once its header is here; one
// with a body lends it back while the body arrives (body.go).
func (s *Server) shedding(next http.Handler) http.Handler {
	sh := s.Shed
	if sh == nil {
		return next
	}
	reads, writes := newGate(sh.Reads), newGate(sh.Writes)
	retry := time.Duration(max(int((sh.RetryAfter+time.Second-1)/time.Second), 1)) * time.Second
	p := &pressure{sh: sh, gates: []*gate{reads, writes}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.tick()
		// Probes and the document are never shed.
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/v1/openapi.json" {
			next.ServeHTTP(w, r)
			return
		}
		a := &admission{g: writes, wait: sh.WriteWait, retry: retry}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			a.g, a.wait = reads, sh.ReadWait
		}
		if !a.resume(r) {
			s.refuseBusy(w, r, ErrShed, retry)
			return
		}
		// A live stream opening holds its slot until it is live
		// (keepAdmission), then holds none: it has limits of its own
		// (Streams).
		defer func() {
			if !a.kept.Load() {
				a.release()
			}
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), admissionKey{}, a)))
	})
}

// refuseBusy answers err (an EBUSY: shed, or no memory for the body) with
// 503 and Retry-After in r's API, and tells Shed.OnShed.
func (s *Server) refuseBusy(w http.ResponseWriter, r *http.Request, err error, retry time.Duration) {
	if s.Shed != nil && s.Shed.OnShed != nil {
		s.Shed.OnShed(r)
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(int((retry+time.Second-1)/time.Second), 1)))
	s.failEither(w, r, err)
}

// failEither answers err in the format of r's API.
func (s *Server) failEither(w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		s.v1Fail(w, r, err)
	} else {
		s.fail(w, r, err)
	}
}

// pressure tightens and loosens the gates' limits by the fan-out lag
// (Shed.Lag), additive increase and multiplicative decrease as in TCP's
// congestion control: quick to give fan-out room, slower to take it back
// (from one request to the full limits in 16 ticks).
type pressure struct {
	sh    *Shed
	gates []*gate
	next  atomic.Int64 // UnixNano of the next tick
	scale atomic.Int64 // the share of each limit admitted, in 1/fullScale
}

const fullScale = 1024

// tick adjusts the limits at most once per Shed.LagTick.
func (p *pressure) tick() {
	if p.sh.Lag == nil || p.sh.MaxLag <= 0 {
		return
	}
	now := time.Now().UnixNano()
	next := p.next.Load()
	if now < next || !p.next.CompareAndSwap(next, now+int64(cmp.Or(p.sh.LagTick, 100*time.Millisecond))) {
		return
	}
	// Only the request that won the CAS is here until the next tick.
	scale := p.scale.Load()
	if next == 0 {
		scale = fullScale
	}
	switch lag := p.sh.Lag(); {
	case lag > p.sh.MaxLag:
		scale = max(scale*3/4, 1)
	case lag < p.sh.MaxLag/2:
		scale = min(scale+fullScale/16, fullScale)
	}
	p.scale.Store(scale)
	for _, g := range p.gates {
		if g.slots != nil {
			n := cap(g.slots)
			g.reserve(n - max(int(int64(n)*scale/fullScale), 1))
		}
	}
}
