package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// The app beside feedd in the tests of docs/integrating.md: its login
// signs tokens with RSA keys published in a JWKS served on loopback (which
// the tests rotate), or with a shared HS256 secret.

const (
	testIssuer   = "https://app.example/"
	testAudience = "feedd-test"
)

type testApp struct {
	t          testing.TB
	srv        *httptest.Server
	mu         sync.Mutex
	keys       map[string]*rsa.PrivateKey // the keys the JWKS publishes
	signing    map[string]*rsa.PrivateKey // every key ever made, by kid
	secret     []byte
	secretFile string
}

func newTestApp(t testing.TB) *testApp {
	a := &testApp{t: t, keys: map[string]*rsa.PrivateKey{}, signing: map[string]*rsa.PrivateKey{},
		secret: []byte("the app's shared HS256 secret, 32+ bytes")}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		store := jwkset.NewMemoryStorage()
		for kid, k := range a.keys {
			jwk, err := jwkset.NewJWKFromKey(&k.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgRS256, USE: jwkset.UseSig}})
			if err != nil {
				t.Error(err)
				return
			}
			store.KeyWrite(r.Context(), jwk)
		}
		b, _ := store.JSONPublic(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(a.srv.Close)
	a.secretFile = filepath.Join(t.TempDir(), "jwt-secret")
	if err := os.WriteFile(a.secretFile, a.secret, 0o600); err != nil {
		t.Fatal(err)
	}
	a.publish("k1")
	return a
}

// args are feedd's flags for this app's tokens.
func (a *testApp) args() []string {
	return []string{"--auth-jwks-url", a.srv.URL, "--auth-jwt-secret-file", a.secretFile, "--auth-issuer", testIssuer,
		"--auth-audience", testAudience, "--auth-jwks-min-refresh", "20ms"}
}

// publish makes a key and adds it to the JWKS.
func (a *testApp) publish(kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		a.t.Fatal(err)
	}
	a.mu.Lock()
	a.keys[kid], a.signing[kid] = k, k
	a.mu.Unlock()
}

// withdraw takes a key out of the JWKS.
func (a *testApp) withdraw(kid string) {
	a.mu.Lock()
	delete(a.keys, kid)
	a.mu.Unlock()
}

func (a *testApp) claims(sub string, edit []func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for _, e := range edit {
		e(c)
	}
	return c
}

// token is an RS256 token of sub signed by key kid.
func (a *testApp) token(kid, sub string, edit ...func(jwt.MapClaims)) string {
	a.mu.Lock()
	k := a.signing[kid]
	a.mu.Unlock()
	if k == nil {
		k, _ = rsa.GenerateKey(rand.Reader, 2048) // a key the app never published
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, a.claims(sub, edit))
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		a.t.Fatal(err)
	}
	return s
}

// hsToken is an HS256 token of sub signed by the shared secret.
func (a *testApp) hsToken(sub string, edit ...func(jwt.MapClaims)) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, a.claims(sub, edit)).SignedString(a.secret)
	if err != nil {
		a.t.Fatal(err)
	}
	return s
}

