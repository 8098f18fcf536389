package http

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
)

// JobsPrefix is where the admin listener serves River's web UI (the job
// dashboard); the UI must be built with this prefix.
const JobsPrefix = "/river"

// Admin is the handler of the admin listener: operations endpoints kept
// off the public API (metrics, the job dashboard, profiling, moderation).
// It must only be reachable by operators: it binds loopback by default, and
// anywhere else only with a Token (docs/operations.md, "The admin
// listener"). Whatever the address, it refuses cross-origin writes from
// browsers, and without a Token it answers only requests whose Host is an
// IP address or localhost (a page of another site that rebinds its name to
// the loopback address is refused).
type Admin struct {
	// Metrics serves GET /metrics (the Prometheus text format); nil: absent.
	Metrics http.Handler
	// Jobs serves the job dashboard under JobsPrefix+"/"; nil: absent.
	Jobs http.Handler
	// Extra admin routes, pattern -> handler, mounted beside the others:
	// a feature adds an admin endpoint with one entry here.
	Extra map[string]http.Handler
	// Token, when set, is required on every route as
	// "Authorization: Bearer <Token>" (compared in constant time).
	Token string
	// AllowedOrigins are trusted for cross-origin writes (NewCrossOrigin).
	AllowedOrigins []string
	// Cmdline is what /debug/pprof/cmdline shows: the command line with
	// its secrets redacted (the caller's work). nil: not served.
	Cmdline []string
}

// Handler returns the admin listener's whole HTTP surface.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	if a.Metrics != nil {
		mux.Handle("GET /metrics", a.Metrics)
	}
	if a.Jobs != nil {
		mux.Handle(JobsPrefix+"/", a.Jobs)
		mux.Handle("GET "+JobsPrefix, http.RedirectHandler(JobsPrefix+"/", http.StatusFound))
	}
	// net/http/pprof's handlers, on this mux rather than DefaultServeMux.
	mux.HandleFunc("/debug/pprof/", pprof.Index) // and every named profile: heap, goroutine, ...
	// Not pprof.Cmdline: it shows the process's arguments as given,
	// secrets and all.
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(a.Cmdline, "\x00")))
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	for pattern, h := range a.Extra {
		mux.Handle(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(envelope{ErrorMsg: "no such admin endpoint"})
	})
	co, err := NewCrossOrigin(a.AllowedOrigins)
	if err != nil { // the command checks the origins first
		co = http.NewCrossOriginProtection()
	}
	co.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminRefuse(w, http.StatusForbidden, errCrossOrigin)
	}))
	h := co.Handler(mux)
	want := sha256.Sum256([]byte(a.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if a.Token == "" {
			if !localHost(r.Host) {
				adminRefuse(w, http.StatusMisdirectedRequest, "the admin listener answers requests for a loopback address or localhost only")
				return
			}
		} else {
			tok, _ := bearer(r)
			got := sha256.Sum256([]byte(tok))
			if tok == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="feedd admin"`)
				adminRefuse(w, http.StatusUnauthorized, "the admin token is required (Authorization: Bearer <token>)")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func adminRefuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(envelope{ErrorMsg: msg})
}

// localHost reports whether host (a request's Host, port optional) is an
// IP address or localhost: what a client of a loopback listener that no
// page of another site has rebound asks for.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}
