package http

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
)

// Hardening of every answer, both APIs: canonical paths only (the mux would
// answer others with an HTML redirect), 405 with Allow for a known path
// asked with another method, X-Content-Type-Options: nosniff everywhere,
// Cache-Control: no-store on answers to authenticated requests and on
// logins (they carry a token), the client's address in the request context
// for the abuse limits, and the readiness check.

// ReadyCheck is one dependency GET /readyz checks.
type ReadyCheck struct {
	Name  string                          // named in the 503 answer when it fails
	Check func(ctx context.Context) error // nil when the dependency serves
}

// readyTimeout bounds each readiness check: a probe write slower than this
// is a database not taking writes.
const readyTimeout = time.Second

// probeMethods are the methods a 405's Allow header may list.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// harden serves next (the whole stack on mux) after the checks above;
// catchAll are mux's patterns that answer "no such endpoint".
func (s *Server) harden(mux *http.ServeMux, next http.Handler, catchAll ...string) http.Handler {
	known := func(r *http.Request) bool {
		_, pat := mux.Handler(r)
		for _, c := range catchAll {
			if pat == c {
				return false
			}
		}
		return pat != ""
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if r.Header.Get("Authorization") != "" || strings.HasSuffix(r.URL.Path, "/login") {
			h.Set("Cache-Control", "no-store")
		}
		r = r.WithContext(feed.WithClient(r.Context(), s.clientAddr(r)))
		v1 := r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/")
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p || p == "/v1" {
			s.notFound(w, r, v1)
			return
		}
		if !known(r) {
			var allow []string
			for _, m := range probeMethods {
				probe := r.Clone(r.Context())
				probe.Method = m
				if known(probe) {
					allow = append(allow, m)
				}
			}
			if len(allow) > 0 {
				h.Set("Allow", strings.Join(allow, ", "))
				msg := "method " + r.Method + " is not allowed here; use " + strings.Join(allow, " or ")
				if v1 {
					var body v1Error
					body.Error.Code, body.Error.Message = "method_not_allowed", msg
					s.v1JSON(w, http.StatusMethodNotAllowed, body)
				} else {
					s.encode(w, http.StatusMethodNotAllowed, envelope{ErrorMsg: msg})
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, v1 bool) {
	if v1 {
		s.v1NotFound().ServeHTTP(w, r)
		return
	}
	s.handleNotFound().ServeHTTP(w, r)
}

// clientAddr is the address the abuse limits count a request by: the
// connection's peer, or, when the peer is one of TrustedProxies, the last
// address of X-Forwarded-For that is not. An IPv6 client counts by its /64,
// the block one subscriber usually holds.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if s.trusted(addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed hop: keep the last trusted one
			}
			addr = a.Unmap()
			if !s.trusted(addr) {
				break
			}
		}
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// readyFresh is how long a readiness result is answered again before the
// checks run anew: a probe every few milliseconds costs one check (a write
// to the database) a second, and a database that stops taking writes shows
// within readyFresh + readyTimeout (2 s).
const readyFresh = time.Second

// handleReadyz answers 200 while every ReadyCheck passes, else 503 naming
// the failed ones (the detail goes to the log). The checks run for at most
// one caller at a time, at most once per readyFresh; the others are given
// the last result.
func (s *Server) handleReadyz() http.Handler {
	var (
		mu     sync.Mutex
		at     time.Time
		failed []string
	)
	check := func(ctx context.Context) []string {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < readyFresh {
			return failed
		}
		// Not the request's context: its result is other callers' too.
		ctx = context.WithoutCancel(ctx)
		failed = []string{}
		for _, c := range s.Ready {
			cctx, cancel := context.WithTimeout(ctx, readyTimeout)
			err := c.Check(cctx)
			cancel()
			if err != nil {
				s.Log.Error("readiness check failed", "check", c.Name, "error", err)
				failed = append(failed, c.Name)
			}
		}
		at = time.Now()
		return failed
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := check(r.Context())
		if len(failed) > 0 {
			s.encode(w, http.StatusServiceUnavailable, envelope{
				ErrorMsg: "not ready: " + strings.Join(failed, ", ") + " failing",
				Data:     map[string][]string{"failed": failed},
			})
			return
		}
		s.ok(w, map[string][]string{"failed": failed})
	})
}
