package http

import (
	"net/http/httptest"
	"testing"

	feed "github.com/feedd/feedd"
)

// checkRefusal: err is an EINVALID *Error with exactly msg.
func checkRefusal(t *testing.T, err error, msg string) {
	t.Helper()
	if code := feed.ErrorCode(err); code != feed.EINVALID {
		t.Errorf("err = %v (code %q), want code invalid", err, code)
		return
	}
	if got := feed.ErrorMessage(err); got != msg {
		t.Errorf("message = %q, want %q", got, msg)
	}
}

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // 0: refused
	}{
		{"1", 1},
		{"42", 42},
		{"00012", 12},
		{"9223372036854775807", 1<<63 - 1},
		{"+1", 1}, // strconv's optional sign: numeric and positive
		{"", 0},
		{"0", 0},
		{"-0", 0},
		{"-1", 0},
		{"-9223372036854775808", 0},
		{"9223372036854775808", 0}, // overflow
		{"99999999999999999999999999", 0},
		{"abc", 0},
		{"1a", 0},
		{"1.0", 0},
		{"1e3", 0},
		{"0x10", 0},
		{"0b1", 0},
		{"1_000", 0},
		{" 1", 0},
		{"1 ", 0},
		{"\t1", 0},
		{"1\n", 0},
		{"١", 0}, // ARABIC-INDIC DIGIT ONE
		{"１", 0}, // FULLWIDTH DIGIT ONE
	} {
		got, err := parseID("lastId", tc.in)
		if tc.want == 0 {
			if got != 0 {
				t.Errorf("parseID(%q) = %d, want 0 with the error", tc.in, got)
			}
			checkRefusal(t, err, "lastId must be a positive integer")
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestQueryInt: the compatible API's optional non-negative integers. The
// client omits falsy values, so absent and empty both mean the default.
func TestQueryInt(t *testing.T) {
	const def = 7
	for _, tc := range []struct {
		q    string // raw query, as on the wire: "+" is a space, "%2B" a plus
		want int    // -1: refused
	}{
		{"", def},
		{"offset=", def},
		{"other=3", def},
		{"offset=0", 0},
		{"offset=-0", 0},
		{"offset=1", 1},
		{"offset=2147483647", 1<<31 - 1},
		{"offset=%2B1", 1},       // "+1"
		{"offset=1&offset=x", 1}, // the first value counts
		{"offset=-1", -1},
		{"offset=2147483648", -1}, // over int32
		{"offset=-2147483649", -1},
		{"offset=9223372036854775808", -1},
		{"offset=abc", -1},
		{"offset=1.5", -1},
		{"offset=1e2", -1},
		{"offset=0x10", -1},
		{"offset=+1", -1},   // "+" in a query is a space: " 1"
		{"offset=%201", -1}, // " 1"
		{"offset=1%20", -1}, // "1 "
		{"offset=x&offset=1", -1},
	} {
		got, err := queryInt(httptest.NewRequest("GET", "/blog/of/follow?"+tc.q, nil), "offset", def)
		if tc.want < 0 {
			if got != 0 {
				t.Errorf("%q: got %d, want 0 with the error", tc.q, got)
			}
			checkRefusal(t, err, "offset must be a non-negative integer")
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.q, got, err, tc.want)
		}
	}
}

// TestCurrent: a page number from 1, absent meaning 1.
func TestCurrent(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want int // 0: refused
	}{
		{"", 1},
		{"current=", 1},
		{"current=1", 1},
		{"current=3", 3},
		{"current=0", 0},
		{"current=-1", 0},
		{"current=x", 0},
		{"current=99999999999", 0},
	} {
		got, err := current(httptest.NewRequest("GET", "/blog/hot?"+tc.q, nil))
		if tc.want == 0 {
			checkRefusal(t, err, "current must be a page number from 1")
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.q, got, err, tc.want)
		}
	}
}

