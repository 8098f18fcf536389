package http

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Observer is told of every answered request (feedd's metrics). Its
// methods must be cheap and safe for concurrent use.
type Observer interface {
	// Request: a request to route (the mux pattern that matched, e.g.
	// "GET /blog/of/follow", or UnmatchedRoute) was answered with status
	// after elapsed.
	Request(route string, status int, elapsed time.Duration)
	// Refused: a request was refused to protect the service (answered 429
	// or 503); reason is the error code of the refusal, or "http_429" /
	// "http_503" when no error code was given.
	Refused(reason string)
}

// UnmatchedRoute is the route of a request that no pattern matched: one
// answered before routing (an oversized body) or a 405. Unknown paths match
// the catch-all patterns "/" and "/v1/", so a raw path is never a route.
const UnmatchedRoute = "unmatched"

// reqInfo is what the handlers of a request tell observe: the caller and
// the error code of a refusal.
type reqInfo struct {
	userID int64
	code   string
	route  string // the mux pattern (recordRoute)
}

const infoKey ctxKey = 1

// withUser returns r with the caller's id in its context, and tells
// observe who the caller is.
func withUser(r *http.Request, id int64) *http.Request {
	if info, ok := r.Context().Value(infoKey).(*reqInfo); ok {
		info.userID = id
	}
	return r.WithContext(context.WithValue(r.Context(), userKey, id))
}

// noteCode tells observe the error code a request was answered with.
func noteCode(r *http.Request, code string) {
	if info, ok := r.Context().Value(infoKey).(*reqInfo); ok {
		info.code = code
	}
}

// recordRoute notes the pattern the mux routed a request by in its reqInfo
// (observe reads it there: the wrappers between observe and the mux, e.g.
// harden, pass the mux a copy of the request, on which the mux sets
// Pattern).
func recordRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r) // sets r.Pattern on this very request
		if info, ok := r.Context().Value(infoKey).(*reqInfo); ok {
			info.route = r.Pattern
		}
	})
}

// observe reports every request to s.Observe and, when s.AccessLog is set,
// logs one line per request: method, route, status, duration and user id
// (0: anonymous). Nothing secret is logged: no header, query or body.
func (s *Server) observe(next http.Handler) http.Handler {
	if s.Observe == nil && s.AccessLog == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey, info))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		elapsed := time.Since(start)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := cmp.Or(info.route, r.Pattern)
		if route == "" {
			route = UnmatchedRoute
		}
		if s.Observe != nil {
			s.Observe.Request(route, status, elapsed)
			if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
				reason := info.code
				if reason == "" {
					reason = "http_" + strconv.Itoa(status)
				}
				s.Observe.Refused(reason)
			}
		}
		if s.AccessLog != nil {
			s.AccessLog.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000), slog.Int64("user_id", info.userID))
		}
	})
}

// statusWriter records the status a handler answered with. It passes
// Flush through (streams) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ReadFrom passes io.Copy's fast path through: net/http's ResponseWriter
// hands a file to the connection (sendfile on Linux), which a Write loop
// through this wrapper would copy through a buffer.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, r)
}

// writerOnly hides every method of a Writer but Write (so io.Copy does
// not call ReadFrom back).
type writerOnly struct{ io.Writer }