// forged are the tokens an attacker may send: each must be refused with
// 401 and a message saying why (the reason).
func (a *testApp) forged() []struct{ name, token, reason string } {
	a.mu.Lock()
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&a.signing["k1"].PublicKey))})
	a.mu.Unlock()
	hsPub := func(kid bool) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, a.claims("mallory", nil))
		if kid {
			tok.Header["kid"] = "k1"
		}
		return must(tok.SignedString(pub))
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, a.claims("mallory", nil))
	none.Header["kid"] = "k1"
	return []struct{ name, token, reason string }{
		{"wrong issuer", a.token("k1", "mallory", func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" }), "issuer"},
		{"wrong audience", a.token("k1", "mallory", func(c jwt.MapClaims) { c["aud"] = "another-service" }), "audience"},
		{"expired", a.token("k1", "mallory", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), "expired"},
		{"not yet valid", a.token("k1", "mallory", func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() }), "not valid yet"},
		{"unknown key", a.token("k-never-published", "mallory"), "not in the app's JWKS"},
		{"alg none", must(none.SignedString(jwt.UnsafeAllowNoneSignatureType)), "not accepted"},
		{"HS256 signed with the RSA public key, its kid", hsPub(true), "signs with RS256"},
		{"HS256 signed with the RSA public key, no kid", hsPub(false), "signature does not verify"},
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// createAPIKey runs feedd apikey create on the store args name and returns
// the key it prints.
func createAPIKey(t testing.TB, name string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append(append([]string{"apikey", "create", name, "--log-format", "json"}, testServeFlags...), args...)
	if err := run(context.Background(), all, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatalf("feedd apikey create: %v\n%s", err, errOut.String())
	}
	key := strings.TrimSpace(out.String())
	if !strings.HasPrefix(key, "fdk_") || strings.Contains(key, "\n") {
		t.Fatalf("feedd apikey create printed %q", out.String())
	}
	return key
}

// identityServer starts feedd on engine ("sqlite" or "postgres": with a
// Redis) with the app's tokens configured and an API key made beforehand.
type identityServer struct {
	*server
	c   *v1Client
	app *testApp
	key string
	b   *backendArgs // postgres: the backend; nil on SQLite
	dir string       // sqlite: the data directory
}

func startIdentityServer(t *testing.T, engine string, extra ...string) *identityServer {
	t.Helper()
	is := &identityServer{app: newTestApp(t)}
	var store []string
	if engine == "postgres" {
		is.b = singleNode(t)
		store = is.b.args
	} else {
		is.dir = t.TempDir()
		store = []string{"--data", is.dir}
	}
	is.key = createAPIKey(t, "backend", store...)
	is.server = startServer(t, append(append(append([]string{}, store...), is.app.args()...), extra...)...)
	is.c = newV1Client(t, is.server)
	return is
}

// TestAppTokens (docs/integrating.md, "Your tokens"), on both engines: a
// valid RS256 and HS256 token reads /v1/timeline and the compatible feed,
// the user made on first sight with no phone and the token's name; each
// forged or wrong token is refused with 401 and a message saying why, on
// both APIs; a key rotation is accepted without a restart.
func TestAppTokens(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			is := startIdentityServer(t, engine)
			c, app := is.c, is.app
			rs := app.token("k1", "alice", func(m jwt.MapClaims) { m["name"] = "Alice"; m["picture"] = "https://cdn.example/alice.png" })
			hs := app.hsToken("bob", func(m jwt.MapClaims) { m["name"] = "Bob" })
			for _, tok := range []string{rs, hs} {
				c.want(200, "GET", "/v1/timeline", tok, nil, nil)
				if r := is.do("GET", fmt.Sprintf("/blog/of/follow?lastId=%d", time.Now().UnixMilli()+1), tok, nil); r.Status != 200 || !r.Success {
					t.Fatalf("compatible feed with an app's token: %d %s", r.Status, r.Raw)
				}
			}
			alice, bob := c.me(rs), c.me(hs)
			if alice.Phone != "" || alice.NickName != "Alice" || alice.Icon != "https://cdn.example/alice.png" || bob.NickName != "Bob" || alice.ID == bob.ID {
				t.Fatalf("users made on first sight: %+v, %+v", alice, bob)
			}
			// The compatible API with its own header form, and the same user.
			var u struct{ ID int64 }
			is.must("GET", "/user/me", "Bearer "+rs, nil, &u)
			if u.ID != alice.ID {
				t.Fatalf("/user/me of alice's token = %d, want %d", u.ID, alice.ID)
			}
			// Acting with a token: bob follows alice and sees her post.
			c.want(204, "PUT", "/v1/following/{id}", hs, nil, nil, alice.ID)
			p := c.publish(rs, "hello from the app")
			waitFor(t, "alice's post in bob's timeline", func() bool {
				tl := c.timeline(hs, 10)
				return len(tl) == 1 && tl[0].ID == p.ID
			})
			// The profile follows the claims.
			rs2 := app.token("k1", "alice", func(m jwt.MapClaims) { m["name"] = "Alice B." })
			if me := c.me(rs2); me.ID != alice.ID || me.NickName != "Alice B." || me.Icon != "https://cdn.example/alice.png" {
				t.Fatalf("alice after her name changed: %+v", me)
			}
			for _, f := range app.forged() {
				r, err := c.send("GET", "/v1/timeline", f.token, nil)
				if err != nil || r.Status != 401 || !strings.Contains(string(r.Raw), f.reason) || !strings.Contains(string(r.Raw), "the token is refused") {
					t.Errorf("%s: /v1/timeline answered %v %d %s, want 401 saying %q", f.name, err, r.Status, r.Raw, f.reason)
				}
				cr := is.do("GET", fmt.Sprintf("/blog/of/follow?lastId=%d", time.Now().UnixMilli()), f.token, nil)
				if cr.Status != 401 || !strings.Contains(cr.ErrorMsg, f.reason) {
					t.Errorf("%s: the compatible feed answered %d %s, want 401 saying %q", f.name, cr.Status, cr.Raw, f.reason)
				}
			}
			// A rotation: the app publishes k2 and withdraws k1; a token of
			// k2 is accepted at once, one of k1 no longer.
			// (The JWKS was fetched for the unknown key above less than
			// --auth-jwks-min-refresh ago, perhaps: a token of k2 is then
			// refused until that has passed.)
			app.publish("k2")
			app.withdraw("k1")
			k2 := app.token("k2", "alice")
			waitFor(t, "a token of the rotated key accepted", func() bool {
				r, err := c.send("GET", "/v1/me", k2, nil)
				return err == nil && r.Status == 200
			})
			if me := c.me(k2); me.ID != alice.ID {
				t.Fatalf("a token of the rotated key is not alice's: %+v", me)
			}
			c.refused(401, "unauthorized", "GET", "/v1/me", app.token("k1", "alice"), nil)
		})
	}
}
