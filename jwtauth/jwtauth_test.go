package jwtauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/jwtauth"
)

const (
	issuer   = "https://app.example/"
	audience = "feedd"
)

// jwks serves a JWKS on loopback whose keys the test swaps (a rotation),
// and counts its fetches.
type jwks struct {
	mu    sync.Mutex
	keys  map[string]any // kid -> public key
	hits  atomic.Int32
	srv   *httptest.Server
	noAlg bool // publish keys without "alg" (their type decides)
}

func newJWKS(t *testing.T) *jwks {
	j := &jwks{keys: map[string]any{}}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.hits.Add(1)
		j.mu.Lock()
		defer j.mu.Unlock()
		store := jwkset.NewMemoryStorage()
		for kid, key := range j.keys {
			md := jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}
			if !j.noAlg {
				switch key.(type) {
				case *rsa.PublicKey:
					md.ALG = jwkset.AlgRS256
				case *ecdsa.PublicKey:
					md.ALG = jwkset.AlgES256
				case ed25519.PublicKey:
					md.ALG = jwkset.AlgEdDSA
				}
			}
			k, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Metadata: md})
			if err != nil {
				t.Error(err)
				return
			}
			store.KeyWrite(r.Context(), k)
		}
		b, err := store.JSONPublic(r.Context())
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *jwks) set(keys map[string]any) {
	j.mu.Lock()
	j.keys = keys
	j.mu.Unlock()
}

// claims are a good token's, at now.
func claims(now time.Time, sub string) jwt.MapClaims {
	return jwt.MapClaims{"iss": issuer, "aud": audience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"name": "Ada", "picture": "https://cdn.example/ada.png"}
}

func sign(t *testing.T, m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t *testing.T, cfg jwtauth.Config) *jwtauth.Verifier {
	t.Helper()
	cfg.Issuer, cfg.Audience = issuer, audience
	v, err := jwtauth.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func wantRefused(t *testing.T, v *jwtauth.Verifier, token, reason string) {
	t.Helper()
	_, err := v.Verify(context.Background(), token)
	if err == nil || !feed.IsTokenRefusal(err) || feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Fatalf("want a refusal (%s), got %v", reason, err)
	}
	if msg := feed.ErrorMessage(err); !strings.Contains(msg, reason) {
		t.Fatalf("refusal %q does not say %q", msg, reason)
	}
}

// TestVerify: good tokens of each algorithm pass with their claims; each
// fault is refused with a message saying what is wrong.
func TestVerify(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, edKey, _ := ed25519.GenerateKey(rand.Reader)
	secret := []byte("a shared secret of at least 32 bytes!")
	j := newJWKS(t)
	j.set(map[string]any{"rsa": &rsaKey.PublicKey, "ec": &ecKey.PublicKey, "ed": edPub})
	v := newVerifier(t, jwtauth.Config{JWKSURL: j.srv.URL, Secret: secret})
	now := time.Now()

	for _, tc := range []struct {
		name string
		tok  string
	}{
		{"RS256", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, claims(now, "u-RS256"))},
		{"ES256", sign(t, jwt.SigningMethodES256, "ec", ecKey, claims(now, "u-ES256"))},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, "ed", edKey, claims(now, "u-EdDSA"))},
		{"HS256", sign(t, jwt.SigningMethodHS256, "", secret, claims(now, "u-HS256"))},
	} {
		c, err := v.Verify(context.Background(), tc.tok)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Issuer != issuer || c.Subject != "u-"+tc.name || c.Name != "Ada" || c.Picture != "https://cdn.example/ada.png" || c.IssuedAt.Unix() != now.Unix() {
			t.Fatalf("%s: claims %+v", tc.name, c)
		}
	}

	with := func(f func(jwt.MapClaims)) jwt.MapClaims {
		c := claims(now, "u1")
		f(c)
		return c
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey))})
	for _, tc := range []struct {
		name, tok, reason string
	}{
		{"wrong issuer", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" })), "issuer"},
		{"wrong audience", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { c["aud"] = "other" })), "audience"},
		{"expired", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })), "expired"},
		{"not yet valid", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })), "not valid yet"},
		{"no exp", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { delete(c, "exp") })), "exp"},
		{"no iat", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { delete(c, "iat") })), "iat"},
		{"no sub", sign(t, jwt.SigningMethodRS256, "rsa", rsaKey, with(func(c jwt.MapClaims) { delete(c, "sub") })), `"sub"`},
		{"unknown key", sign(t, jwt.SigningMethodRS256, "nope", rsaKey, claims(now, "u1")), `key "nope" is not in`},
		{"alg none", sign(t, jwt.SigningMethodNone, "rsa", jwt.UnsafeAllowNoneSignatureType, claims(now, "u1")), "not accepted"},
		{"HS256 with the RSA public key, its kid", sign(t, jwt.SigningMethodHS256, "rsa", pubPEM, claims(now, "u1")), "signs with RS256"},
		{"HS256 with the RSA public key, no kid", sign(t, jwt.SigningMethodHS256, "", pubPEM, claims(now, "u1")), "signature does not verify"},
		{"RS256 under the EC key's kid", sign(t, jwt.SigningMethodRS256, "ec", rsaKey, claims(now, "u1")), "signs with ES256"},
		{"bad signature", sign(t, jwt.SigningMethodRS256, "rsa", must(rsa.GenerateKey(rand.Reader, 2048)), claims(now, "u1")), "signature does not verify"},
		{"not a JWT", "eyJhbGciOiJSUzI1NiJ9.e30", "well-formed"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantRefused(t, v, tc.tok, tc.reason) })
	}

	// Without the secret, an HS256 token is refused before any key is
	// looked at, whatever it was signed with.
	only := newVerifier(t, jwtauth.Config{JWKSURL: j.srv.URL})
	wantRefused(t, only, sign(t, jwt.SigningMethodHS256, "rsa", pubPEM, claims(now, "u1")), "not accepted")
	wantRefused(t, only, sign(t, jwt.SigningMethodHS256, "", pubPEM, claims(now, "u1")), "not accepted")
}

