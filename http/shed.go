package http

import (
	"net/http"
	"strconv"
	"strings"
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
}

// ErrShed is the refusal of a request shed under load (code EBUSY:
// 503 in both APIs).
var ErrShed = feed.Errorf(feed.EBUSY, "server busy: retry after a moment")

// gate is a counting semaphore whose waits are bounded.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64
}

func newGate(n int) *gate {
	g := &gate{}
	if n > 0 {
		g.slots = make(chan struct{}, n)
	}
	return g
}

// enter takes a slot, waiting at most wait (and not at all when as many
// requests as there are slots already wait); it reports whether it got one.
func (g *gate) enter(r *http.Request, wait time.Duration) bool {
	if g.slots == nil {
		return true
	}
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 || g.waiting.Add(1) > int64(cap(g.slots)) {
		if wait > 0 {
			g.waiting.Add(-1)
		}
		return false
	}
	defer g.waiting.Add(-1)
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

func (g *gate) leave() {
	if g.slots != nil {
		<-g.slots
	}
}

// shedding returns next behind sh's admission control (next itself when sh
// is nil).
func (s *Server) shedding(next http.Handler) http.Handler {
	sh := s.Shed
	if sh == nil {
		return next
	}
	reads, writes := newGate(sh.Reads), newGate(sh.Writes)
	retry := strconv.Itoa(max(int((sh.RetryAfter+time.Second-1)/time.Second), 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Probes and the document are never shed; a live stream holds no
		// slot (it has limits of its own, Streams).
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/v1/openapi.json" || r.URL.Path == "/v1/timeline/stream" {
			next.ServeHTTP(w, r)
			return
		}
		g, wait := writes, sh.WriteWait
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			g, wait = reads, sh.ReadWait
		}
		if !g.enter(r, wait) {
			if sh.OnShed != nil {
				sh.OnShed(r)
			}
			w.Header().Set("Retry-After", retry)
			if strings.HasPrefix(r.URL.Path, "/v1/") {
				s.v1Fail(w, r, ErrShed)
			} else {
				s.fail(w, r, ErrShed)
			}
			return
		}
		defer g.leave()
		next.ServeHTTP(w, r)
	})
}
