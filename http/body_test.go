package http

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

var (
	tooLargeEnvelope = fmt.Sprintf(`{"success":false,"errorMsg":"request body must be at most %d bytes"}`+"\n", MaxBody)
	tooLargeNative   = fmt.Sprintf(`{"error":{"code":"too_large","message":"request body must be at most %d bytes"}}`+"\n", MaxBody)
)

// object returns a JSON object of exactly n bytes: {"phone":"1..."}.
func object(n int) []byte {
	head := `{"phone":"`
	return []byte(head + strings.Repeat("1", n-len(head)-2) + `"}`)
}

// padded returns {} followed by spaces, n bytes in all: valid JSON whose
// end is past the limit when n > MaxBody.
func padded(n int) []byte { return append([]byte("{}"), bytes.Repeat([]byte(" "), n-2)...) }

// post returns a POST of body to path; unknownLength hides its length, as a
// chunked request does, so only the MaxBytesReader can stop it.
func post(path string, body []byte, unknownLength bool) *http.Request {
	r := httptest.NewRequest("POST", path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if unknownLength {
		r.ContentLength = -1
	}
	return r
}

// decodingHandler decodes the body as the compatible handlers do, and
// answers {"success":true} when it fits.
func decodingHandler(s *Server, called *bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*called = true
		var v map[string]any
		if err := decode(r, &v); err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func TestLimitBody(t *testing.T) {
	for _, tc := range []struct {
		name          string
		body          []byte
		unknownLength bool
		wantStatus    int
		wantBody      string
		wantNext      bool // the inner handler runs
	}{
		{"declared over the limit", object(MaxBody + 1), false, 413, tooLargeEnvelope, false},
		{"declared far over the limit", object(4 * MaxBody), false, 413, tooLargeEnvelope, false},
		{"undeclared over the limit", object(MaxBody + 1), true, 413, tooLargeEnvelope, true},
		{"undeclared, value ends inside, padding past the limit", padded(MaxBody + 1), true, 413, tooLargeEnvelope, true},
		{"declared, exactly the limit", object(MaxBody), false, 200, `{"success":true}` + "\n", true},
		{"undeclared, exactly the limit", padded(MaxBody), true, 200, `{"success":true}` + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := testServer(t)
			var called bool
			w := httptest.NewRecorder()
			s.limitBody(decodingHandler(s, &called)).ServeHTTP(w, post("/user/login", tc.body, tc.unknownLength))
			if w.Code != tc.wantStatus || w.Body.String() != tc.wantBody {
				t.Errorf("answer = %d %s, want %d %s", w.Code, w.Body.String(), tc.wantStatus, tc.wantBody)
			}
			checkJSONType(t, w)
			if called != tc.wantNext {
				t.Errorf("inner handler called = %v, want %v", called, tc.wantNext)
			}
		})
	}
}

func TestV1LimitBody(t *testing.T) {
	for _, tc := range []struct {
		path     string
		size     int
		wantNext bool
	}{
		{"/v1/posts", MaxBody + 1, false},
		{"/v1/auth/login", 2 * MaxBody, false},
		{"/v1/posts", MaxBody, true},
		// Not the native API: left to limitBody and its envelope.
		{"/blog", MaxBody + 1, true},
		{"/v1", MaxBody + 1, true},
		{"/v1x/posts", MaxBody + 1, true},
	} {
		s, _ := testServer(t)
		var called bool
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true })
		w := httptest.NewRecorder()
		s.v1LimitBody(next).ServeHTTP(w, post(tc.path, object(tc.size), false))
		if called != tc.wantNext {
			t.Errorf("%s, %d bytes: next called = %v, want %v", tc.path, tc.size, called, tc.wantNext)
		}
		if !tc.wantNext {
			if w.Code != 413 || w.Body.String() != tooLargeNative {
				t.Errorf("%s, %d bytes: answer = %d %s, want 413 %s", tc.path, tc.size, w.Code, w.Body.String(), tooLargeNative)
			}
			checkJSONType(t, w)
		}
	}
}

