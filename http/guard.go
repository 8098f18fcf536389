package http

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
)

// Guards of both APIs against other sites and slow or greedy clients
// (docs/API.md, "Hardening (both APIs)" and "Limits"): the standard
// library's cross-origin protection, the media type of /v1 bodies, the
// per-user write limits, the end of a user's live streams when their
// session ends or their blocks change, and the concurrency slot a request
// holds (the body's rules are body.go's).

// NewCrossOrigin returns the standard library's cross-origin protection
// trusting origins (each scheme://host[:port], such as the origin of a page
// served by a reverse proxy that hands feedd another Host). Unsafe requests
// (not GET, HEAD or OPTIONS) that a browser marks as cross-site
// (Sec-Fetch-Site), or whose Origin is not their Host, are refused unless
// their Origin is trusted; requests without either header (curl, servers)
// pass.
func NewCrossOrigin(origins []string) (*http.CrossOriginProtection, error) {
	p := http.NewCrossOriginProtection()
	for _, o := range origins {
		if err := p.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// errCrossOrigin is the refusal of a cross-origin request.
const errCrossOrigin = "cross-origin request refused: the page's origin is not trusted by this server"

// crossOrigin serves next behind the cross-origin protection trusting
// s.AllowedOrigins, the refusal a 403 in the API's own format.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	p, err := NewCrossOrigin(s.AllowedOrigins)
	if err != nil {
		// The command checks the origins before it starts a server.
		s.Log.Error("allowed origins ignored", "error", err)
		p = http.NewCrossOriginProtection()
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteCode(r, feed.EFORBIDDEN)
		if isV1(r) {
			var body v1Error
			body.Error.Code, body.Error.Message = feed.EFORBIDDEN, errCrossOrigin
			s.v1JSON(w, http.StatusForbidden, body)
			return
		}
		s.encode(w, http.StatusForbidden, envelope{ErrorMsg: errCrossOrigin})
	}))
	return p.Handler(next)
}

func isV1(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }

// hasBody reports whether r carries a body (declared or chunked).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// v1JSONBody refuses a /v1 request that carries a body in another media
// type than application/json with 415: a form or text/plain body is what
// a cross-site page can send without asking the browser first. An upload
// (POST /v1/media) is a form or an image; it is a write crossOrigin
// guards, and it needs a bearer token no other page has.
func (s *Server) v1JSONBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isV1(r) && hasBody(r) && !isUpload(r) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				noteCode(r, "unsupported_media_type")
				var body v1Error
				body.Error.Code = "unsupported_media_type"
				body.Error.Message = "a request body must be JSON sent with Content-Type: application/json"
				w.Header().Set("Accept-Post", "application/json")
				s.v1JSON(w, http.StatusUnsupportedMediaType, body)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// perUser counts the caller's write of kind against the per-user limits
// (feed.Service.CountWrite) before next serves it; over the limit, the
// refusal is a 429 with Retry-After on /v1, the compatible refusal
// (success:false, a sentence that says how long to wait) otherwise.
// It goes inside the authentication.
func (s *Server) perUser(kind feed.WriteKind, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Service.CountWrite(r.Context(), userID(r), kind); err != nil {
			if d := feed.RetryAfter(err); d > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
			}
			if isV1(r) {
				s.v1Fail(w, r, err)
			} else {
				s.fail(w, r, err)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// endStreams ends, once next has succeeded (a 2xx), the caller's live
// streams (endStreamsOf): a logout ends the session they were opened with.
func (s *Server) endStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status >= 200 && sw.status <= 299 {
			s.endStreamsOf(r.Context(), userID(r))
		}
	})
}

// endStreamsOf ends the live streams of userID, and only theirs, in every
// API process; their clients reconnect, authenticated and filtered anew.
// Only the user's own acts end them (a logout, a block or unblock that
// changed something): what others do reaches a stream as events, each
// filtered as it is sent (Service.StreamViews), so that nobody else can
// end a user's stream, nor spend the stream opens its reconnects count
// against (docs/API.md, "Hardening (both APIs)").
func (s *Server) endStreamsOf(ctx context.Context, userID int64) {
	if s.Streams == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Streams.Events.Publish(ctx, feed.Event{Kind: feed.EventRevoke, Users: []int64{userID}}); err != nil {
		s.Log.Warn("end live streams", "user_id", userID, "error", err)
	}
}

// admission is the concurrency slot a request holds (shed.go). A request
// lends it back while its body arrives (pause, resume: body.go). A live
// stream keeps it past its handler's return while it opens (subscription,
// replay) and gives it back when it goes live. The methods of a nil
// admission (a request no gate admitted) do nothing.
type admission struct {
	g     *gate
	wait  time.Duration // the longest a resume waits for the slot
	retry time.Duration // the Retry-After of a refusal

	mu   sync.Mutex
	held bool
	kept atomic.Bool
}

// release gives the slot back, if held; idempotent.
func (a *admission) release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held {
		a.held = false
		a.g.leave()
	}
}

// pause lends the slot back until resume.
func (a *admission) pause() { a.release() }

// resume takes the slot again, waiting at most the admission's wait, and
// reports whether it did.
func (a *admission) resume(r *http.Request) bool {
	if a == nil {
		return true
	}
	if !a.g.enter(r, a.wait) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = true
	return true
}

// retryAfter is the Retry-After of a refusal of the request.
func (a *admission) retryAfter() time.Duration {
	if a == nil {
		return time.Second
	}
	return a.retry
}

type admissionKey struct{}

// keepAdmission takes over the release of r's slot, if it holds one: the
// caller must call the returned function (idempotent) once it no longer
// needs it.
func keepAdmission(r *http.Request) func() {
	a, _ := r.Context().Value(admissionKey{}).(*admission)
	if a == nil {
		return func() {}
	}
	a.kept.Store(true)
	return a.release
}
