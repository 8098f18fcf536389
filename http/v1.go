package http

// The native API under /v1, for new clients: REST resources in snake_case
// JSON, HTTP statuses for outcomes, errors as {"error":{"code","message"}}
// and opaque keyset cursors. Its contract is openapi.json, served at
// GET /v1/openapi.json; the end-to-end tests check every response against it.

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	feed "github.com/feedd/feedd"
)

// openAPI is the OpenAPI 3.1 document of /v1.
//
//go:embed openapi.json
var openAPI []byte

// v1Status maps an error code to the status of a native response.
var v1Status = map[string]int{
	feed.EINVALID:      http.StatusBadRequest,
	feed.EUNAUTHORIZED: http.StatusUnauthorized,
	feed.EFORBIDDEN:    http.StatusForbidden,
	feed.ENOTFOUND:     http.StatusNotFound,
	feed.ECONFLICT:     http.StatusConflict,
	feed.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	feed.EINTERNAL:     http.StatusInternalServerError,
	feed.ETOOMANY:      http.StatusTooManyRequests,
	feed.EBUSY:         http.StatusServiceUnavailable,
	feed.EUNAVAILABLE:  http.StatusServiceUnavailable,
}

// v1Error is the body of every native error response.
type v1Error struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *Server) v1JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // text goes out as stored: clients render it
	if err := enc.Encode(v); err != nil {
		s.Log.Debug("write response", "error", err)
	}
}