// TestHandlerBodyLimit: the whole handler answers an oversized body in the
// format of the API it was sent to, before authentication, and without a
// Service: the refusal needs no storage.
func TestHandlerBodyLimit(t *testing.T) {
	for _, tc := range []struct {
		path          string
		unknownLength bool
		want          string
	}{
		{"/user/login", false, tooLargeEnvelope},
		// Of unknown length: the login's body step stops it at its own limit.
		{"/user/login", true, strings.Replace(tooLargeEnvelope, fmt.Sprint(MaxBody), fmt.Sprint(MaxAnonymousBody), 1)},
		{"/blog", false, tooLargeEnvelope}, // needs login: the size is checked first
		{"/no/such/path", false, tooLargeEnvelope},
		{"/v1/auth/login", false, tooLargeNative},
		{"/v1/auth/login", true, strings.Replace(tooLargeNative, fmt.Sprint(MaxBody), fmt.Sprint(MaxAnonymousBody), 1)},
		{"/v1/posts", false, tooLargeNative}, // needs login
		{"/v1/no/such/path", false, tooLargeNative},
	} {
		s, _ := testServer(t)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, post(tc.path, object(MaxBody+1), tc.unknownLength))
		if w.Code != 413 || w.Body.String() != tc.want {
			t.Errorf("POST %s (unknown length %v) = %d %s, want 413 %s", tc.path, tc.unknownLength, w.Code, w.Body.String(), tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	type in struct {
		Phone string `json:"phone"`
		N     int64  `json:"n"`
		OK    bool   `json:"ok"`
	}
	for _, tc := range []struct {
		body   string
		want   string // compatible decode's refusal, "" for none
		wantV1 string // v1Decode's refusal, "" for none
	}{
		{`{"phone":"13800000000"}`, "", ""},
		{` {"n":1} ` + "\n", "", ""},
		{`{"phone":"1","extra":true}`, "", `unknown field "extra"`},
		{``, "request body must be a JSON object", "request body must be a JSON object"},
		{`   `, "request body must be a JSON object", "request body must be a JSON object"},
		{`{`, "request body is not valid JSON", "request body is not valid JSON"},
		{`{"phone":}`, "request body is not valid JSON", "request body is not valid JSON"},
		{`nul`, "request body is not valid JSON", "request body is not valid JSON"},
		{`{} {}`, "request body must hold one JSON object", "request body must hold one JSON object"},
		{`{}x`, "request body must hold one JSON object", "request body must hold one JSON object"},
		{`{"phone":1}`, "field phone must be a string", "field phone must be a string"},
		{`{"n":"1"}`, "field n must be a number", "field n must be an integer"},
		{`{"n":1.5}`, "field n must be a number", "field n must be an integer"},
		{`{"n":9223372036854775808}`, "field n must be a number", "field n must be an integer"},
		{`{"ok":"yes"}`, "field ok must be a boolean", "field ok must be a boolean"},
		{`[]`, "request body must be a JSON object", "request body must be a JSON object"},
		{`"s"`, "request body must be a JSON object", "request body must be a JSON object"},
		{`1`, "request body must be a JSON object", "request body must be a JSON object"},
		{`true`, "request body must be a JSON object", "request body must be a JSON object"},
		{`{"phone":{}}`, "field phone must be a string", "field phone must be a string"},
		{`{"phone":[]}`, "field phone must be a string", "field phone must be a string"},
		// The compatible decode takes null as {} (the service then refuses
		// the empty fields); the native one wants an object.
		{`null`, "", "request body must be a JSON object"},
	} {
		var v in
		err := decode(httptest.NewRequest("POST", "/", strings.NewReader(tc.body)), &v)
		if tc.want == "" {
			if err != nil {
				t.Errorf("decode(%q) = %v, want no error", tc.body, err)
			}
		} else {
			checkRefusal(t, err, tc.want)
		}
		var v1 in
		err = v1Decode(httptest.NewRequest("POST", "/", strings.NewReader(tc.body)), &v1)
		if tc.wantV1 == "" {
			if err != nil {
				t.Errorf("v1Decode(%q) = %v, want no error", tc.body, err)
			}
		} else {
			checkRefusal(t, err, tc.wantV1)
		}
	}
}

// TestDecodeTooLargeCode: decode reports a cut body as too_large, not as
// bad JSON, so that both APIs answer 413.
func TestDecodeTooLargeCode(t *testing.T) {
	for _, body := range [][]byte{object(MaxBody + 1), padded(MaxBody + 1)} {
		r := post("/v1/auth/login", body, true)
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, MaxBody)
		var v map[string]any
		if code := feed.ErrorCode(decode(r, &v)); code != feed.ETOOLARGE {
			t.Errorf("decode of %d bytes: code %q, want too_large", len(body), code)
		}
		r = post("/v1/auth/login", body, true)
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, MaxBody)
		if code := feed.ErrorCode(v1Decode(r, &struct{}{})); code != feed.ETOOLARGE {
			t.Errorf("v1Decode of %d bytes: code %q, want too_large", len(body), code)
		}
	}
}

