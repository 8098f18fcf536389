package http

import (
	"net/http"
	"strings"

	feed "github.com/feedd/feedd"
)

// Authentication of both APIs. The rules (codes, sessions, sliding expiry)
// are feed.Service's; this file only finds the token in a request and puts
// the caller's id in its context: the compatible API reads the raw token
// from the authorization header, the native one a bearer token.

type ctxKey int

const userKey ctxKey = 0

// userID returns the caller's id (0 when anonymous).
func userID(r *http.Request) int64 {
	id, _ := r.Context().Value(userKey).(int64)
	return id
}

// token returns the compatible API's token: the authorization header's
// value (a "Bearer " prefix is accepted too).
func token(r *http.Request) string {
	t := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(t) > 7 && strings.EqualFold(t[:7], "bearer ") {
		t = strings.TrimSpace(t[7:])
	}
	return t
}

// requireUser authenticates the compatible API's token; "login required"
// otherwise.
func (s *Server) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.Service.Authenticate(r.Context(), token(r))
		if err != nil {
			s.failAuth(w, r, err)
			return
		}
		next.ServeHTTP(w, withUser(r, id))
	})
}

// failAuth answers a request whose authentication failed with err, as
// requireUser does.
func (s *Server) failAuth(w http.ResponseWriter, r *http.Request, err error) {
	if feed.ErrorCode(err) == feed.EUNAUTHORIZED && !feed.IsTokenRefusal(err) {
		err = feed.Errorf(feed.EUNAUTHORIZED, "login required")
	}
	s.fail(w, r, err)
}

// optionalUser identifies the caller when a valid token is sent, and lets
// anonymous requests through.
func (s *Server) optionalUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := token(r); t != "" {
			if id, err := s.Service.Authenticate(r.Context(), t); err == nil {
				r = withUser(r, id)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the token of an "Authorization: Bearer <token>" header,
// and whether an Authorization header was sent at all.
func bearer(r *http.Request) (tok string, sent bool) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", h != ""
	}
	return strings.TrimSpace(rest), true
}

// v1RequireUser authenticates the bearer token and puts the caller's id in
// the request context; 401 with a WWW-Authenticate challenge otherwise.
func (s *Server) v1RequireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, sent := bearer(r)
		if tok == "" {
			if sent {
				w.Header().Set("WWW-Authenticate", `Bearer realm="feedd", error="invalid_request"`)
			}
			s.v1Fail(w, r, feed.Errorf(feed.EUNAUTHORIZED, "a bearer token is required"))
			return
		}
		id, err := s.Service.Authenticate(r.Context(), tok)
		if err != nil {
			s.v1FailAuth(w, r, err)
			return
		}
		next.ServeHTTP(w, withUser(r, id))
	})
}

// v1FailAuth answers a request whose bearer token failed to authenticate
// with err, as v1RequireUser does.
func (s *Server) v1FailAuth(w http.ResponseWriter, r *http.Request, err error) {
	if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="feedd", error="invalid_token"`)
		if !feed.IsTokenRefusal(err) { // a JWT's refusal says why (identity.go)
			err = feed.Errorf(feed.EUNAUTHORIZED, "the token is invalid or expired; log in again")
		}
	}
	s.v1Fail(w, r, err)
}
