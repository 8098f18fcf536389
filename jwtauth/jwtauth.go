// Package jwtauth verifies the tokens of an app's own login: JWTs signed
// by the keys of the app's JWKS (RS256, ES256, EdDSA) or by a shared
// secret (HS256). It implements feed.TokenVerifier with golang-jwt (the
// signatures and the claims' checks) and jwkset (fetching and parsing the
// JWKS); no signature is checked here.
//
// The algorithm is the key's, never the token's choice: a token names its
// key by kid, and the key decides the algorithm it must be signed with (the
// key's "alg", else its type: RSA RS256, P-256 ES256, Ed25519 EdDSA); a
// token without kid is the secret's, HS256. "alg": "none", and a token
// signed with HS256 using a public key as the secret, are refused.
//
// The JWKS is fetched at start, again every RefreshInterval, and when a
// token names a kid it lacks, at most once per MinRefresh: a key rotation
// needs no restart, and tokens naming unknown keys cannot make feedd
// fetch more often than that.
package jwtauth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	feed "github.com/feedd/feedd"
)

// Defaults of Config.
const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultRefreshInterval is how often the JWKS is fetched anyway.
	DefaultRefreshInterval = time.Hour
	// DefaultMinRefresh is the least time between two fetches of the JWKS
	// made for tokens naming a kid it lacks.
	DefaultMinRefresh = time.Minute
	// fetchTimeout bounds one fetch of the JWKS.
	fetchTimeout = 10 * time.Second
	// maxJWKS bounds the size of a JWKS document.
	maxJWKS = 1 << 20
)

// Config says which tokens are good.
type Config struct {
	// JWKSURL is the app's JWKS (https, or http on loopback); Secret the
	// HS256 key. At least one is required; with both, a token with a kid
	// is the JWKS's and one without is the secret's.
	JWKSURL string
	Secret  []byte
	// Issuer and Audience are required: a token's iss must be Issuer and
	// its aud must include Audience.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed (DefaultLeeway if zero).
	Leeway time.Duration
	// UserClaim names the user (default "sub"); NameClaim and PictureClaim
	// their profile (default "name" and "picture"; absent: nothing).
	UserClaim, NameClaim, PictureClaim string
	// RefreshInterval and MinRefresh time the JWKS's fetches (defaults
	// above).
	RefreshInterval time.Duration
	MinRefresh      time.Duration
	// Client fetches the JWKS (default: a client with fetchTimeout).
	Client *http.Client
	Log    *slog.Logger
	// Now is the clock (tests); time.Now if nil.
	Now func() time.Time
}

// Verifier verifies tokens as its Config says. Its methods may be called
// concurrently.
type Verifier struct {
	cfg    Config
	keys   *jwkset.MemoryJWKSet // the JWKS's keys, replaced whole by each fetch
	parser *jwt.Parser
	stop   context.CancelFunc

	fetching chan struct{} // a token of 1: held by the fetch under way
	mu       sync.Mutex
	fetched  time.Time // the last fetch's start (success or not)
	fetches  int       // how many fetches were made (tests, logs)
}

var _ feed.TokenVerifier = (*Verifier)(nil)

