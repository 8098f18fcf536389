package http

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/metrics"
)

// TestObserveRefusals: a 429 or 503 is counted in feedd_refusals_total by
// the error code it was answered with (so a new refusal code is counted
// without wiring), or by its status when it has none; requests answered
// before routing get the fixed route label, never their path.
func TestObserveRefusals(t *testing.T) {
	const limited = "test_rate_limited"
	statusOf[limited], v1Status[limited] = http.StatusTooManyRequests, http.StatusTooManyRequests
	t.Cleanup(func() { delete(statusOf, limited); delete(v1Status, limited) })

	m := metrics.New()
	s, _ := testServer(t)
	s.Observe = m
	s.Extra = map[string]http.Handler{
		"GET /limited": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.fail(w, r, feed.Errorf(limited, "slow down"))
		}),
		"GET /v1/limited": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.v1Fail(w, r, feed.Errorf(limited, "slow down"))
		}),
		"GET /shed": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}),
	}
	for _, p := range []string{"/limited", "/limited", "/v1/limited", "/shed"} {
		serve(s, "GET", p, "")
	}
	big := httptest.NewRequest("POST", "/blog", strings.NewReader("x"))
	big.ContentLength = MaxBody + 1
	s.Handler().ServeHTTP(httptest.NewRecorder(), big)

	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, name := range []string{"feedd_refusals_total", "feedd_http_requests_total"} {
		for _, m := range mfs[name].GetMetric() {
			key := name
			for _, l := range m.Label {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = m.Counter.GetValue()
		}
	}
	want := map[string]float64{
		"feedd_refusals_total reason=" + limited:                     3,
		"feedd_refusals_total reason=http_503":                       1,
		"feedd_refusals_total reason=http_429":                       0,
		"feedd_http_requests_total code=429 route=GET /limited":      2,
		"feedd_http_requests_total code=429 route=GET /v1/limited":   1,
		"feedd_http_requests_total code=503 route=GET /shed":         1,
		"feedd_http_requests_total code=413 route=" + UnmatchedRoute: 1,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s = %v, want %v", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want exactly %v", got, want)
	}
}
