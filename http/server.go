// Package http serves feedd's HTTP API with the standard library mux: the
// compatible API of docs/API.md, in its envelope.
package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// MaxBody is the largest request body accepted, but for the server API's.
const MaxBody = 1 << 20

// ServerMaxBody is the largest body of a server API request (/v1/server/):
// a batch of 10,000 follows, its refs up to a few hundred bytes each.
const ServerMaxBody = 8 << 20

// bodyLimit is the largest body r may have.
func bodyLimit(r *http.Request) int64 {
	if strings.HasPrefix(r.URL.Path, serverPrefix) {
		return ServerMaxBody
	}
	return MaxBody
}

// Server holds what the handlers need.
type Server struct {
	Service *feed.Service
	Log     *slog.Logger
	// Health reports whether the server can serve (storage reachable).
	Health func(ctx context.Context) error
	// Streams serves GET /v1/timeline/stream (nil: not enabled).
	Streams *Streams
	// Ready are the checks of GET /readyz (a write to the database, Redis).
	Ready []ReadyCheck
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (see clientAddr).
	TrustedProxies []netip.Prefix
	// Extra routes mounted beside the API (benchmarks mount theirs here).
	Extra map[string]http.Handler
	// Observe is told of every request (metrics); nil: nobody is.
	Observe Observer
	// AccessLog, when set, gets one line per request (http/observe.go).
	AccessLog *slog.Logger
	// Shed is the admission control in front of every route (shed.go);
	// nil admits everything.
	Shed *Shed
	// Unavailable reports whether an error without a code is a dependency
	// out of reach for the moment (PostgreSQL restarting, SQLite locked by
	// another process or full: postgres.Unavailable, sqlite.Unavailable):
	// such errors are answered 503 unavailable with Retry-After, not 500
	// (outage.go); nil: none is.
	Unavailable func(error) bool
	// AllowedOrigins are the origins (scheme://host[:port]) trusted to
	// send unsafe cross-origin requests (guard.go, crossOrigin); every
	// other cross-origin request from a browser is refused with 403.
	AllowedOrigins []string
	// BodyTimeout bounds how long a request body may take to arrive
	// (DefaultBodyTimeout if zero); a slower one is answered 408.
	BodyTimeout time.Duration
	// BodyMemory bounds the memory of the request bodies being read or
	// held at once (DefaultBodyMemory if zero; body.go); past it, 503 with
	// Retry-After.
	BodyMemory int64
	// UploadTimeout bounds how long an upload's body may take to arrive
	// (DefaultUploadTimeout if zero; media.go); UploadDir is where it is
	// kept meanwhile (os.TempDir() if empty).
	UploadTimeout time.Duration
	UploadDir     string

	// SSO is the single sign-on of feedd's page (sso.go); nil: none.
	SSO SSO

	bodies *budget // BodyMemory's count, made by Handler
}

// Handler returns the HTTP handler of the whole API.
func (s *Server) Handler() http.Handler {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	s.bodies = newBudget(cmp.Or(s.BodyMemory, DefaultBodyMemory))
	return s.observe(s.routes())
}

// envelope is the body of every compatible response.
type envelope struct {
	Success  bool   `json:"success"`
	ErrorMsg string `json:"errorMsg,omitempty"`
	Data     any    `json:"data,omitempty"`
	Total    *int64 `json:"total,omitempty"`
}

func (s *Server) encode(w http.ResponseWriter, status int, v envelope) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.Log.Debug("write response", "error", err)
	}
}

func (s *Server) ok(w http.ResponseWriter, data any) {
	s.encode(w, http.StatusOK, envelope{Success: true, Data: data})
}

// statusOf maps an error code to the HTTP status of the compatible API:
// refusals are 200 with success:false; only login, body size and faults
// have statuses of their own.
var statusOf = map[string]int{
	feed.EINVALID:      http.StatusOK,
	feed.ENOTFOUND:     http.StatusOK,
	feed.EFORBIDDEN:    http.StatusOK,
	feed.ECONFLICT:     http.StatusOK,
	feed.EUNAUTHORIZED: http.StatusUnauthorized,
	feed.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	feed.EINTERNAL:     http.StatusInternalServerError,
	feed.ETOOMANY:      http.StatusOK,
	feed.EUNAVAILABLE:  http.StatusServiceUnavailable,
	feed.EBUSY:         http.StatusServiceUnavailable,
}