// TestBodyStep: the body step reads bodies of every size and kind within
// the budget and gives every byte back when the request ends; a body too
// large is still 413, and one that does not fit the budget beside another
// held is 503 with Retry-After; a handler reading a body that no body
// step read fails (500), so no route can read one unadmitted.
func TestBodyStep(t *testing.T) {
	s, _ := testServer(t)
	s.bodies = newBudget(MinBodyMemory)
	var called bool
	h := s.limitBody(holdBody(s.body(decodingHandler(s, &called))))
	for _, tc := range []struct {
		name          string
		body          []byte
		unknownLength bool
		want          int
	}{
		{"small", object(100), false, 200},
		{"small, unknown length", object(100), true, 200},
		{"exactly the limit", object(MaxBody), false, 200},
		{"exactly the limit, unknown length", padded(MaxBody), true, 200},
		{"over the limit, unknown length", padded(MaxBody + 1), true, 413},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, post("/user/login", tc.body, tc.unknownLength))
		if w.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
		if n := s.bodies.held(); n != 0 {
			t.Errorf("%s: %d bytes still counted after the request", tc.name, n)
		}
	}

	// A body held by a handler leaves no room for a second large one.
	hold, release := make(chan struct{}), make(chan struct{})
	holding := s.limitBody(holdBody(s.body(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hold)
		<-release
	}))))
	done := make(chan struct{})
	go func() {
		defer close(done)
		holding.ServeHTTP(httptest.NewRecorder(), post("/user/login", object(MaxBody/2+1), false))
	}()
	<-hold
	w := httptest.NewRecorder()
	h.ServeHTTP(w, post("/v1/auth/login", object(MaxBody/2+1), false))
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"busy"`) {
		t.Errorf("a second large body beside a held one: %d %v %s, want 503 busy with Retry-After", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, post("/user/login", object(1000), false))
	if w.Code != 200 {
		t.Errorf("a small body beside a held one: %d %s, want 200", w.Code, w.Body)
	}
	close(release)
	<-done
	if n := s.bodies.held(); n != 0 {
		t.Errorf("%d bytes still counted after every request", n)
	}

	// No body step: the handler cannot read the body.
	w = httptest.NewRecorder()
	holdBody(decodingHandler(s, &called)).ServeHTTP(w, post("/user/login", object(100), false))
	if w.Code != 500 {
		t.Errorf("a body read without the body step: %d %s, want 500", w.Code, w.Body)
	}
}

// held is what the budget counts.
func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// TestBodyClientShare: one client holds at most its share of the budget,
// whatever room is left; another client's body still fits, and what a
// client gives back is its to take again.
func TestBodyClientShare(t *testing.T) {
	b := newBudget(DefaultBodyMemory)
	share := clientShare(DefaultBodyMemory)
	if share != DefaultBodyMemory/16 {
		t.Fatalf("share %d of %d", share, DefaultBodyMemory)
	}
	if !b.take("127.0.0.2", share) || b.take("127.0.0.2", 1) {
		t.Fatal("a client takes its share and not a byte more")
	}
	if !b.take("2001:db8::/64", share) || !b.take("127.0.0.3", firstBuffer) {
		t.Fatal("other clients' bodies do not fit beside it")
	}
	b.give("127.0.0.2", firstBuffer)
	if !b.take("127.0.0.2", firstBuffer) {
		t.Fatal("a client cannot take again what it gave back")
	}
	b.give("127.0.0.2", share)
	b.give("2001:db8::/64", share)
	b.give("127.0.0.3", firstBuffer)
	if b.held() != 0 || len(b.by) != 0 {
		t.Fatalf("%d bytes and %d clients counted after all gave back", b.held(), len(b.by))
	}
	if clientShare(MinBodyMemory) != MaxBody {
		t.Fatalf("the share of the least budget %d, want one full body", clientShare(MinBodyMemory))
	}
}

// TestAnonymousBodyStep: the body step of the routes without a login
// reads MaxAnonymousBody bytes at most: a body declared larger is refused
// 413 before it is read (the handler does not run), one of unknown length
// once it is past the limit.
func TestAnonymousBodyStep(t *testing.T) {
	s, _ := testServer(t)
	s.bodies = newBudget(DefaultBodyMemory)
	for _, tc := range []struct {
		name          string
		body          []byte
		unknownLength bool
		want          int
		wantNext      bool
	}{
		{"a login", object(40), false, 200, true},
		{"exactly the limit", object(MaxAnonymousBody), false, 200, true},
		{"declared over the limit", object(MaxAnonymousBody + 1), false, 413, false},
		{"declared a megabyte", object(MaxBody), false, 413, false},
		{"over the limit, unknown length", padded(MaxAnonymousBody + 1), true, 413, true},
	} {
		for _, path := range []string{"/user/login", "/v1/auth/login"} {
			var called bool
			w := httptest.NewRecorder()
			s.limitBody(holdBody(s.anonymousBody(decodingHandler(s, &called)))).ServeHTTP(w, post(path, tc.body, tc.unknownLength))
			if w.Code != tc.want || called != tc.wantNext {
				t.Errorf("%s %s: %d %s, handler ran %v; want %d, %v", path, tc.name, w.Code, w.Body, called, tc.want, tc.wantNext)
			}
			if tc.want == 413 && !strings.Contains(w.Body.String(), fmt.Sprintf("at most %d bytes", MaxAnonymousBody)) {
				t.Errorf("%s %s: %s, want the limit said", path, tc.name, w.Body)
			}
		}
		if n := s.bodies.held(); n != 0 {
			t.Errorf("%s: %d bytes still counted", tc.name, n)
		}
	}
}