// TestKeyWithoutAlg: a JWKS key without "alg" signs with its type's
// algorithm only.
func TestKeyWithoutAlg(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	j := newJWKS(t)
	j.noAlg = true
	j.set(map[string]any{"k": &rsaKey.PublicKey})
	v := newVerifier(t, jwtauth.Config{JWKSURL: j.srv.URL})
	now := time.Now()
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "k", rsaKey, claims(now, "u1"))); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, v, sign(t, jwt.SigningMethodPS256, "k", rsaKey, claims(now, "u1")), "not accepted")
}

// TestRotation: a token signed by a key added to the JWKS after the start
// is accepted without a restart; unknown keys make the JWKS fetched at
// most once per MinRefresh.
func TestRotation(t *testing.T) {
	oldKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	newKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	j := newJWKS(t)
	j.set(map[string]any{"old": &oldKey.PublicKey})
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	clock := func() time.Time { return *now.Load() }
	v := newVerifier(t, jwtauth.Config{JWKSURL: j.srv.URL, MinRefresh: time.Minute, Now: clock})
	if got := j.hits.Load(); got != 1 {
		t.Fatalf("%d fetches at start, want 1", got)
	}
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "old", oldKey, claims(start, "u1"))); err != nil {
		t.Fatal(err)
	}
	// A minute later the app rotates: the new key is published, the old
	// one withdrawn.
	later := start.Add(time.Minute)
	now.Store(&later)
	j.set(map[string]any{"new": &newKey.PublicKey})
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "new", newKey, claims(later, "u1"))); err != nil {
		t.Fatalf("a token of the rotated key: %v", err)
	}
	wantRefused(t, v, sign(t, jwt.SigningMethodRS256, "old", oldKey, claims(later, "u1")), `key "old" is not in`)
	// Within MinRefresh of that fetch, unknown keys fetch nothing more,
	// however many tokens name them.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "x"+string(rune('a'+i)), newKey, claims(later, "u1")))
		}()
	}
	wg.Wait()
	if got := j.hits.Load(); got != 2 {
		t.Fatalf("%d fetches, want 2 (the start and one for the rotated key)", got)
	}
	after := later.Add(time.Minute)
	now.Store(&after)
	wantRefused(t, v, sign(t, jwt.SigningMethodRS256, "y", newKey, claims(after, "u1")), `key "y" is not in`)
	if got := j.hits.Load(); got != 3 {
		t.Fatalf("%d fetches, want 3 once MinRefresh passed", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
