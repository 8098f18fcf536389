package http

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/feedd/feedd/internal/metrics"
)

// BenchmarkObserve is the cost of instrumenting a request: the whole
// handler (routing, body limit) answering a trivial route, bare, with
// metrics, and with metrics and the access log (JSON, discarded).
func BenchmarkObserve(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		name    string
		observe bool
		log     bool
	}{{"bare", false, false}, {"metrics", true, false}, {"metrics+accesslog", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			s := &Server{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Extra: map[string]http.Handler{"GET /bench/{id}": ok}}
			if tc.observe {
				s.Observe = metrics.New()
			}
			if tc.log {
				s.AccessLog = slog.New(slog.NewJSONHandler(io.Discard, nil))
			}
			h := s.Handler()
			r := httptest.NewRequest("GET", "/bench/42", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}