// New returns a Verifier of cfg and, with a JWKS, fetches it (a failure is
// logged: the fetch is tried again when a token needs a key) and starts
// its periodic refresh, until Close.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	switch {
	case cfg.JWKSURL == "" && len(cfg.Secret) == 0:
		return nil, errors.New("jwtauth: a JWKS URL or a secret is required")
	case cfg.Issuer == "" || cfg.Audience == "":
		return nil, errors.New("jwtauth: the issuer and the audience are required")
	case len(cfg.Secret) > 0 && len(cfg.Secret) < 32:
		return nil, errors.New("jwtauth: an HS256 secret must be at least 32 bytes")
	}
	cfg.Leeway = cmp.Or(cfg.Leeway, DefaultLeeway)
	cfg.UserClaim = cmp.Or(cfg.UserClaim, "sub")
	cfg.NameClaim = cmp.Or(cfg.NameClaim, "name")
	cfg.PictureClaim = cmp.Or(cfg.PictureClaim, "picture")
	cfg.RefreshInterval = cmp.Or(cfg.RefreshInterval, DefaultRefreshInterval)
	cfg.MinRefresh = cmp.Or(cfg.MinRefresh, DefaultMinRefresh)
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var methods []string
	if cfg.JWKSURL != "" {
		methods = append(methods, jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg())
	}
	if len(cfg.Secret) > 0 {
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	v := &Verifier{
		cfg:  cfg,
		keys: jwkset.NewMemoryStorage(),
		parser: jwt.NewParser(jwt.WithValidMethods(methods), jwt.WithIssuer(cfg.Issuer), jwt.WithAudience(cfg.Audience),
			jwt.WithLeeway(cfg.Leeway), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(cfg.Now)),
		fetching: make(chan struct{}, 1),
	}
	if cfg.JWKSURL == "" {
		v.stop = func() {}
		return v, nil
	}
	if err := v.fetch(ctx); err != nil {
		cfg.Log.Warn("fetch the JWKS of the app's tokens; tokens are refused until it is fetched", "url", cfg.JWKSURL, "error", err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	v.stop = stop
	go v.refreshLoop(rctx)
	return v, nil
}

// Close stops the periodic refresh.
func (v *Verifier) Close() { v.stop() }

// Fetches returns how many times the JWKS was fetched.
func (v *Verifier) Fetches() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fetches
}

func (v *Verifier) refreshLoop(ctx context.Context) {
	t := time.NewTicker(v.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := v.fetch(ctx); err != nil && ctx.Err() == nil {
				v.cfg.Log.Warn("refresh the JWKS of the app's tokens; the keys fetched before stay", "url", v.cfg.JWKSURL, "error", err)
			}
		}
	}
}

// fetch reads the JWKS into v.keys (replacing them only when the whole
// document is good). One fetch at a time: a caller waits for the one
// under way (or until ctx ends).
func (v *Verifier) fetch(ctx context.Context) error {
	select {
	case v.fetching <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-v.fetching }()
	v.mu.Lock()
	v.fetched = v.cfg.Now()
	v.fetches++
	v.mu.Unlock()
	client := *v.cfg.Client
	client.Transport = limitedTransport{cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport)}
	_, err := jwkset.NewStorageFromHTTP(v.cfg.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client: &client, Ctx: ctx, HTTPTimeout: fetchTimeout, Storage: v.keys,
	})
	return err
}

// limitedTransport cuts a JWKS response at maxJWKS bytes.
type limitedTransport struct{ http.RoundTripper }

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxJWKS), resp.Body}
	}
	return resp, err
}

// refetch fetches the JWKS again for a token naming a key it lacks, unless
// it was fetched less than MinRefresh ago; it reports whether the keys may
// have changed. Callers arriving during a fetch wait for it.
func (v *Verifier) refetch(ctx context.Context) bool {
	v.mu.Lock()
	since := v.fetched
	v.mu.Unlock()
	select {
	case v.fetching <- struct{}{}: // no fetch under way
		<-v.fetching
	case <-ctx.Done():
		return false
	}
	v.mu.Lock()
	again, recent := v.fetched.After(since), v.cfg.Now().Sub(v.fetched) < v.cfg.MinRefresh
	v.mu.Unlock()
	if again {
		return true // another caller fetched meanwhile
	}
	if recent {
		return false
	}
	if err := v.fetch(ctx); err != nil {
		v.cfg.Log.Warn("fetch the JWKS of the app's tokens for an unknown key", "url", v.cfg.JWKSURL, "error", err)
		return false
	}
	return true
}

// algOf is the algorithm key k signs with: its "alg" when it has one,
// else the one of its type feedd accepts.
func algOf(k jwkset.JWK) string {
	if a := k.Marshal().ALG.String(); a != "" {
		return a
	}
	switch key := k.Key().(type) {
	case *rsa.PublicKey, *rsa.PrivateKey:
		return jwt.SigningMethodRS256.Alg()
	case *ecdsa.PublicKey:
		if key.Curve == elliptic.P256() {
			return jwt.SigningMethodES256.Alg()
		}
	case *ecdsa.PrivateKey:
		if key.Curve == elliptic.P256() {
			return jwt.SigningMethodES256.Alg()
		}
	case ed25519.PublicKey, ed25519.PrivateKey:
		return jwt.SigningMethodEdDSA.Alg()
	}
	return ""
}

// publicKey is k's key as golang-jwt verifies with it.
func publicKey(k jwkset.JWK) any {
	key := k.Key()
	if p, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		return p.Public()
	}
	return key
}

