// Package sso is the single sign-on of feedd's own page: the OpenID
// Connect authorization code flow with PKCE against an organisation's
// provider, with coreos/go-oidc (discovery, the ID token's signature,
// issuer, audience, times) and golang.org/x/oauth2 (the code exchange).
// It implements http.SSO; the HTTP side (state, nonce, cookies) is
// package http's.
package sso

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	feed "github.com/feedd/feedd"
)

// Config is a provider and feedd's client at it.
type Config struct {
	// Issuer is the provider's issuer URL (its discovery document is at
	// Issuer + "/.well-known/openid-configuration").
	Issuer string
	// ClientID and ClientSecret are feedd's client at the provider;
	// RedirectURL is its callback (…/auth/sso/callback) as registered.
	ClientID, ClientSecret, RedirectURL string
	// Name is shown on the page's button ("Sign in with Name").
	Name string
	// Client makes the requests to the provider (default: 10 s timeout).
	Client *http.Client
}

// Provider is one OpenID provider. Its discovery is made at the first
// sign-in, and again after a failure, so that feedd starts while the
// provider is down.
type Provider struct {
	cfg Config

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// New checks cfg and returns its provider.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "":
		return nil, errors.New("sso: the issuer, the client id and the redirect URL are required")
	case !strings.HasSuffix(cfg.RedirectURL, "/auth/sso/callback"):
		return nil, errors.New("sso: the redirect URL must end in /auth/sso/callback, feedd's callback")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	cfg.Name = cmp.Or(cfg.Name, "SSO")
	return &Provider{cfg: cfg}, nil
}

// Name is the provider's name for the page.
func (p *Provider) Name() string { return p.cfg.Name }

// Secure reports whether the callback is https.
func (p *Provider) Secure() bool { return strings.HasPrefix(p.cfg.RedirectURL, "https://") }

// discover reads the provider's discovery document, once it succeeds.
func (p *Provider) discover(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oauth != nil {
		return p.oauth, p.verifier, nil
	}
	op, err := oidc.NewProvider(oidc.ClientContext(ctx, p.cfg.Client), p.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("discover the OpenID provider %s: %w", p.cfg.Issuer, err)
	}
	p.oauth = &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: op.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile"}}
	p.verifier = op.VerifierContext(oidc.ClientContext(context.Background(), p.cfg.Client), &oidc.Config{ClientID: p.cfg.ClientID})
	return p.oauth, p.verifier, nil
}

// AuthURL returns the provider's authorization URL for a login.
func (p *Provider) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	oc, _, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange redeems code and returns the verified ID token's claims. A
// code, an ID token or a nonce the provider or feedd refuses is a
// feed.RefuseToken refusal; a provider out of reach is any other error.
func (p *Provider) Exchange(ctx context.Context, code, verifier, nonce string) (*feed.TokenClaims, error) {
	oc, v, err := p.discover(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := oc.Exchange(oidc.ClientContext(ctx, p.cfg.Client), code, oauth2.VerifierOption(verifier))
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		why := re.ErrorCode
		if why == "" && re.Response != nil {
			why = re.Response.Status
		}
		return nil, feed.RefuseToken("the provider refused the sign-in's code (" + why + ")")
	} else if err != nil {
		return nil, err
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, feed.RefuseToken("the provider sent no ID token")
	}
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return nil, feed.RefuseToken("the provider's ID token does not verify: " + err.Error())
	}
	if idt.Nonce != nonce {
		return nil, feed.RefuseToken("the ID token's nonce is not the sign-in's")
	}
	var c struct {
		Name     string `json:"name"`
		Username string `json:"preferred_username"`
		Picture  string `json:"picture"`
	}
	if err := idt.Claims(&c); err != nil {
		return nil, feed.RefuseToken("the ID token's claims are malformed")
	}
	return &feed.TokenClaims{Identity: feed.Identity{Issuer: idt.Issuer, Subject: idt.Subject}, IssuedAt: idt.IssuedAt,
		Profile: feed.Profile{Name: cmp.Or(c.Name, c.Username), Picture: c.Picture}}, nil
}
