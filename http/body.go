package http

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
)

// Request bodies (docs/API.md, "Hardening (both APIs)"): a body is read
// into memory only once its request is admitted (it holds a concurrency
// slot, shed.go) and authenticated where its route needs a login, by the
// body step that routes.go puts after the authentication (Server.body).
// While the body arrives the request lends its slot back, so a client
// trickling a body holds a connection, not a slot other users' requests
// need; it takes its turn again once the body is here. Every body being
// read or held is counted against one budget of memory
// (Server.BodyMemory), counting the buffers as they grow with what has
// arrived, not the length a client declares: past it, a request is
// refused with 503 and Retry-After. One client (feed.Client: an address,
// or an IPv6 /64) holds at most its share of the budget (clientShare), so
// a client that opens many connections and stalls their bodies refuses
// only its own requests. A route without a login reads at most
// MaxAnonymousBody (the login's few dozen bytes), and a body that does not
// arrive within Server.BodyTimeout is answered 408 and given back.

// DefaultBodyTimeout is how long a request body may take to arrive
// (Server.BodyTimeout).
const DefaultBodyTimeout = 5 * time.Second

// DefaultBodyMemory bounds the memory of the request bodies a server
// holds at once (Server.BodyMemory): 64 full-size bodies, tens of
// thousands of ordinary ones (a post is at most a few KiB).
const DefaultBodyMemory = 64 << 20

// MinBodyMemory is the least Server.BodyMemory: one body of MaxBody fits.
const MinBodyMemory = MaxBody

// MaxAnonymousBody is the largest body a route without a login reads: a
// login or a code request is a few dozen bytes of JSON.
const MaxAnonymousBody = 4 << 10

// clientShare is one client's share of a body budget of limit bytes: a
// sixteenth (4 MiB of the default), and at least one body of MaxBody.
func clientShare(limit int64) int64 { return min(limit, max(limit/16, MaxBody)) }

// errBodyMemory is the refusal of a body that does not fit in the budget.
var errBodyMemory = feed.Errorf(feed.EBUSY, "server busy: too many request bodies arriving; retry after a moment")

// errBodyUnadmitted is what a handler reads from a body that no body step
// read first: a route that takes a body without Server.body, a bug the
// tests find (it answers 500).
var errBodyUnadmitted = errors.New("request body read before its request was admitted (route without the body step)")

// budget counts bytes of memory against a limit, and each client's
// against its share (clientShare); a nil or zero budget has no limit.
type budget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	by    map[string]int64 // what each client holds, while it holds any
}

func newBudget(limit int64) *budget { return &budget{limit: limit, by: map[string]int64{}} }

// take counts n more bytes of client; false, counting nothing, when they
// do not fit in the budget or in the client's share of it.
func (b *budget) take(client string, n int64) bool {
	return b.takeShare(client, n, 0)
}

// takeShare is take with the client's share at least share: a body step
// whose bodies are larger than a share (the server API's, behind its key)
// lets its client hold one.
func (b *budget) takeShare(client string, n, share int64) bool {
	if b == nil || b.limit <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit || b.by[client]+n > max(clientShare(b.limit), share) {
		return false
	}
	b.used += n
	b.by[client] += n
	return true
}

// give gives back n bytes that client took.
func (b *budget) give(client string, n int64) {
	if b == nil || b.limit <= 0 || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.by[client] -= n; b.by[client] <= 0 {
		delete(b.by, client)
	}
}

// firstBuffer is the size of a body's first buffer when its length is
// unknown or larger; it doubles as the body arrives.
const firstBuffer = 4 << 10