// keyfunc returns the key a token must be signed with (see the package
// doc), refusing a token whose algorithm is not its key's.
func (v *Verifier) keyfunc(ctx context.Context, called *bool) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		*called = true
		alg := t.Method.Alg()
		kid, hasKid := t.Header["kid"].(string)
		if hasKid && v.cfg.JWKSURL != "" {
			k, err := v.keys.KeyRead(ctx, kid)
			if errors.Is(err, jwkset.ErrKeyNotFound) && v.refetch(ctx) {
				k, err = v.keys.KeyRead(ctx, kid)
			}
			if errors.Is(err, jwkset.ErrKeyNotFound) {
				return nil, refusal(fmt.Sprintf("its key %q is not in the app's JWKS", kid))
			} else if err != nil {
				return nil, err
			}
			if want := algOf(k); alg != want {
				return nil, refusal(fmt.Sprintf("it is signed with %s but its key %q signs with %s", alg, kid, cmp.Or(want, "an algorithm feedd does not accept")))
			}
			return publicKey(k), nil
		}
		if len(v.cfg.Secret) > 0 {
			if alg != jwt.SigningMethodHS256.Alg() {
				return nil, refusal(fmt.Sprintf("a token without kid must be signed with HS256 by the shared secret, not %s", alg))
			}
			return v.cfg.Secret, nil
		}
		// No kid and no secret: the JWKS's keys of the token's algorithm.
		all, err := v.keys.KeyReadAll(ctx)
		if err != nil {
			return nil, err
		}
		var set jwt.VerificationKeySet
		for _, k := range all {
			if algOf(k) == alg {
				set.Keys = append(set.Keys, publicKey(k))
			}
		}
		if len(set.Keys) == 0 {
			return nil, refusal(fmt.Sprintf("it has no kid and the app's JWKS has no %s key", alg))
		}
		return set, nil
	}
}

// refusal is a keyfunc's reason to refuse a token, passed on to the client.
type refusal string

func (r refusal) Error() string { return string(r) }

// Verify implements feed.TokenVerifier.
func (v *Verifier) Verify(ctx context.Context, token string) (*feed.TokenClaims, error) {
	claims := jwt.MapClaims{}
	keyed := false // the algorithm was accepted, and a key found
	_, err := v.parser.ParseWithClaims(token, claims, v.keyfunc(ctx, &keyed))
	if err != nil {
		return nil, v.refuse(err, keyed)
	}
	iat, err := claims.GetIssuedAt()
	if err != nil || iat == nil {
		return nil, feed.RefuseToken("it has no iat claim (the time it was issued)")
	}
	sub, _ := claims[v.cfg.UserClaim].(string)
	if sub == "" {
		return nil, feed.RefuseToken(fmt.Sprintf("its claim %q, which names the user, is missing or not a string", v.cfg.UserClaim))
	}
	c := &feed.TokenClaims{Identity: feed.Identity{Issuer: v.cfg.Issuer, Subject: sub}, IssuedAt: iat.Time}
	c.Name, _ = claims[v.cfg.NameClaim].(string)
	c.Picture, _ = claims[v.cfg.PictureClaim].(string)
	return c, nil
}

// refuse turns a parse error into a refusal that says what is wrong;
// keyed says whether the parse got as far as the keyfunc.
func (v *Verifier) refuse(err error, keyed bool) error {
	var r refusal
	switch {
	case errors.As(err, &r):
		return feed.RefuseToken(string(r))
	case errors.Is(err, jwt.ErrTokenMalformed):
		return feed.RefuseToken("it is not a well-formed JWT")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return feed.RefuseToken("its signing algorithm is missing or unknown")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && keyed:
		return feed.RefuseToken("its signature does not verify")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return feed.RefuseToken("its signing algorithm is not accepted (" + v.accepted() + ")")
	case errors.Is(err, jwt.ErrTokenExpired):
		return feed.RefuseToken("it has expired (exp)")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return feed.RefuseToken("it is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return feed.RefuseToken("it was issued in the future (iat)")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return feed.RefuseToken(fmt.Sprintf("its issuer (iss) is not %q", v.cfg.Issuer))
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return feed.RefuseToken(fmt.Sprintf("its audience (aud) does not include %q", v.cfg.Audience))
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return feed.RefuseToken("it lacks a required claim (exp)")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return feed.RefuseToken("it is invalid")
}

// accepted lists the algorithms accepted.
func (v *Verifier) accepted() string {
	var algs []string
	if v.cfg.JWKSURL != "" {
		algs = append(algs, "RS256", "ES256", "EdDSA")
	}
	if len(v.cfg.Secret) > 0 {
		algs = append(algs, "HS256")
	}
	slices.Sort(algs)
	return fmt.Sprint(algs)
}
