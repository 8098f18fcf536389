package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

// serve sends one request through the whole handler of s; a body is sent
// as JSON (Content-Type application/json) unless header says otherwise.
func serve(s *Server, method, target, body string, header ...string) *httptest.ResponseRecorder {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

// TestNotFound: a path or method the API does not have is answered in the
// format of the API it falls under. The Server has no Service: routing
// must not need one.
func TestNotFound(t *testing.T) {
	// The web page's paths exist for GET only: another method is a 405.
	for _, path := range []string{"/", "/assets/app.js"} {
		s, _ := testServer(t)
		w := serve(s, "POST", path, "")
		if w.Code != http.StatusMethodNotAllowed || !strings.Contains(w.Header().Get("Allow"), "GET") {
			t.Errorf("POST %s = %d (Allow %q), want 405 allowing GET", path, w.Code, w.Header().Get("Allow"))
		}
		checkJSONType(t, w)
	}
	const compatible = `{"success":false,"errorMsg":"no such endpoint"}` + "\n"
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/index.html", compatible},
		{"GET", "/assets/", compatible},
		{"GET", "/assets/nope.js", compatible},
		{"GET", "/nope", compatible},
		{"GET", "/api/user/me", compatible}, // the proxy strips /api, not feedd
		{"GET", "/user/me/", compatible},
		{"GET", "/blog/1/2", compatible},
		{"GET", "/blog/of/follow/x", compatible},
		{"GET", "/V1/me", compatible},
		{"GET", "/v1x", compatible},
		{"GET", "/blog/../user/me", compatible}, // not canonical: no redirect
		{"GET", "//user/me", compatible},
		{"GET", "/user/./me", compatible},
		{"GET", "/v1", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1"}}`},
		{"GET", "/v1/posts/../me", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/posts/../me"}}`},
		{"GET", "/v1/", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/"}}`},
		{"GET", "/v1/nope", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/nope"}}`},
		{"GET", "/v1/users/", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/users/"}}`},
		{"GET", "/v1/posts/1/", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/posts/1/"}}`},
		{"GET", "/v1/user/me", `{"error":{"code":"not_found","message":"no such endpoint: GET /v1/user/me"}}`},
	} {
		s, log := testServer(t)
		w := serve(s, tc.method, tc.path, "")
		want := strings.TrimSuffix(tc.want, "\n") + "\n"
		if w.Code != http.StatusNotFound || w.Body.String() != want {
			t.Errorf("%s %s = %d %s, want 404 %s", tc.method, tc.path, w.Code, w.Body.String(), want)
		}
		checkJSONType(t, w)
		if log.Len() != 0 {
			t.Errorf("%s %s logged: %s", tc.method, tc.path, log)
		}
	}
}

// TestMethodNotAllowed: a known path asked with another method is 405 with
// Allow, in the format of its API.
func TestMethodNotAllowed(t *testing.T) {
	for _, tc := range []struct{ method, path, allow, want string }{
		{"POST", "/healthz", "GET, HEAD", `{"success":false,"errorMsg":"method POST is not allowed here; use GET or HEAD"}`},
		{"PATCH", "/blog/1", "GET, HEAD, DELETE", `{"success":false,"errorMsg":"method PATCH is not allowed here; use GET or HEAD or DELETE"}`},
		{"PUT", "/follow/or/not/1", "GET, HEAD", `{"success":false,"errorMsg":"method PUT is not allowed here; use GET or HEAD"}`},
		{"POST", "/v1/me", "GET, HEAD", `{"error":{"code":"method_not_allowed","message":"method POST is not allowed here; use GET or HEAD"}}`},
		{"PUT", "/v1/posts/1", "GET, HEAD, PATCH, DELETE", `{"error":{"code":"method_not_allowed","message":"method PUT is not allowed here; use GET or HEAD or PATCH or DELETE"}}`},
		{"GET", "/v1/auth/code", "POST", `{"error":{"code":"method_not_allowed","message":"method GET is not allowed here; use POST"}}`},
	} {
		s, _ := testServer(t)
		w := serve(s, tc.method, tc.path, "")
		if w.Code != http.StatusMethodNotAllowed || w.Body.String() != tc.want+"\n" || w.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d Allow %q %s, want 405 Allow %q %s", tc.method, tc.path, w.Code, w.Header().Get("Allow"), w.Body.String(), tc.allow, tc.want)
		}
		checkJSONType(t, w)
	}
}

// TestHardenHeaders: nosniff on every answer; no-store on answers to
// authenticated requests and logins (the end-to-end tests cover answers
// of a real service).
func TestHardenHeaders(t *testing.T) {
	s, _ := testServer(t)
	for _, tc := range []struct {
		method, path string
		header       []string
		noStore      bool
	}{
		{"GET", "/nope", nil, false},
		{"GET", "/healthz", nil, false},
		{"GET", "/blog/../x", nil, false},
		{"POST", "/user/login", nil, true},
		{"POST", "/v1/auth/login", nil, true},
		{"GET", "/v1/nope", []string{"Authorization", "Bearer x"}, true},
		{"GET", "/nope", []string{"Authorization", "x"}, true},
	} {
		w := serve(s, tc.method, tc.path, "", tc.header...)
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options = %q", tc.method, tc.path, got)
		}
		if got := w.Header().Get("Cache-Control") == "no-store"; got != tc.noStore {
			t.Errorf("%s %s: Cache-Control = %q, want no-store %v", tc.method, tc.path, w.Header().Get("Cache-Control"), tc.noStore)
		}
	}
}

// TestClientAddr: the peer, unless it is a trusted proxy; then the last
// untrusted X-Forwarded-For hop.
func TestClientAddr(t *testing.T) {
	s := &Server{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}}
	for _, tc := range []struct{ peer, xff, want string }{
		{"192.0.2.1:5000", "", "192.0.2.1"},
		{"192.0.2.1:5000", "198.51.100.7", "192.0.2.1"}, // untrusted peer: header ignored
		{"10.1.2.3:5000", "198.51.100.7", "198.51.100.7"},
		{"10.1.2.3:5000", "6.6.6.6, 198.51.100.7, 10.9.9.9", "198.51.100.7"}, // spoofed first hop ignored
		{"127.0.0.1:5000", "10.0.0.1", "10.0.0.1"},                           // all trusted: the farthest
		{"10.1.2.3:5000", "junk, 198.51.100.7", "198.51.100.7"},
		{"10.1.2.3:5000", "198.51.100.7, junk", "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:5000", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.9]:5000", "", "192.0.2.9"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := s.clientAddr(r); got != tc.want {
			t.Errorf("peer %s X-Forwarded-For %q: client %q, want %q", tc.peer, tc.xff, got, tc.want)
		}
	}
}

// TestZeroServer: a Server with nothing set still answers.
func TestZeroServer(t *testing.T) {
	w := serve(&Server{}, "GET", "/nope", "")
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404", w.Code)
	}
	w = serve(&Server{}, "GET", "/healthz", "")
	if w.Code != http.StatusOK || w.Body.String() != `{"success":true}`+"\n" {
		t.Errorf("GET /healthz = %d %s, want 200 {\"success\":true}", w.Code, w.Body.String())
	}
}

func TestHealthz(t *testing.T) {
	s, log := testServer(t)
	s.Health = func(ctx context.Context) error { return nil }
	if w := serve(s, "GET", "/healthz", ""); w.Code != 200 || w.Body.String() != `{"success":true}`+"\n" {
		t.Errorf("healthy: %d %s", w.Code, w.Body.String())
	}

	const detail = "dial tcp 127.0.0.1:6379: connect: connection refused"
	s.Health = func(ctx context.Context) error { return errors.New(detail) }
	w := serve(s, "GET", "/healthz", "")
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != `{"success":false,"errorMsg":"unavailable"}`+"\n" {
		t.Errorf("unhealthy: %d %s, want 503 unavailable", w.Code, w.Body.String())
	}
	checkJSONType(t, w)
	if !strings.Contains(log.String(), detail) {
		t.Errorf("health failure not logged: %s", log)
	}
}

func TestExtraRoutes(t *testing.T) {
	s, _ := testServer(t)
	s.Extra = map[string]http.Handler{
		"GET /debug/x": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }),
	}
	if w := serve(s, "GET", "/debug/x", ""); w.Code != 200 || w.Body.String() != "x" {
		t.Errorf("extra route: %d %q", w.Code, w.Body.String())
	}
	if w := serve(s, "GET", "/debug/y", ""); w.Code != 404 {
		t.Errorf("beside an extra route: %d, want 404", w.Code)
	}
}

