package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// TestSSOBrowser (docs/integrating.md, "Single sign-on"): in real Chromium,
// feedd's page behind an organisation's OpenID provider (zitadel/oidc's
// certified provider, on loopback) with the phone-code login off: the page
// offers "Sign in with Acme" only; the authorization code flow (PKCE,
// state, nonce) signs the user in, the token leaves the address at once,
// and the user has no phone; a session in a link the page did not
// follow is not taken. The server API, whose refs are the
// provider's subjects here (--auth-issuer is the provider), signs the
// user out, and the page's session ends. A callback the page did not
// start is refused.
func TestSSOBrowser(t *testing.T) {
	chromium := testenv.Chromium(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	redirect := base + "/auth/sso/callback"
	secretFile := filepath.Join(t.TempDir(), "oidc-secret")
	if err := os.WriteFile(secretFile, []byte("the client secret of feedd"), 0o600); err != nil {
		t.Fatal(err)
	}
	issuer := testenv.OIDCProvider(t, "feedd", "the client secret of feedd", redirect)
	dir := t.TempDir()
	key := createAPIKey(t, "sso", "--data", dir, "--auth-issuer", issuer)
	s := startServer(t, "--data", dir, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--phone-login=false", "--auth-issuer", issuer,
		"--oidc-issuer", issuer, "--oidc-client-id", "feedd", "--oidc-client-secret-file", secretFile, "--oidc-redirect-url", redirect, "--oidc-name", "Acme")
	if s.base != base {
		t.Fatalf("feedd listens at %s, not %s", s.base, base)
	}

	// The authorization request carries PKCE (S256), state and nonce, and
	// the login's cookie is HttpOnly and confined to the callback.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "/auth/sso/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	q := loc.Query()
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != 302 || !strings.HasPrefix(loc.String(), issuer) || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("state") == "" || q.Get("nonce") == "" || q.Get("client_id") != "feedd" || q.Get("redirect_uri") != redirect ||
		!strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "Path=/auth/sso/callback") || !strings.Contains(cookie, "SameSite=Lax") {
		t.Fatalf("GET /auth/sso/start: %d to %s, cookie %q", resp.StatusCode, loc, cookie)
	}

	b := newBrowser(t, chromium, s.base)
	b.until("the sign-in button", `!document.getElementById('sso').hidden && document.getElementById('sso-link').textContent === 'Sign in with Acme'`)
	if !eval[bool](b, `document.getElementById('phone-login').hidden`) {
		t.Fatal("the phone-code login is offered with --phone-login=false")
	}
	b.screenshot("sso-login", 390, 844)
	b.click(`[data-test=sso]`)
	b.until("the provider's login page", `location.href.startsWith('`+issuer+`') && !!document.getElementById('username')`)
	b.typeIn(`#username`, testenv.OIDCUser)
	b.typeIn(`#password`, testenv.OIDCPassword)
	b.click(`button[type=submit]`)
	b.until("back on feedd, signed in", `location.origin === '`+base+`' && !!localStorage.getItem('feedd.token') && document.getElementById('login').hidden && !document.getElementById('home').hidden`)
	if h := eval[string](b, `location.href`); strings.Contains(h, "sso=") {
		t.Fatalf("the token stayed in the address: %s", h)
	}
	b.screenshot("sso-home", 390, 844)
	token := eval[string](b, `localStorage.getItem('feedd.token')`)
	c := newV1Client(t, s)
	me := c.me(token)
	if me.Phone != "" || me.ID == 0 {
		t.Fatalf("the signed-in user: %+v", me)
	}

	// The app's backend signs the user out: the page's session ends.
	c.want(204, "POST", "/v1/server/users/{ref}/revoke", key, nil, nil, testenv.OIDCSubject)
	c.refused(401, "unauthorized", "GET", "/v1/me", token, nil)
	b.do(chromedp.Reload())
	b.until("the page signed out", `!document.getElementById('login').hidden && !localStorage.getItem('feedd.token')`)

	// A session handed to the page by a link this tab did not follow
	// (someone else's sign-in) is not taken.
	b.do(chromedp.Navigate(base + "/?from=elsewhere#sso=" + url.QueryEscape(token)))
	b.until("the foreign sign-in refused", `document.getElementById('login-msg').textContent.includes('not started here') && !localStorage.getItem('feedd.token')`)

	// A callback this browser did not start is refused, and said so.
	b.do(chromedp.Navigate(base + "/auth/sso/callback?code=forged&state=forged"))
	b.until("the refusal shown", `document.getElementById('login-msg').textContent.includes('sign in again')`)
}
