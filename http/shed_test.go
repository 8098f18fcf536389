package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
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

// While fan-out lags past MaxLag the limits shrink to one request of each
// kind; once it is back under half of MaxLag they grow to the configured
// limits again.
func TestShedTightensWhileFanoutLags(t *testing.T) {
	var lag atomic.Int64
	s, _ := testServer(t)
	s.Shed = &Shed{Reads: 8, Writes: 4, ReadWait: 5 * time.Millisecond, WriteWait: 5 * time.Millisecond,
		Lag: func() time.Duration { return time.Duration(lag.Load()) }, MaxLag: time.Second, LagTick: time.Nanosecond}
	release := make(chan struct{})
	held := make(chan struct{}, 16)
	h := s.shedding(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			held <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	serve := func(method, path string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code
	}
	// hold starts n requests that stay in the handler and returns how many
	// got in (the others were refused).
	var wg sync.WaitGroup
	hold := func(method string, n int) int {
		codes := make(chan int, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes <- serve(method, "/blog/1?hold")
			}()
		}
		in := 0
		for range n {
			select {
			case <-held:
				in++
			case c := <-codes:
				if c != http.StatusServiceUnavailable {
					t.Errorf("%s refused with %d, want 503", method, c)
				}
			}
		}
		return in
	}
	ticks := func() {
		for range 40 {
			if c := serve("GET", "/blog/of/follow"); c != http.StatusNoContent {
				t.Fatalf("a lone GET got %d", c)
			}
		}
	}

	if in := hold("GET", 8); in != 8 {
		t.Errorf("no lag: %d of 8 GETs admitted, want 8", in)
	}
	close(release)
	wg.Wait()
	release = make(chan struct{})

	lag.Store(int64(10 * time.Second))
	ticks()
	if in := hold("GET", 3); in != 1 {
		t.Errorf("fan-out 10 s behind: %d of 3 GETs admitted, want 1", in)
	}
	if in := hold("PUT", 3); in != 1 {
		t.Errorf("fan-out 10 s behind: %d of 3 PUTs admitted, want 1", in)
	}
	close(release)
	wg.Wait()
	release = make(chan struct{})

	lag.Store(int64(100 * time.Millisecond))
	ticks()
	if in := hold("GET", 9); in != 8 {
		t.Errorf("fan-out caught up: %d of 9 GETs admitted, want 8", in)
	}
	if in := hold("PUT", 5); in != 4 {
		t.Errorf("fan-out caught up: %d of 5 PUTs admitted, want 4", in)
	}
	close(release)
	wg.Wait()
}

// One client fills at most half of a gate's queue: past that its requests
// are refused at once, while another client's request still waits for its
// turn and gets it.
func TestShedQueueShareOfOneClient(t *testing.T) {
	g := newGate(4)
	for range 4 { // every slot taken
		if !g.enter(httptest.NewRequest("PUT", "/", nil), 0) {
			t.Fatal("a free slot refused")
		}
	}
	from := func(client string) *http.Request {
		r := httptest.NewRequest("PUT", "/blog/like/1", nil)
		return r.WithContext(feed.WithClient(r.Context(), client))
	}
	got := make(chan bool, 3)
	waiting := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); g.waiting.Load() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", g.waiting.Load(), n)
			}
		}
	}
	for range 2 {
		go func() { got <- g.enter(from("10.0.0.1"), 10*time.Second) }()
	}
	waiting(2)
	third := make(chan bool, 1)
	go func() { third <- g.enter(from("10.0.0.1"), time.Hour) }()
	select {
	case ok := <-third:
		if ok {
			t.Fatal("a third request of one client got a slot")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a third request of one client queued with 4 slots")
	}
	go func() { got <- g.enter(from("10.0.0.2"), 10*time.Second) }()
	waiting(3)
	for range 3 {
		g.leave()
		if !<-got {
			t.Error("a queued request refused, its slot freed")
		}
	}
}
