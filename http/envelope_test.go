package http

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

// allCodes is every error code of error.go at the root.
var allCodes = []string{
	feed.ECONFLICT, feed.EINTERNAL, feed.EINVALID, feed.ENOTFOUND,
	feed.EUNAUTHORIZED, feed.EFORBIDDEN, feed.ETOOLARGE, feed.ETOOMANY, feed.EUNAVAILABLE, feed.EBUSY,
}

// testServer returns a Server with no Service, whose log goes to the
// returned buffer (JSON lines, debug level and up).
func testServer(t *testing.T) (*Server, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	return &Server{Log: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}, &log
}

func checkJSONType(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q, want application/json; charset=utf-8", ct)
	}
}

func TestEnvelopeSuccess(t *testing.T) {
	total := int64(0)
	for _, tc := range []struct {
		name string
		data any
		env  *envelope // nil: s.ok(data)
		want string
	}{
		// A bare success is {"success":true}: null fields are left out.
		{name: "no data", data: nil, want: `{"success":true}`},
		// Falsy data must still be sent: /follow/or/not answers false, and
		// the web client reads a missing data as "nothing more".
		{name: "false", data: false, want: `{"success":true,"data":false}`},
		{name: "zero", data: 0, want: `{"success":true,"data":0}`},
		{name: "empty string", data: "", want: `{"success":true,"data":""}`},
		{name: "empty list", data: []UserDTO{}, want: `{"success":true,"data":[]}`},
		{name: "token", data: "abc", want: `{"success":true,"data":"abc"}`},
		{name: "user", data: UserDTO{ID: 7, NickName: "n", Icon: "/i.png"},
			want: `{"success":true,"data":{"id":7,"nickName":"n","icon":"/i.png"}}`},
		{name: "scroll", data: ScrollResult{List: []Blog{}, MinTime: 5, Offset: 1},
			want: `{"success":true,"data":{"list":[],"minTime":5,"offset":1}}`},
		// total is a pointer: a zero total is still sent.
		{name: "total zero", env: &envelope{Success: true, Data: []int{}, Total: &total},
			want: `{"success":true,"data":[],"total":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := testServer(t)
			w := httptest.NewRecorder()
			if tc.env != nil {
				s.encode(w, http.StatusOK, *tc.env)
			} else {
				s.ok(w, tc.data)
			}
			if w.Code != http.StatusOK {
				t.Errorf("status = %d, want 200", w.Code)
			}
			checkJSONType(t, w)
			if got := w.Body.String(); got != tc.want+"\n" {
				t.Errorf("body = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestStatusTables pins the one table per API that maps a code to its status.
func TestStatusTables(t *testing.T) {
	// API.md: refusals are 200 with success:false; login 401, body 413, faults
	// 500; a dependency out of reach 503, as load shedding (docs/API.md).
	compatible := map[string]int{
		feed.ECONFLICT:     200,
		feed.EINTERNAL:     500,
		feed.EINVALID:      200,
		feed.ENOTFOUND:     200,
		feed.EUNAUTHORIZED: 401,
		feed.EFORBIDDEN:    200,
		feed.ETOOLARGE:     413,
		feed.ETOOMANY:      200,
		feed.EUNAVAILABLE:  503,
		feed.EBUSY:         503,
	}
	// openapi.json: the responses Invalid ... Internal.
	native := map[string]int{
		feed.ECONFLICT:     409,
		feed.EINTERNAL:     500,
		feed.EINVALID:      400,
		feed.ENOTFOUND:     404,
		feed.EUNAUTHORIZED: 401,
		feed.EFORBIDDEN:    403,
		feed.ETOOLARGE:     413,
		feed.ETOOMANY:      429,
		feed.EBUSY:         503,
		feed.EUNAVAILABLE:  503,
	}
	for _, code := range allCodes {
		if got, ok := statusOf[code]; !ok || got != compatible[code] {
			t.Errorf("statusOf[%s] = %d, %v; want %d", code, got, ok, compatible[code])
		}
		if got, ok := v1Status[code]; !ok || got != native[code] {
			t.Errorf("v1Status[%s] = %d, %v; want %d", code, got, ok, native[code])
		}
	}
	if len(statusOf) != len(allCodes) || len(v1Status) != len(allCodes) {
		t.Errorf("tables have %d and %d codes, want %d: a code without a documented answer", len(statusOf), len(v1Status), len(allCodes))
	}
}

// TestFailEachCode answers an *Error of every code in both formats.
func TestFailEachCode(t *testing.T) {
	for _, code := range allCodes {
		t.Run(code, func(t *testing.T) {
			const msg = `lastId must be a positive <integer> & "more"`
			err := feed.Errorf(code, "%s", msg)
			r := httptest.NewRequest("GET", "/x", nil)

			// Compatible envelope.
			s, log := testServer(t)
			w := httptest.NewRecorder()
			s.fail(w, r, err)
			wantMsg := msg
			if code == feed.EINTERNAL {
				wantMsg = "internal error"
			}
			if w.Code != statusOf[code] {
				t.Errorf("compatible status = %d, want %d", w.Code, statusOf[code])
			}
			checkJSONType(t, w)
			if got, want := w.Body.String(), envelopeJSON(t, wantMsg); got != want {
				t.Errorf("compatible body = %s, want %s", got, want)
			}
			checkLogged(t, log, code, msg)

			// Native error body.
			s, log = testServer(t)
			w = httptest.NewRecorder()
			s.v1Fail(w, r, err)
			if w.Code != v1Status[code] {
				t.Errorf("native status = %d, want %d", w.Code, v1Status[code])
			}
			checkJSONType(t, w)
			// SetEscapeHTML(false): the message goes out as written.
			want := fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`+"\n", code, wantMsg)
			if got := w.Body.String(); got != want {
				t.Errorf("native body = %s, want %s", got, want)
			}
			challenge := w.Header().Get("WWW-Authenticate")
			if code == feed.EUNAUTHORIZED && challenge != `Bearer realm="feedd"` {
				t.Errorf("native 401 WWW-Authenticate = %q, want a Bearer challenge", challenge)
			} else if code != feed.EUNAUTHORIZED && challenge != "" {
				t.Errorf("native %d has WWW-Authenticate %q", w.Code, challenge)
			}
			checkLogged(t, log, code, msg)
		})
	}
}