// read reads src, client's body, into a buffer counted against b as it
// grows: at most declared bytes when declared > 0 (the server stops a body
// at its Content-Length; the caller refused one declared over most), else
// at most most bytes, failing with http.MaxBytesError past them. It
// returns what it read, the bytes it counted (the caller gives them back
// when done with the buffer) and the read's error; errBodyMemory when the
// buffer could not grow.
func (b *budget) read(client string, src io.Reader, declared, most int64) (buf []byte, counted int64, err error) {
	limit := most
	if declared > 0 {
		limit = min(declared, limit)
	}
	for {
		if int64(len(buf)) == limit {
			if declared > 0 {
				return buf, counted, nil
			}
			// A body of unknown length that filled most: it ends here, or
			// it is too large.
			var one [1]byte
			n, err := src.Read(one[:])
			switch {
			case n > 0:
				return buf, counted, &http.MaxBytesError{Limit: most}
			case err == io.EOF:
				return buf, counted, nil
			}
			return buf, counted, err
		}
		if len(buf) == cap(buf) {
			// The buffer doubles; what is counted is the live buffer (the
			// old one is garbage once copied).
			size := min(max(2*int64(cap(buf)), firstBuffer), limit)
			if !b.takeShare(client, size-counted, most) {
				return buf, counted, errBodyMemory
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf, counted = grown, size
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, counted, nil
		} else if err != nil {
			return buf, counted, err
		}
	}
}

// heldBody stands for a request's body until a body step reads it: read
// directly, it fails (errBodyUnadmitted).
type heldBody struct{ rc io.ReadCloser }

func (h *heldBody) Read([]byte) (int, error) { return 0, errBodyUnadmitted }
func (h *heldBody) Close() error             { return h.rc.Close() }

// holdBody holds the body of every request routed by mux until a body
// step reads it (Server.body).
func holdBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasBody(r) {
			r.Body = &heldBody{rc: r.Body}
		}
		next.ServeHTTP(w, r)
	})
}

// body is the body step of routes that need a login: next runs once r's
// body, if any, has arrived and is in memory (readBody), at most MaxBody
// bytes, the memory counted until next returns. It goes after the
// authentication.
func (s *Server) body(next http.Handler) http.Handler { return s.bodyStep(MaxBody, next) }

// anonymousBody is the body step of the routes without a login: bodies
// of at most MaxAnonymousBody bytes.
func (s *Server) anonymousBody(next http.Handler) http.Handler {
	return s.bodyStep(MaxAnonymousBody, next)
}

// serverBody is the body step of the server API, after its key is
// checked: bodies of at most ServerMaxBody bytes.
func (s *Server) serverBody(next http.Handler) http.Handler {
	return s.bodyStep(ServerMaxBody, next)
}

func (s *Server) bodyStep(most int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := r.Body.(*heldBody)
		if !ok {
			next.ServeHTTP(w, r) // no body, or read already
			return
		}
		client := feed.Client(r.Context())
		counted, ok := s.readBody(w, r, h.rc, client, most)
		defer s.bodies.give(client, counted)
		if ok {
			next.ServeHTTP(w, r)
		}
	})
}

// readBody reads src, r's body of at most most bytes, into r.Body within
// s.BodyTimeout, its slot lent back meanwhile, and counted against
// s.bodies as client's. It answers the refusal and returns false when the
// body is declared larger (413, unread), did not arrive in time (408), did
// not fit in the budget or the client's share, or the slot could not be
// taken again (503 and Retry-After); counted is the memory to give back
// either way.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, src io.Reader, client string, most int64) (counted int64, ok bool) {
	if r.ContentLength > most {
		w.Header().Set("Connection", "close") // the body is not read
		s.failEither(w, r, feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", most))
		return 0, false
	}
	a, _ := r.Context().Value(admissionKey{}).(*admission)
	a.pause()
	rc := http.NewResponseController(w)
	timeout := cmp.Or(s.BodyTimeout, DefaultBodyTimeout)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	buf, counted, err := s.bodies.read(client, src, r.ContentLength, most)
	// The request's own deadline no longer matters once its body is read;
	// left in place, it would cancel the request's context when it passes.
	_ = rc.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case errors.Is(err, errBodyMemory):
		w.Header().Set("Connection", "close") // the rest of the body is not read
		s.refuseBusy(w, r, errBodyMemory, a.retryAfter())
		return counted, false
	case errors.As(err, &ne) && ne.Timeout():
		s.refuseSlowBody(w, r, timeout)
		return counted, false
	case err != nil:
		// The client went away, sent a malformed chunk or too much
		// (limitBody): the handler's read sees the same error.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), errReader{err}))
	default:
		r.Body = io.NopCloser(bytes.NewReader(buf))
	}
	if !a.resume(r) {
		s.refuseBusy(w, r, ErrShed, a.retryAfter())
		return counted, false
	}
	return counted, true
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (s *Server) refuseSlowBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	msg := "the request body did not arrive within " + timeout.String()
	w.Header().Set("Connection", "close")
	noteCode(r, "request_timeout")
	if isV1(r) {
		var body v1Error
		body.Error.Code, body.Error.Message = "request_timeout", msg
		s.v1JSON(w, http.StatusRequestTimeout, body)
		return
	}
	s.encode(w, http.StatusRequestTimeout, envelope{ErrorMsg: msg})
}
