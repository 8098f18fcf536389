package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/jwtauth"
	"github.com/feedd/feedd/sso"
)

// The flags of an app's own users (docs/integrating.md): its tokens, the
// phone-code login, the server API's budget and single sign-on.

// identityFlags are those flags' values.
type identityFlags struct {
	jwksURL         string
	jwtSecret       string
	jwtSecretFile   string
	issuer          string
	audience        string
	userClaim       string
	nameClaim       string
	pictureClaim    string
	leeway          time.Duration
	jwksRefresh     time.Duration
	jwksMinRefresh  time.Duration
	phoneLogin      bool
	serverLimit     feed.Limit
	oidcIssuer      string
	oidcClientID    string
	oidcSecret      string
	oidcSecretFile  string
	oidcName        string
	oidcRedirectURL string
}

// DefaultServerLimit is each API key's budget of work: units (a request,
// or a batch's item) per window.
var DefaultServerLimit = feed.Limit{N: 200000, Window: time.Minute}

// declareIdentityFlags declares this file's flags with their FEED_*
// fallbacks.
func declareIdentityFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	f := &c.identity
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	str(&f.jwksURL, "auth-jwks-url", "FEED_AUTH_JWKS_URL", "", "URL of your app's JWKS: tokens signed by its keys (RS256, ES256, EdDSA) sign users in (https, or http to a loopback address)")
	str(&f.jwtSecret, "auth-jwt-secret", "FEED_AUTH_JWT_SECRET", "", "HS256 key (at least 32 bytes) of your app's tokens without kid; give it by environment or --auth-jwt-secret-file, never on a command line")
	str(&f.jwtSecretFile, "auth-jwt-secret-file", "FEED_AUTH_JWT_SECRET_FILE", "", "file holding --auth-jwt-secret")
	str(&f.issuer, "auth-issuer", "FEED_AUTH_ISSUER", "", "the iss your app's tokens must have; also the issuer of the users the server API names by your refs (required with --auth-jwks-url or --auth-jwt-secret)")
	str(&f.audience, "auth-audience", "FEED_AUTH_AUDIENCE", "", "a value your app's tokens must have in aud (required with --auth-jwks-url or --auth-jwt-secret)")
	str(&f.userClaim, "auth-user-claim", "FEED_AUTH_USER_CLAIM", "sub", "claim of your app's tokens that names the user (your ref of them)")
	str(&f.nameClaim, "auth-name-claim", "FEED_AUTH_NAME_CLAIM", "name", "claim of your app's tokens that gives the user's name (kept in step with the user's profile)")
	str(&f.pictureClaim, "auth-picture-claim", "FEED_AUTH_PICTURE_CLAIM", "picture", "claim of your app's tokens that gives the user's picture URL (kept in step with the user's profile)")
	dur(&f.leeway, "auth-leeway", "FEED_AUTH_LEEWAY", jwtauth.DefaultLeeway, "clock skew allowed on the exp, nbf and iat of your app's tokens")
	dur(&f.jwksRefresh, "auth-jwks-refresh", "FEED_AUTH_JWKS_REFRESH", jwtauth.DefaultRefreshInterval, "how often the JWKS is fetched again")
	dur(&f.jwksMinRefresh, "auth-jwks-min-refresh", "FEED_AUTH_JWKS_MIN_REFRESH", jwtauth.DefaultMinRefresh, "a token naming a key the JWKS lacks makes feedd fetch it again, at most this often (a key rotation needs no restart)")
	fs.BoolVar(&f.phoneLogin, "phone-login", true, help("phone-code login (false: its routes refuse with 403, and users sign in with your app's tokens or single sign-on)", "FEED_PHONE_LOGIN"))
	fromEnv("phone-login", "FEED_PHONE_LOGIN")
	f.serverLimit = DefaultServerLimit
	fs.Var(&f.serverLimit, "server-limit-key", help("work one API key may ask of the server API: a request is 1, a batch 1 per item, an export 1000, written N/DURATION (0: off)", "FEED_SERVER_LIMIT_KEY"))
	fromEnv("server-limit-key", "FEED_SERVER_LIMIT_KEY")
	str(&f.oidcIssuer, "oidc-issuer", "FEED_OIDC_ISSUER", "", "issuer URL of an OpenID provider: the web page offers \"Sign in with --oidc-name\" (empty: no single sign-on)")
	str(&f.oidcClientID, "oidc-client-id", "FEED_OIDC_CLIENT_ID", "", "feedd's client id at the OpenID provider")
	str(&f.oidcSecret, "oidc-client-secret", "FEED_OIDC_CLIENT_SECRET", "", "feedd's client secret at the OpenID provider; give it by environment or --oidc-client-secret-file, never on a command line")
	str(&f.oidcSecretFile, "oidc-client-secret-file", "FEED_OIDC_CLIENT_SECRET_FILE", "", "file holding --oidc-client-secret")
	str(&f.oidcName, "oidc-name", "FEED_OIDC_NAME", "SSO", "the provider's name on the page's button")
	str(&f.oidcRedirectURL, "oidc-redirect-url", "FEED_OIDC_REDIRECT_URL", "", "feedd's callback as registered at the provider: the page's URL and /auth/sso/callback")
	limit := func(p *feed.Limit, name, env, usage string) {
		fs.Var(p, name, help(usage+", written N/DURATION (0: off)", env))
		fromEnv(name, env)
	}
	limit(&c.limits.SSOPerClient, "sso-limit-client", "FEED_SSO_LIMIT_CLIENT", "single sign-ons one client address may begin")
}