// fail answers err in the envelope. Internal errors (and codes without an
// answer) are logged with their detail and answered with a generic message,
// even when they are an *Error with a message of their own.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	err = s.outage(r, err)
	code := feed.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		code, status = feed.EINTERNAL, http.StatusInternalServerError
	}
	msg := feed.ErrorMessage(err)
	noteCode(r, code)
	if code == feed.EINTERNAL {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		msg = "internal error"
	}
	retryAfter(w, err)
	s.encode(w, status, envelope{ErrorMsg: msg})
}

// decode reads one JSON value into v. The body is already size-limited.
// Its text is checked first (see checkText): JSON decoding would replace
// invalid UTF-8 and lone surrogates with U+FFFD.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", tooLarge.Limit)
		}
		return err
	}
	if err := checkText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooLarge):
			return feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", bodyLimit(r))
		case errors.As(err, &typeErr) && typeErr.Field == "":
			// The body itself is not an object ([], "s", 1): no field to name.
			return feed.Errorf(feed.EINVALID, "request body must be a JSON object")
		case errors.As(err, &typeErr):
			return feed.Errorf(feed.EINVALID, "field %s must be a %s", typeErr.Field, jsonType(typeErr.Type.Kind().String()))
		case errors.Is(err, io.EOF):
			return feed.Errorf(feed.EINVALID, "request body must be a JSON object")
		}
		return feed.Errorf(feed.EINVALID, "request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", bodyLimit(r))
		}
		return feed.Errorf(feed.EINVALID, "request body must hold one JSON object")
	}
	return nil
}

func jsonType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	}
	return kind
}

// limitBody refuses bodies over their limit (bodyLimit) with 413.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUpload(r) {
			next.ServeHTTP(w, r) // its own limits (media.go)
			return
		}
		limit := bodyLimit(r)
		if r.ContentLength > limit {
			s.fail(w, r, feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// ---- input

// parseID parses a positive int64; name is used in the refusal.
func parseID(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, feed.Errorf(feed.EINVALID, "%s must be a positive integer", name)
	}
	return n, nil
}

// queryInt parses an optional non-negative int query parameter; absent or
// empty gives def (the client omits falsy values).
func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, feed.Errorf(feed.EINVALID, "%s must be a non-negative integer", name)
	}
	return int(n), nil
}

// ---- output

// UserDTO is the public view of a user.
type UserDTO struct {
	ID       int64  `json:"id"`
	NickName string `json:"nickName"`
	Icon     string `json:"icon"`
}

func userDTO(u *feed.User) UserDTO { return UserDTO{ID: u.ID, NickName: u.NickName, Icon: u.Icon} }

func userDTOs(us []*feed.User) []UserDTO {
	out := make([]UserDTO, len(us))
	for i, u := range us {
		out[i] = userDTO(u)
	}
	return out
}

// Blog is a post as the compatible API returns it.
type Blog struct {
	ID         int64  `json:"id"`
	ShopID     int64  `json:"shopId"`
	UserID     int64  `json:"userId"`
	Name       string `json:"name"`
	Icon       string `json:"icon"`
	IsLike     bool   `json:"isLike"`
	Title      string `json:"title"`
	Images     string `json:"images"`
	Content    string `json:"content"`
	Liked      int    `json:"liked"`
	Comments   int    `json:"comments"`
	CreateTime string `json:"createTime"`
	UpdateTime string `json:"updateTime"`
}

// timeLayout is RFC 3339 with milliseconds, which JavaScript's Date parses.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// EscapeContent renders user text as HTML that shows the text and nothing
// else: markup escaped, line breaks as <br>.
func EscapeContent(s string) string {
	s = html.EscapeString(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", "<br>")
}

// NewBlog renders a hydrated post.
func NewBlog(v feed.PostView) Blog {
	b := Blog{
		ID: v.ID, ShopID: v.ShopID, UserID: v.UserID, IsLike: v.IsLike,
		Title: v.Title, Images: v.Images, Content: EscapeContent(v.Content),
		Liked: v.Liked, Comments: v.Comments,
		CreateTime: v.CreatedAt.UTC().Format(timeLayout),
		UpdateTime: v.UpdatedAt.UTC().Format(timeLayout),
	}
	if v.Author != nil {
		b.Name, b.Icon = v.Author.NickName, v.Author.Icon
	}
	return b
}

func blogs(vs []feed.PostView) []Blog {
	out := make([]Blog, len(vs))
	for i, v := range vs {
		out[i] = NewBlog(v)
	}
	return out
}

// ScrollResult is one page of the follow feed.
type ScrollResult struct {
	List    []Blog `json:"list"`
	MinTime int64  `json:"minTime"`
	Offset  int    `json:"offset"`
}
