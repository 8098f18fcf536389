package http

// Single sign-on for feedd's own page (docs/integrating.md, "Single
// sign-on"): "Sign in with NAME" sends the browser to the organisation's
// OpenID provider (authorization code with PKCE, state and nonce); its
// callback makes a feedd session of the verified ID token and hands the
// page its token in the URL's fragment, which never reaches a server.
//
// The login's state, nonce and PKCE verifier travel in a cookie of the
// login alone (HttpOnly, SameSite=Lax, ten minutes, its path the
// callback's), signed with the service's secret, so that any API process
// can finish a login another began, and nothing is kept on the server.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// SSO is an OpenID provider's authorization code flow (package sso).
type SSO interface {
	// Name is the provider's name, as the page's button shows it.
	Name() string
	// AuthURL returns the provider's authorization URL for a login with
	// state, nonce and the S256 challenge of verifier.
	AuthURL(ctx context.Context, state, nonce, verifier string) (string, error)
	// Exchange redeems code with verifier and returns the claims of the
	// ID token it gets, verified (signature, issuer, audience, times) and
	// with nonce as its nonce; a refusal of feed.RefuseToken otherwise.
	Exchange(ctx context.Context, code, verifier, nonce string) (*feed.TokenClaims, error)
	// Secure reports whether the callback is served over https (the
	// login's cookie is then Secure).
	Secure() bool
}

// SSO paths.
const (
	ssoStartPath    = "/auth/sso/start"
	ssoCallbackPath = "/auth/sso/callback"
	ssoCookie       = "feedd_sso"
	ssoCookieAge    = 10 * time.Minute
)

// ssoRandom returns 32 random bytes, base64url.
func ssoRandom() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ssoFail sends the browser back to the page with the reason in the
// fragment (#sso-error=...), which the page shows.
func ssoFail(w http.ResponseWriter, r *http.Request, msg string) {
	http.Redirect(w, r, "/#sso-error="+url.QueryEscape(msg), http.StatusSeeOther)
}

func (s *Server) ssoStart() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.SSO == nil {
			s.handleNotFound().ServeHTTP(w, r)
			return
		}
		if err := s.Service.CountSSO(r.Context()); err != nil {
			retryAfter(w, err)
			ssoFail(w, r, feed.ErrorMessage(err))
			return
		}
		state, nonce, verifier := ssoRandom(), ssoRandom(), ssoRandom()
		u, err := s.SSO.AuthURL(r.Context(), state, nonce, verifier)
		if err != nil {
			s.Log.Warn("single sign-on: the provider is unavailable", "error", err)
			ssoFail(w, r, "the sign-in provider cannot be reached; try again later")
			return
		}
		value := state + "." + nonce + "." + verifier
		http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: value + "." + s.Service.MAC("sso", value), Path: ssoCallbackPath,
			MaxAge: int(ssoCookieAge.Seconds()), HttpOnly: true, Secure: s.SSO.Secure(), SameSite: http.SameSiteLaxMode})
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u, http.StatusFound)
	})
}

// ssoLogin reads the login's cookie: its state, nonce and verifier, when
// its signature is good.
func (s *Server) ssoLogin(r *http.Request) (state, nonce, verifier string, ok bool) {
	c, err := r.Cookie(ssoCookie)
	if err != nil {
		return "", "", "", false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 || !hmac.Equal([]byte(c.Value[i+1:]), []byte(s.Service.MAC("sso", c.Value[:i]))) {
		return "", "", "", false
	}
	parts := strings.Split(c.Value[:i], ".")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

func (s *Server) ssoCallback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.SSO == nil {
			s.handleNotFound().ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		// The login's cookie is used once, whatever happens.
		http.SetCookie(w, &http.Cookie{Name: ssoCookie, Path: ssoCallbackPath, MaxAge: -1, HttpOnly: true, Secure: s.SSO.Secure(), SameSite: http.SameSiteLaxMode})
		q := r.URL.Query()
		state, nonce, verifier, ok := s.ssoLogin(r)
		switch {
		case !ok:
			ssoFail(w, r, "the sign-in expired or was not started here; sign in again")
			return
		case !hmac.Equal([]byte(q.Get("state")), []byte(state)):
			ssoFail(w, r, "the sign-in's state does not match; sign in again")
			return
		case q.Get("error") != "":
			ssoFail(w, r, "the provider refused the sign-in: "+q.Get("error"))
			return
		case q.Get("code") == "":
			ssoFail(w, r, "the provider sent no code; sign in again")
			return
		}
		claims, err := s.SSO.Exchange(r.Context(), q.Get("code"), verifier, nonce)
		if err != nil {
			if !feed.IsTokenRefusal(err) {
				s.Log.Warn("single sign-on: the code exchange failed", "error", err)
				ssoFail(w, r, "the sign-in provider cannot be reached; try again later")
				return
			}
			ssoFail(w, r, feed.ErrorMessage(err))
			return
		}
		token, err := s.Service.SignIn(r.Context(), claims)
		if err != nil {
			s.Log.Warn("single sign-on: sign-in failed", "error", err)
			ssoFail(w, r, feed.ErrorMessage(err))
			return
		}
		http.Redirect(w, r, "/#sso="+url.QueryEscape(token), http.StatusSeeOther)
	})
}

// v1AuthMethods tells a login page how users sign in here.
func (s *Server) v1AuthMethods() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		type sso struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		}
		out := struct {
			Phone bool `json:"phone"`
			SSO   *sso `json:"sso"`
		}{Phone: !s.Service.PhoneLoginOff}
		if s.SSO != nil {
			out.SSO = &sso{Name: s.SSO.Name(), URL: ssoStartPath}
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}