// envelopeJSON is the compatible refusal body of msg, as encoding/json
// writes it (HTML characters escaped).
func envelopeJSON(t *testing.T, msg string) string {
	t.Helper()
	// %q and JSON agree on these ASCII messages except for the HTML escapes.
	body := fmt.Sprintf(`{"success":false,"errorMsg":%q}`, msg)
	return strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`).Replace(body) + "\n"
}

// checkLogged: only internal errors are logged, at error level, with detail.
func checkLogged(t *testing.T, log *bytes.Buffer, code, detail string) {
	t.Helper()
	logged := log.String()
	if code == feed.EINTERNAL || code == "" {
		if !strings.Contains(logged, `"level":"ERROR"`) || !strings.Contains(logged, strings.ReplaceAll(detail, `"`, `\"`)) {
			t.Errorf("internal error not logged with its detail %q: %s", detail, logged)
		}
	} else if logged != "" {
		t.Errorf("%s refusal logged: %s", code, logged)
	}
}

// TestFailInternalNeverLeaks: a fault's detail goes to the log only.
func TestFailInternalNeverLeaks(t *testing.T) {
	const secret = "dial tcp 10.0.0.3:5432: password authentication failed for user feedd"
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"plain error", errors.New(secret)},
		{"wrapped plain error", fmt.Errorf("load user: %w", errors.New(secret))},
		{"*Error with code internal", feed.Errorf(feed.EINTERNAL, "%s", secret)},
		{"wrapped *Error with code internal", fmt.Errorf("publish: %w", feed.Errorf(feed.EINTERNAL, "%s", secret))},
		{"*Error with an unknown code", &feed.Error{Code: "bogus", Message: secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/blog", nil)

			s, log := testServer(t)
			w := httptest.NewRecorder()
			s.fail(w, r, tc.err)
			if w.Code != http.StatusInternalServerError {
				t.Errorf("compatible status = %d, want 500", w.Code)
			}
			if got, want := w.Body.String(), `{"success":false,"errorMsg":"internal error"}`+"\n"; got != want {
				t.Errorf("compatible body = %s, want %s", got, want)
			}
			checkLogged(t, log, "", secret)

			s, log = testServer(t)
			w = httptest.NewRecorder()
			s.v1Fail(w, r, tc.err)
			if w.Code != http.StatusInternalServerError {
				t.Errorf("native status = %d, want 500", w.Code)
			}
			if got, want := w.Body.String(), `{"error":{"code":"internal","message":"internal error"}}`+"\n"; got != want {
				t.Errorf("native body = %s, want %s", got, want)
			}
			checkLogged(t, log, "", secret)
		})
	}
}

// TestFailWrappedCode: a wrapped *Error keeps its code and message.
func TestFailWrappedCode(t *testing.T) {
	err := fmt.Errorf("follow: %w", feed.Errorf(feed.EFORBIDDEN, "you may not follow yourself"))
	r := httptest.NewRequest("PUT", "/follow/1/true", nil)
	s, _ := testServer(t)

	w := httptest.NewRecorder()
	s.fail(w, r, err)
	if got, want := w.Body.String(), `{"success":false,"errorMsg":"you may not follow yourself"}`+"\n"; w.Code != 200 || got != want {
		t.Errorf("compatible = %d %s, want 200 %s", w.Code, got, want)
	}
	w = httptest.NewRecorder()
	s.v1Fail(w, r, err)
	if got, want := w.Body.String(), `{"error":{"code":"forbidden","message":"you may not follow yourself"}}`+"\n"; w.Code != 403 || got != want {
		t.Errorf("native = %d %s, want 403 %s", w.Code, got, want)
	}
}

// TestV1FailKeepsChallenge: a challenge set before v1Fail (invalid_token,
// invalid_request) is not replaced by the bare one.
func TestV1FailKeepsChallenge(t *testing.T) {
	s, _ := testServer(t)
	w := httptest.NewRecorder()
	const challenge = `Bearer realm="feedd", error="invalid_token"`
	w.Header().Set("WWW-Authenticate", challenge)
	s.v1Fail(w, httptest.NewRequest("GET", "/v1/me", nil), feed.Errorf(feed.EUNAUTHORIZED, "log in again"))
	if got := w.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != challenge {
		t.Errorf("WWW-Authenticate = %q, want only %q", got, challenge)
	}
}
