package http

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	feed "github.com/feedd/feedd"
)

// FuzzScrollQuery: the compatible feed query (lastId, offset, size) never
// panics, refuses only with EINVALID, and what it accepts is what the query
// says: a positive lastId, offsets and sizes that are non-negative.
func FuzzScrollQuery(f *testing.F) {
	f.Add("lastId=1700000000000&offset=0")
	f.Add("lastId=1&offset=3&size=10")
	f.Add("lastId=-1&offset=x&size=")
	f.Add("lastId=9223372036854775808&size=0")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/blog/of/follow", nil)
		r.URL.RawQuery = query
		cur, size, err := scrollQuery(r)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("scrollQuery(%q) = %v, want EINVALID", query, err)
			}
			return
		}
		q := r.URL.Query()
		if cur.LastID <= 0 || cur.Offset < 0 || size < 0 {
			t.Fatalf("scrollQuery(%q) = %+v size %d: out of range", query, cur, size)
		}
		if q.Has("size") && size == 0 {
			t.Fatalf("scrollQuery(%q): a given size of 0 was accepted", query)
		}
		if !q.Has("lastId") {
			t.Fatalf("scrollQuery(%q): accepted without lastId", query)
		}
		// What is accepted goes on to the service's own checks, which must
		// not panic either.
		_ = cur.Validate()
		_ = feed.ValidPageSize(size)
	})
}

// FuzzCheckText: checkText accepts exactly the bodies whose JSON decoding
// keeps every character: valid UTF-8 and no lone surrogate escape.
func FuzzCheckText(f *testing.F) {
	f.Add([]byte(`{"title":"ok"}`))
	f.Add([]byte(`{"title":"\ud83d\ude00"}`))
	f.Add([]byte(`{"title":"\ud800"}`))
	f.Add([]byte("{\"title\":\"\xff\"}"))
	f.Add([]byte(`{"title":"\\ud800"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkText(body)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("checkText = %v, want EINVALID", err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
		var s string
		if json.Unmarshal(body, &s) == nil && strings.ContainsRune(s, utf8.RuneError) && !strings.Contains(string(body), "\ufffd") && !strings.Contains(strings.ToLower(string(body)), `\ufffd`) {
			t.Fatalf("accepted %q, which decodes to U+FFFD", body)
		}
	})
}