// checkIdentity reads this file's secrets given by file and checks the
// flags.
func (c *config) checkIdentity() error {
	f := &c.identity
	for _, s := range []struct {
		value *string
		file  string
		name  string
	}{{&f.jwtSecret, f.jwtSecretFile, "auth-jwt-secret"}, {&f.oidcSecret, f.oidcSecretFile, "oidc-client-secret"}} {
		if s.file == "" {
			continue
		}
		if *s.value != "" {
			return fmt.Errorf("set --%s or --%s-file, not both", s.name, s.name)
		}
		b, err := os.ReadFile(s.file)
		if err != nil {
			return fmt.Errorf("--%s-file: %w", s.name, err)
		}
		if *s.value = string(bytes.TrimSpace(b)); *s.value == "" {
			return fmt.Errorf("--%s-file: %s is empty", s.name, s.file)
		}
	}
	tokens := f.jwksURL != "" || f.jwtSecret != ""
	switch {
	case tokens && (f.issuer == "" || f.audience == ""):
		return fmt.Errorf("your app's tokens need --auth-issuer and --auth-audience")
	case f.jwtSecret != "" && len(f.jwtSecret) < 32:
		return fmt.Errorf("--auth-jwt-secret must be at least 32 bytes")
	case f.leeway < 0 || f.leeway > 5*time.Minute:
		return fmt.Errorf("--auth-leeway must be from 0 to 5m")
	case f.jwksRefresh <= 0 || f.jwksMinRefresh <= 0:
		return fmt.Errorf("--auth-jwks-refresh and --auth-jwks-min-refresh must be positive")
	case f.userClaim == "":
		return fmt.Errorf("--auth-user-claim must not be empty")
	}
	if f.jwksURL != "" {
		if err := secureURL("--auth-jwks-url", f.jwksURL); err != nil {
			return err
		}
	}
	if f.oidcIssuer != "" {
		if f.oidcClientID == "" || f.oidcRedirectURL == "" {
			return fmt.Errorf("--oidc-issuer needs --oidc-client-id and --oidc-redirect-url")
		}
		if err := secureURL("--oidc-issuer", f.oidcIssuer); err != nil {
			return err
		}
		if _, err := url.Parse(f.oidcRedirectURL); err != nil {
			return fmt.Errorf("--oidc-redirect-url: %w", err)
		}
	}
	return nil
}

// secureURL refuses a URL that is not https, or http to a loopback
// address: keys and sign-ins cross the network.
func secureURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		return fmt.Errorf("%s must be an https:// URL (plain http:// only to a loopback address)", flag)
	}
	return nil
}

// tokenVerifier returns the verifier of the app's tokens, nil when none is
// configured. Its refresh ends with ctx... or Close.
func (c *config) tokenVerifier(ctx context.Context, log *slog.Logger) (*jwtauth.Verifier, error) {
	f := &c.identity
	if f.jwksURL == "" && f.jwtSecret == "" {
		return nil, nil
	}
	return jwtauth.New(ctx, jwtauth.Config{
		JWKSURL: f.jwksURL, Secret: []byte(f.jwtSecret), Issuer: f.issuer, Audience: f.audience, Leeway: f.leeway,
		UserClaim: f.userClaim, NameClaim: f.nameClaim, PictureClaim: f.pictureClaim,
		RefreshInterval: f.jwksRefresh, MinRefresh: f.jwksMinRefresh, Log: log,
	})
}

// singleSignOn returns the page's single sign-on, nil when none is
// configured.
func (c *config) singleSignOn() (*sso.Provider, error) {
	f := &c.identity
	if f.oidcIssuer == "" {
		return nil, nil
	}
	return sso.New(sso.Config{Issuer: f.oidcIssuer, ClientID: f.oidcClientID, ClientSecret: f.oidcSecret, RedirectURL: f.oidcRedirectURL, Name: f.oidcName})
}