func TestOpenAPIServed(t *testing.T) {
	s, _ := testServer(t)
	w := serve(s, "GET", "/v1/openapi.json", "")
	if w.Code != 200 {
		t.Fatalf("GET /v1/openapi.json = %d", w.Code)
	}
	checkJSONType(t, w)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") || len(doc.Paths) == 0 {
		t.Errorf("openapi %q with %d paths", doc.OpenAPI, len(doc.Paths))
	}
}

// v1Routes is every native route that needs a token (routes.go).
var v1Routes = []string{
	"DELETE /v1/auth/session",
	"GET /v1/me",
	"GET /v1/users/1",
	"GET /v1/users/1/followers",
	"GET /v1/users/1/following",
	"POST /v1/posts",
	"GET /v1/posts/1",
	"DELETE /v1/posts/1",
	"PUT /v1/posts/1/like",
	"DELETE /v1/posts/1/like",
	"GET /v1/posts/1/likes",
	"GET /v1/timeline",
	"PUT /v1/following/1",
	"DELETE /v1/following/1",
	"GET /v1/mutes",
	"PUT /v1/mutes/1",
	"DELETE /v1/mutes/1",
	"GET /v1/blocks",
	"PUT /v1/blocks/1",
	"DELETE /v1/blocks/1",
	// Authentication comes before the path's own checks.
	"GET /v1/posts/abc",
	"GET /v1/timeline?limit=0",
}

