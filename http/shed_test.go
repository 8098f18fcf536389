package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A handler held busy makes the next request of its kind wait its bounded
// turn and then be refused: 503, Retry-After, the body of its API; the
// other kind, with a slot of its own, still goes through.
func TestShedRefusesWhenFull(t *testing.T) {
	var shedCount atomic.Int64
	s, _ := testServer(t)
	s.Shed = &Shed{Reads: 1, Writes: 1, ReadWait: 5 * time.Millisecond, WriteWait: 20 * time.Millisecond,
		RetryAfter: 2 * time.Second, OnShed: func(*http.Request) { shedCount.Add(1) }}
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	busy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			held <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := s.shedding(busy)
	var wg sync.WaitGroup
	for _, m := range []string{"GET", "PUT"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, "/blog/1?hold", nil))
		}()
		<-held
	}
	serve := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/blog/of/follow", `{"success":false,"errorMsg":"server busy: retry after a moment"}` + "\n"},
		{"PUT", "/blog/like/1", `{"success":false,"errorMsg":"server busy: retry after a moment"}` + "\n"},
		{"GET", "/v1/timeline", `{"error":{"code":"busy","message":"server busy: retry after a moment"}}` + "\n"},
	} {
		w := serve(c.method, c.path)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "2" || w.Body.String() != c.body {
			t.Errorf("%s %s while full: %d Retry-After %q %s; want 503, 2, %s", c.method, c.path, w.Code, w.Header().Get("Retry-After"), w.Body, c.body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s: body is not JSON", c.path)
		}
	}
	if n := shedCount.Load(); n != 3 {
		t.Errorf("OnShed called %d times, want 3", n)
	}
	// Never shed: health and the API document.
	for _, p := range []string{"/healthz", "/v1/openapi.json"} {
		if w := serve("GET", p); w.Code != http.StatusNoContent {
			t.Errorf("GET %s while full: %d, want it served", p, w.Code)
		}
	}
	// A waiting request gets the slot freed within its wait.
	s2, _ := testServer(t)
	s2.Shed = &Shed{Reads: 1, ReadWait: 10 * time.Second}
	h2 := s2.shedding(busy)
	go h2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x?hold", nil))
	<-held
	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		h2.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
		done <- w.Code
	}()
	close(release)
	if code := <-done; code != http.StatusNoContent {
		t.Errorf("waiting read: %d, want it served once the slot was free", code)
	}
	wg.Wait()
}

// The zero limits admit everything.
func TestShedUnlimited(t *testing.T) {
	s, _ := testServer(t)
	s.Shed = &Shed{}
	h := s.shedding(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for range 100 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/blog/of/follow", nil))
		if w.Code != http.StatusNoContent {
			t.Fatalf("unlimited: %d", w.Code)
		}
	}
}
