package http

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
)

// JobsPrefix is where the admin listener serves River's web UI (the job
// dashboard); the UI must be built with this prefix.
const JobsPrefix = "/river"

// Admin is the handler of the admin listener: operations endpoints kept
// off the public API (metrics, the job dashboard, profiling). It must only
// be reachable by operators (it binds loopback by default).
type Admin struct {
	// Metrics serves GET /metrics (the Prometheus text format); nil: absent.
	Metrics http.Handler
	// Jobs serves the job dashboard under JobsPrefix+"/"; nil: absent.
	Jobs http.Handler
	// Extra admin routes, pattern -> handler, mounted beside the others:
	// a feature adds an admin endpoint with one entry here.
	Extra map[string]http.Handler
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
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
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
	return mux
}