// TestQueryOne: the native API refuses a parameter sent twice or empty.
func TestQueryOne(t *testing.T) {
	for _, tc := range []struct {
		q      string
		want   string
		sent   bool
		refuse string // the refusal's message, "" for none
	}{
		{q: "", sent: false},
		{q: "other=1", sent: false},
		{q: "Cursor=1", sent: false}, // names are case-sensitive
		{q: "cursor=abc", want: "abc", sent: true},
		{q: "cursor=a%20b", want: "a b", sent: true},
		{q: "cursor=+", want: " ", sent: true}, // not empty: a space
		{q: "cursor=%2B1", want: "+1", sent: true},
		{q: "cursor=", sent: true, refuse: "cursor must not be empty"},
		{q: "cursor", sent: true, refuse: "cursor must not be empty"},
		{q: "cursor=a&cursor=b", sent: true, refuse: "cursor must be given at most once"},
		{q: "cursor=a&cursor=a", sent: true, refuse: "cursor must be given at most once"},
		{q: "cursor=&cursor=", sent: true, refuse: "cursor must be given at most once"},
		{q: "cursor=a&x=1&cursor=", sent: true, refuse: "cursor must be given at most once"},
	} {
		got, sent, err := queryOne(httptest.NewRequest("GET", "/v1/timeline?"+tc.q, nil), "cursor")
		if sent != tc.sent {
			t.Errorf("%q: sent = %v, want %v", tc.q, sent, tc.sent)
		}
		if tc.refuse != "" {
			if got != "" {
				t.Errorf("%q: value %q with a refusal", tc.q, got)
			}
			checkRefusal(t, err, tc.refuse)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.q, got, err, tc.want)
		}
	}
}

// TestQueryLimit: absent is 0 (the service's default), else 1..max.
func TestQueryLimit(t *testing.T) {
	const max = 100
	const refusal = "limit must be an integer from 1 to 100"
	for _, tc := range []struct {
		q      string
		want   int
		refuse string
	}{
		{q: "", want: 0},
		{q: "cursor=x", want: 0},
		{q: "limit=1", want: 1},
		{q: "limit=100", want: 100},
		{q: "limit=050", want: 50},
		{q: "limit=%2B5", want: 5}, // "+5"
		{q: "limit=", refuse: "limit must not be empty"},
		{q: "limit=1&limit=2", refuse: "limit must be given at most once"},
		{q: "limit=0", refuse: refusal},
		{q: "limit=-1", refuse: refusal},
		{q: "limit=101", refuse: refusal},
		{q: "limit=2147483648", refuse: refusal},
		{q: "limit=9223372036854775808", refuse: refusal},
		{q: "limit=99999999999999999999999", refuse: refusal},
		{q: "limit=ten", refuse: refusal},
		{q: "limit=1.0", refuse: refusal},
		{q: "limit=1e1", refuse: refusal},
		{q: "limit=0x10", refuse: refusal},
		{q: "limit=+5", refuse: refusal}, // " 5"
		{q: "limit=5%20", refuse: refusal},
	} {
		got, err := queryLimit(httptest.NewRequest("GET", "/v1/timeline?"+tc.q, nil), max)
		if tc.refuse != "" {
			if got != 0 {
				t.Errorf("%q: got %d with a refusal", tc.q, got)
			}
			checkRefusal(t, err, tc.refuse)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.q, got, err, tc.want)
		}
	}
}

// TestQueryAfter: a user list cursor is a positive user id.
func TestQueryAfter(t *testing.T) {
	const refusal = "cursor is not one this server returned"
	for _, tc := range []struct {
		q      string
		want   int64
		refuse string
	}{
		{q: "", want: 0},
		{q: "cursor=1", want: 1},
		{q: "cursor=9223372036854775807", want: 1<<63 - 1},
		{q: "cursor=", refuse: "cursor must not be empty"},
		{q: "cursor=1&cursor=1", refuse: "cursor must be given at most once"},
		{q: "cursor=0", refuse: refusal},
		{q: "cursor=-5", refuse: refusal},
		{q: "cursor=9223372036854775808", refuse: refusal},
		{q: "cursor=abc", refuse: refusal},
		{q: "cursor=0x10", refuse: refusal},
		{q: "cursor=+1", refuse: refusal},
	} {
		got, err := queryAfter(httptest.NewRequest("GET", "/v1/blocks?"+tc.q, nil))
		if tc.refuse != "" {
			checkRefusal(t, err, tc.refuse)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.q, got, err, tc.want)
		}
	}
}

// TestTokens: the compatible API takes the raw header or a Bearer token;
// the native one only a Bearer token, and tells "none" from "malformed".
func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		header     string
		compatible string
		native     string
		sent       bool
	}{
		{"", "", "", false},
		{"   ", "", "", false},
		{"abc", "abc", "", true},
		{"Bearer abc", "abc", "abc", true},
		{"bearer abc", "abc", "abc", true},
		{"BEARER  abc ", "abc", "abc", true},
		{" Bearer abc", "abc", "abc", true},
		{"Bearer", "Bearer", "", true},
		{"Bearer ", "Bearer", "", true}, // trimmed to "Bearer" first
		{"Bearer\tabc", "Bearer\tabc", "", true},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if got := token(r); got != tc.compatible {
			t.Errorf("token(%q) = %q, want %q", tc.header, got, tc.compatible)
		}
		if got, sent := bearer(r); got != tc.native || sent != tc.sent {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", tc.header, got, sent, tc.native, tc.sent)
		}
	}
}