// TestV1NeedsToken: every native route that needs login is routed (a 401,
// not the 404 of an unknown path) and refuses a request without a usable
// bearer token before it reaches the Service.
func TestV1NeedsToken(t *testing.T) {
	for _, route := range v1Routes {
		method, target, _ := strings.Cut(route, " ")
		for _, tc := range []struct {
			header, challenge string
		}{
			{"", `Bearer realm="feedd"`},
			{"Basic dTpw", `Bearer realm="feedd", error="invalid_request"`},
			{"Bearer ", `Bearer realm="feedd", error="invalid_request"`},
		} {
			s, log := testServer(t) // no Service: reaching it panics
			var h []string
			if tc.header != "" {
				h = []string{"Authorization", tc.header}
			}
			w := serve(s, method, target, "", h...)
			if want := `{"error":{"code":"unauthorized","message":"a bearer token is required"}}` + "\n"; w.Code != 401 || w.Body.String() != want {
				t.Errorf("%s (Authorization %q) = %d %s, want 401 %s", route, tc.header, w.Code, w.Body.String(), want)
			}
			if got := w.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Errorf("%s (Authorization %q): WWW-Authenticate %q, want %q", route, tc.header, got, tc.challenge)
			}
			if log.Len() != 0 {
				t.Errorf("%s logged: %s", route, log)
			}
		}
	}
}

// TestCompatibleNeedsToken: the compatible routes that need login answer
// the documented 401 without a token. The Service is a zero one: with no
// token, authentication refuses before any store is asked.
func TestCompatibleNeedsToken(t *testing.T) {
	for _, route := range []string{
		"POST /user/logout",
		"GET /user/me",
		"GET /user/1",
		"GET /user/info/1",
		"POST /blog",
		"GET /blog/1",
		"DELETE /blog/1",
		"PUT /blog/like/1",
		"GET /blog/likes/1",
		"GET /blog/of/me",
		"GET /blog/of/user?id=1",
		"GET /blog/of/follow?lastId=1",
		"PUT /follow/1/true",
		"GET /follow/or/not/1",
		"GET /follow/common/1",
		"GET /blog/abc",
		"PUT /follow/1/maybe",
	} {
		method, target, _ := strings.Cut(route, " ")
		s, log := testServer(t)
		s.Service = &feed.Service{}
		w := serve(s, method, target, "")
		if want := `{"success":false,"errorMsg":"login required"}` + "\n"; w.Code != 401 || w.Body.String() != want {
			t.Errorf("%s = %d %s, want 401 %s", route, w.Code, w.Body.String(), want)
		}
		checkJSONType(t, w)
		if log.Len() != 0 {
			t.Errorf("%s logged: %s", route, log)
		}
	}
}

// TestLoginBodyRefused: the login endpoints refuse a bad body in their own
// format before the Service is asked (there is none here).
func TestLoginBodyRefused(t *testing.T) {
	s, _ := testServer(t)
	w := serve(s, "POST", "/user/login", `{"phone":13800000000}`)
	if want := `{"success":false,"errorMsg":"field phone must be a string"}` + "\n"; w.Code != 200 || w.Body.String() != want {
		t.Errorf("POST /user/login = %d %s, want 200 %s", w.Code, w.Body.String(), want)
	}
	for _, path := range []string{"/v1/auth/login", "/v1/auth/code"} {
		w = serve(s, "POST", path, `{"phone":"13800000000","extra":1}`)
		if want := `{"error":{"code":"invalid","message":"unknown field \"extra\""}}` + "\n"; w.Code != 400 || w.Body.String() != want {
			t.Errorf("POST %s = %d %s, want 400 %s", path, w.Code, w.Body.String(), want)
		}
	}
}