// v1Fail answers err with its status and code. Internal errors are logged
// with their detail and answered with a generic message.
func (s *Server) v1Fail(w http.ResponseWriter, r *http.Request, err error) {
	err = s.outage(r, err)
	code := feed.ErrorCode(err)
	status, ok := v1Status[code]
	if !ok {
		code, status = feed.EINTERNAL, http.StatusInternalServerError
	}
	var body v1Error
	body.Error.Code, body.Error.Message = code, feed.ErrorMessage(err)
	noteCode(r, code)
	if code == feed.EINTERNAL {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		body.Error.Message = "internal error"
	}
	retryAfter(w, err)
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="feedd"`)
	}
	s.v1JSON(w, status, body)
}

// v1LimitBody refuses a /v1 request whose declared body is over MaxBody
// with a native 413, before limitBody would answer it in the compatible
// envelope. Bodies of unknown length are cut by limitBody's MaxBytesReader,
// and decode reports them as ETOOLARGE.
func (s *Server) v1LimitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit := bodyLimit(r); r.ContentLength > limit && strings.HasPrefix(r.URL.Path, "/v1/") && !isUpload(r) {
			s.v1Fail(w, r, feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", limit))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// v1Decode reads a request body that must be one JSON object with only the
// fields of v (a pointer to a struct): a misspelt field is a client bug
// worth a 400, not a silently ignored value.
func v1Decode(r *http.Request, v any) error {
	var raw json.RawMessage
	if err := decode(r, &raw); err != nil {
		return err
	}
	if b := bytes.TrimLeft(raw, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return feed.Errorf(feed.EINVALID, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return feed.Errorf(feed.EINVALID, "field %s must be %s", typeErr.Field, v1TypeName(typeErr.Type.Kind().String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return feed.Errorf(feed.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return feed.Errorf(feed.EINVALID, "request body is not valid JSON")
	}
	return nil
}

// v1DecodeOptional is v1Decode of a body the request may leave out (an
// empty body decodes to nothing).
func v1DecodeOptional(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return feed.Errorf(feed.ETOOLARGE, "request body must be at most %d bytes", MaxBody)
		}
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return v1Decode(r, v)
}

func v1TypeName(kind string) string {
	switch kind {
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "string":
		return "a string"
	}
	if jsonType(kind) == "number" {
		return "an integer"
	}
	return "a " + jsonType(kind)
}

// ---- handlers

func (s *Server) v1OpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(openAPI)
	})
}

func (s *Server) v1NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.v1Fail(w, r, feed.Errorf(feed.ENOTFOUND, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
}

func (s *Server) v1SendCode() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Phone string `json:"phone"`
		}
		err := v1Decode(r, &in)
		if err == nil {
			err = s.Service.SendCode(r.Context(), in.Phone)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) v1Login() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Phone string `json:"phone"`
			Code  string `json:"code"`
		}
		if err := v1Decode(r, &in); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		tok, err := s.Service.Login(r.Context(), in.Phone, in.Code)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusCreated, struct {
			Token string `json:"token"`
		}{tok})
	})
}

func (s *Server) v1Logout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := bearer(r)
		if err := s.Service.Logout(r.Context(), tok); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) v1Me() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.Service.User(r.Context(), userID(r))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1Me{
			V1User: v1User(u), Phone: u.Phone, City: u.City, Introduce: u.Introduce,
			FollowerCount: u.Fans, FollowingCount: u.Followee, CreatedAt: u.CreatedAt.UTC().Format(timeLayout),
		})
	})
}

func (s *Server) v1UserProfile() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.pathUser(r)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		var follows bool
		if u.ID != userID(r) {
			if follows, err = s.Service.IsFollowing(r.Context(), userID(r), u.ID); err != nil {
				s.v1Fail(w, r, err)
				return
			}
		}
		s.v1JSON(w, http.StatusOK, V1Profile{
			V1User: v1User(u), City: u.City, Introduce: u.Introduce,
			FollowerCount: u.Fans, FollowingCount: u.Followee, FollowedByMe: follows,
			CreatedAt: u.CreatedAt.UTC().Format(timeLayout),
		})
	})
}

// v1UserList serves a keyset page of a user list: the followers or
// followees of the {id} path user, or (with no {id}) the caller's mutes or
// blocks. The cursor is the id of the last user of the previous page.
func (s *Server) v1UserList(list feed.UserList) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := userID(r)
		var err error
		if r.PathValue("id") != "" {
			owner, err = parseID("id", r.PathValue("id"))
		}
		var after int64
		var limit int
		if err == nil {
			after, err = queryAfter(r)
		}
		if err == nil {
			limit, err = queryLimit(r, feed.MaxListLimit)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		us, next, err := s.Service.List(r.Context(), userID(r), owner, list, after, limit)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		page := V1Page[V1User]{Data: v1Users(us)}
		if next > 0 {
			c := strconv.FormatInt(next, 10)
			page.NextCursor = &c
		}
		s.v1JSON(w, http.StatusOK, page)
	})
}

// v1PostFields are the fields of a new post in a request body.
type v1PostFields struct {
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Images  []string `json:"images"`
	// MediaIDs are the caller's uploads to show (POST /v1/media).
	MediaIDs []int64 `json:"media_ids"`
	ShopID   *int64  `json:"shop_id"`
	// CommentPolicy is who may comment; absent or null: everyone.
	CommentPolicy *string `json:"comment_policy"`
	// QuoteOf makes the post a quote; QuotePolicy is who may quote it
	// (absent or null: everyone).
	QuoteOf     *int64  `json:"quote_of"`
	QuotePolicy *string `json:"quote_policy"`
}

// input checks the fields that are not the post's own rules
// (feed.PostInput.Validate) and returns the post's input.
func (in v1PostFields) input() (feed.PostInput, error) {
	for _, im := range in.Images {
		if strings.TrimSpace(im) == "" || strings.Contains(im, ",") {
			return feed.PostInput{}, feed.Errorf(feed.EINVALID, "images must be non-empty strings without commas")
		}
	}
	post := feed.PostInput{Title: in.Title, Content: in.Content, Images: strings.Join(in.Images, ","), MediaIDs: in.MediaIDs}
	if in.ShopID != nil {
		if *in.ShopID <= 0 {
			return feed.PostInput{}, feed.Errorf(feed.EINVALID, "shop_id must be a positive integer or null")
		}
		post.ShopID = *in.ShopID
	}
	if in.CommentPolicy != nil {
		p, err := feed.ParseCommentPolicy(*in.CommentPolicy)
		if err != nil {
			return feed.PostInput{}, err
		}
		post.CommentPolicy = p
	}
	return post, nil
}

func (s *Server) v1Publish() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in v1PostFields
		if err := v1Decode(r, &in); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		post, err := in.input()
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		if in.QuoteOf != nil {
			if *in.QuoteOf <= 0 {
				s.v1Fail(w, r, feed.Errorf(feed.EINVALID, "quote_of must be a positive integer or null"))
				return
			}
			post.QuoteOf = *in.QuoteOf
		}
		if in.QuotePolicy != nil {
			p, err := feed.ParseQuotePolicy(*in.QuotePolicy)
			if err != nil {
				s.v1Fail(w, r, err)
				return
			}
			post.QuotePolicy = p
		}
		p, err := s.Service.Publish(r.Context(), userID(r), post)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		vs, err := s.Service.Hydrate(r.Context(), userID(r), []*feed.Post{p})
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.Header().Set("Location", fmt.Sprintf("/v1/posts/%d", p.ID))
		s.v1JSON(w, http.StatusCreated, NewV1Post(vs[0]))
	})
}

func (s *Server) v1Post() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		v, err := s.Service.Post(r.Context(), userID(r), id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, NewV1Post(*v))
	})
}

// v1Action serves a request that names a resource by its {id} and answers
// 204 when do succeeds.
func (s *Server) v1Action(do func(ctx context.Context, userID, id int64) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = do(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) v1DeletePost() http.Handler { return s.v1Action(s.Service.DeletePost) }

func (s *Server) v1SetLike(like bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		return s.Service.SetLike(ctx, userID, id, like)
	})
}

// v1Follow follows or unfollows; a follow may set show_reposts, whether
// the caller's timeline shows the user's reposts (docs/API.md, "Reposts
// and quotes").
func (s *Server) v1Follow(follow bool) http.Handler {
	if !follow {
		return s.v1Action(func(ctx context.Context, userID, id int64) error {
			return s.Service.Follow(ctx, userID, id, false)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ShowReposts *bool `json:"show_reposts"`
		}
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = v1DecodeOptional(r, &in)
		}
		if err == nil {
			err = s.Service.Follow(r.Context(), userID(r), id, true)
		}
		if err == nil && in.ShowReposts != nil {
			err = s.Service.SetShowReposts(r.Context(), userID(r), id, *in.ShowReposts)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// v1Repost reposts or undoes the caller's repost.
func (s *Server) v1Repost(repost bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		return s.Service.Repost(ctx, userID, id, repost)
	})
}

func (s *Server) v1Mute(mute bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		return s.Service.Mute(ctx, userID, id, mute)
	})
}

// v1Block blocks or unblocks; one that changed something ends the caller's
// live streams (endStreamsOf), never the other user's.
func (s *Server) v1Block(block bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		changed, err := s.Service.Block(ctx, userID, id, block)
		if changed {
			s.endStreamsOf(ctx, userID)
		}
		return err
	})
}

func (s *Server) v1Likers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		us, err := s.Service.Likers(r.Context(), userID(r), id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1Page[V1User]{Data: v1Users(us)})
	})
}

// v1Timeline serves a page of the caller's follow feed under the opaque
// keyset cursor, with the next page's URL in a Link header; with
// order=ranked, the ranked timeline (rank.go).
//
// It authenticates the request itself, as v1RequireUser would: a valid
// chronological request is served by TimelineAs (the session and the first
// inbox page in one round trip), any other goes through v1RequireUser.
func (s *Server) v1Timeline() http.Handler {
	authed := s.v1RequireUser(s.v1TimelineOf(func(r *http.Request, after *feed.Cursor, limit int) (int64, *feed.Page, error) {
		page, err := s.Service.Timeline(r.Context(), userID(r), after, limit)
		return userID(r), page, err
	}))
	direct := s.v1TimelineOf(func(r *http.Request, after *feed.Cursor, limit int) (int64, *feed.Page, error) {
		tok, _ := bearer(r)
		return s.Service.TimelineAs(r.Context(), tok, after, limit)
	})
	around := s.v1RequireUser(s.v1TimelineAround())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("around") || q.Has("before") {
			around.ServeHTTP(w, r) // around.go
			return
		}
		tok, _ := bearer(r)
		limit, err := queryLimit(r, feed.MaxTimelineLimit)
		if err == nil {
			_, err = feed.TimelineLimit(limit)
		}
		ranked, _, oerr := timelineOrder(r)
		_, cerr := queryCursor(r)
		if tok == "" || ranked || cmp.Or(err, oerr, cerr) != nil {
			authed.ServeHTTP(w, r) // refusals keep their order: the token first
			return
		}
		direct.ServeHTTP(w, r)
	})
}

// v1TimelineOf is the handler of GET /v1/timeline reading the
// chronological page with read, which returns the caller's id too (0 when
// the request failed to authenticate).
func (s *Server) v1TimelineOf(read func(r *http.Request, after *feed.Cursor, limit int) (int64, *feed.Page, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := queryLimit(r, feed.MaxTimelineLimit)
		if err == nil {
			limit, err = feed.TimelineLimit(limit)
		}
		ranked, explain, oerr := timelineOrder(r)
		if err = cmp.Or(err, oerr); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		if ranked {
			s.v1RankedTimeline(w, r, limit, explain)
			return
		}
		after, err := queryCursor(r)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		id, page, err := read(r, after, limit)
		if id == 0 && err != nil {
			s.v1FailAuth(w, r, err)
			return
		}
		r = withUser(r, id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		out := V1Page[V1Post]{Data: v1Posts(page.List)}
		if page.Next != nil {
			c := feed.EncodeCursor(*page.Next)
			out.NextCursor = &c
			next := url.Values{"cursor": {c}, "limit": {strconv.Itoa(limit)}}
			w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, r.URL.EscapedPath(), next.Encode()))
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}

// v1UserPosts serves a page of the {id} user's posts, newest first, under
// the native cursor (a keyset on creation ms and post id).
func (s *Server) v1UserPosts() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var limit int
		var after *feed.Cursor
		if err == nil {
			limit, err = queryLimit(r, feed.MaxTimelineLimit)
		}
		if err == nil {
			after, err = queryCursor(r)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		page, err := s.Service.UserPosts(r.Context(), userID(r), id, after, limit)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		out := V1Page[V1Post]{Data: v1Posts(page.List)}
		if page.Next != nil {
			c := feed.EncodeCursor(*page.Next)
			out.NextCursor = &c
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}
