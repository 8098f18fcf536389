package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// v1Client drives the native API as a client does and checks every
// exchange against the OpenAPI document the server serves.
type v1Client struct {
	t   testing.TB
	s   *server
	api *openAPI
	hc  *http.Client // nil: http.DefaultClient
}

// newV1Client fetches /v1/openapi.json from s and parses it.
func newV1Client(t testing.TB, s *server) *v1Client {
	t.Helper()
	resp, err := http.Get(s.base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", resp.StatusCode, raw)
	}
	api, err := parseOpenAPI(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := &v1Client{t: t, s: s, api: api}
	if err := api.checkResponse("GET", "/v1/openapi.json", resp.StatusCode, resp.Header, raw); err != nil {
		t.Fatal(err)
	}
	return c
}

// v1Reply is one native response.
type v1Reply struct {
	Status int
	Header http.Header
	Raw    []byte
}

// apiError is the native error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

var placeholder = regexp.MustCompile(`\{[^}]*\}`)

// send performs method on tmpl, a path template of the document (with
// {name} placeholders filled from args in order) optionally followed by a
// literal query. token "" sends no Authorization header, "header:X" sends
// X as is, any other token is sent as a bearer token. body is nil, a
// string or []byte sent raw, an io.Reader sent chunked, or a value sent as
// JSON (and then, when the request succeeds, checked against the
// documented request body). The response is checked against the document;
// a path or method the document does not have must answer 404.
func (c *v1Client) send(method, tmpl, token string, body any, args ...any) (*v1Reply, error) {
	pathTmpl, query, _ := strings.Cut(tmpl, "?")
	i := 0
	path := placeholder.ReplaceAllStringFunc(pathTmpl, func(string) string {
		i++
		if i > len(args) {
			return "MISSING"
		}
		return fmt.Sprint(args[i-1])
	})
	if query != "" {
		path += "?" + query
	}
	var rd io.Reader
	var sent []byte // a JSON value this client encoded
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = io.NopCloser(b) // unknown length: sent chunked
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		sent, rd = j, bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.s.base+path, rd)
	if err != nil {
		return nil, err
	}
	switch {
	case token == "":
	case strings.HasPrefix(token, "header:"):
		req.Header.Set("Authorization", strings.TrimPrefix(token, "header:"))
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.hc
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	r := &v1Reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	docTmpl := pathTmpl
	if _, err := c.api.operation(method, pathTmpl); err != nil {
		docTmpl = c.api.match(method, strings.SplitN(path, "?", 2)[0]) // "": an unknown route
	}
	if err := c.api.checkResponse(method, docTmpl, r.Status, r.Header, raw); err != nil {
		return r, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if sent != nil && r.Status < 300 {
		if err := c.api.checkRequest(method, pathTmpl, sent); err != nil {
			return r, err
		}
	}
	return r, nil
}

// want performs a request that must answer status, and decodes the body
// into out (if not nil).
func (c *v1Client) want(status int, method, tmpl, token string, body, out any, args ...any) *v1Reply {
	c.t.Helper()
	r, err := c.send(method, tmpl, token, body, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	if r.Status != status {
		c.t.Fatalf("%s %s %v: status %d, want %d: %s", method, tmpl, args, r.Status, status, r.Raw)
	}
	if out != nil {
		if err := json.Unmarshal(r.Raw, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, tmpl, err, r.Raw)
		}
	}
	return r
}

// refused performs a request that must fail with status and error code.
func (c *v1Client) refused(status int, code, method, tmpl, token string, body any, args ...any) {
	c.t.Helper()
	r, err := c.send(method, tmpl, token, body, args...)
	if err != nil {
		c.t.Error(err)
		return
	}
	var e apiError
	if r.Status != status || json.Unmarshal(r.Raw, &e) != nil || e.Error.Code != code || e.Error.Message == "" {
		c.t.Errorf("%s %s %v %.80v: got %d %s, want %d %s", method, tmpl, args, body, r.Status, r.Raw, status, code)
		return
	}
	if status == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
		c.t.Errorf("%s %s: 401 without a Bearer challenge: %q", method, tmpl, r.Header.Get("WWW-Authenticate"))
	}
}

// login logs phone in through /v1/auth, reading the code from the log.
func (c *v1Client) login(phone string) string {
	c.t.Helper()
	c.want(204, "POST", "/v1/auth/code", "", map[string]string{"phone": phone}, nil)
	rec := c.s.logs.wait(c.t, "login code", map[string]string{"phone": phone})
	var out struct{ Token string }
	c.want(201, "POST", "/v1/auth/login", "", map[string]string{"phone": phone, "code": rec["code"].(string)}, &out)
	if out.Token == "" {
		c.t.Fatal("login returned no token")
	}
	return out.Token
}

func (c *v1Client) me(token string) apiMe {
	c.t.Helper()
	var me apiMe
	c.want(200, "GET", "/v1/me", token, nil, &me)
	return me
}

// apiUser, apiMe, apiProfile, apiPost and apiPage are the native
// resources as a client decodes them.
type apiUser struct {
	ID       int64  `json:"id"`
	NickName string `json:"nick_name"`
	Icon     string `json:"icon"`
}

type apiMe struct {
	apiUser
	Phone          string    `json:"phone"`
	FollowerCount  int       `json:"follower_count"`
	FollowingCount int       `json:"following_count"`
	CreatedAt      time.Time `json:"created_at"`
}

type apiProfile struct {
	apiUser
	FollowerCount  int  `json:"follower_count"`
	FollowingCount int  `json:"following_count"`
	FollowedByMe   bool `json:"followed_by_me"`
}

type apiPost struct {
	ID        int64      `json:"id"`
	Author    apiUser    `json:"author"`
	Title     string     `json:"title"`
	Content   string     `json:"content"`
	Images    []string   `json:"images"`
	Media     []apiMedia `json:"media"`
	ShopID    *int64     `json:"shop_id"`
	LikeCount int        `json:"like_count"`
	LikedByMe bool       `json:"liked_by_me"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// CommentCount and CommentPolicy: comments.
	CommentCount  int    `json:"comment_count"`
	CommentPolicy string `json:"comment_policy"`
	// Reposts and quotes.
	RepostCount  int    `json:"repost_count"`
	QuoteCount   int    `json:"quote_count"`
	RepostedByMe bool   `json:"reposted_by_me"`
	QuotePolicy  string `json:"quote_policy"`
	QuoteOf      *int64 `json:"quote_of"`
	RepostedBy   *struct {
		User   apiUser   `json:"user"`
		At     time.Time `json:"at"`
		Others int       `json:"others"`
	} `json:"reposted_by"`
	Quote *struct {
		ID    int64    `json:"id"`
		State string   `json:"state"`
		Post  *apiPost `json:"post"`
	} `json:"quote"`
}

// score is the post's feed score: its creation millisecond.
func (p apiPost) score() int64 { return p.CreatedAt.UnixMilli() }

type apiPage[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}
