package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"

	"github.com/feedd/feedd/sqlite"
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

// call performs a server API request with the API key (a bearer token)
// that must answer status, decoding its body into out.
func (is *identityServer) call(method, tmpl string, body, out any, status int, args ...any) *v1Reply {
	is.t.Helper()
	return is.c.want(status, method, tmpl, is.key, body, out, args...)
}

type batchResults struct {
	Results []struct {
		Ref     string `json:"ref"`
		ID      int64  `json:"id"`
		Created bool   `json:"created"`
		OK      bool   `json:"ok"`
		Error   *struct{ Code, Message string }
	} `json:"results"`
}

type serverPost struct {
	apiPost
	ForeignID string `json:"foreign_id"`
}

type erasure struct {
	ID     int64          `json:"id"`
	UserID int64          `json:"user_id"`
	State  string         `json:"state"`
	Counts map[string]int `json:"counts"`
	Steps  []string       `json:"steps"`
}

// TestServerAPI (docs/integrating.md, "The server API"), on both engines:
// batches are all or nothing per item with a result each; a foreign id
// publishes once under 50 concurrent retries; a post is deleted by its
// foreign id; a user's timeline is read as them; the export holds their
// data; the erasure leaves no row, inbox entry or Redis key of the user.
func TestServerAPI(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			is := startIdentityServer(t, engine, "--max-writes", "64")
			c := is.c
			c.refused(401, "unauthorized", "POST", "/v1/server/users", "", map[string]any{"users": []any{}})
			c.refused(401, "unauthorized", "POST", "/v1/server/users", "fdk_not-a-key", map[string]any{"users": []any{}})

			var up batchResults
			is.call("POST", "/v1/server/users", map[string]any{"users": []map[string]string{
				{"ref": "u1", "name": "One"}, {"ref": "u2"}, {"ref": ""}, {"ref": "u3", "picture": "javascript:alert(1)"},
				{"ref": "u3"}, {"ref": "u4"}, {"ref": "u2", "name": "Two again"},
			}}, &up, 200)
			for i, want := range []string{"", "", "invalid", "invalid", "", "", "invalid"} {
				r := up.Results[i]
				if (r.Error == nil) != (want == "") || (r.Error != nil && r.Error.Code != want) || (want == "" && (!r.Created || r.ID == 0)) {
					t.Fatalf("upsert item %d: %+v, want error %q", i, r, want)
				}
			}
			id := map[string]int64{"u1": up.Results[0].ID, "u2": up.Results[1].ID, "u3": up.Results[4].ID, "u4": up.Results[5].ID}
			is.call("POST", "/v1/server/users", map[string]any{"users": []map[string]string{{"ref": "u1", "name": "One!"}}}, &up, 200)
			if r := up.Results[0]; r.ID != id["u1"] || r.Created {
				t.Fatalf("upsert of a known ref: %+v", r)
			}
			var su struct {
				Ref            string `json:"ref"`
				ID             int64  `json:"id"`
				NickName       string `json:"nick_name"`
				FollowerCount  int    `json:"follower_count"`
				FollowingCount int    `json:"following_count"`
			}
			is.call("GET", "/v1/server/users/{ref}", nil, &su, 200, "u1")
			if su.ID != id["u1"] || su.NickName != "One!" {
				t.Fatalf("GET u1: %+v", su)
			}

			var fr batchResults
			pair := func(a, b string) map[string]string { return map[string]string{"follower": a, "followee": b} }
			is.call("POST", "/v1/server/follows", map[string]any{"pairs": []map[string]string{
				pair("u2", "u1"), pair("u3", "u1"), pair("u1", "u1"), pair("u1", "nobody"), pair("u1", "u2"), pair("u4", "u1"), pair("u1", "u3"),
			}}, &fr, 200)
			for i, want := range []string{"", "", "invalid", "not_found", "", "", ""} {
				if r := fr.Results[i]; r.OK != (want == "") || (want != "" && (r.Error == nil || r.Error.Code != want)) {
					t.Fatalf("follow pair %d: %+v, want %q", i, r, want)
				}
			}
			is.call("POST", "/v1/server/unfollows", map[string]any{"pairs": []map[string]string{pair("u4", "u1")}}, &fr, 200)
			is.call("GET", "/v1/server/users/{ref}", nil, &su, 200, "u1")
			if su.FollowerCount != 2 || su.FollowingCount != 2 {
				t.Fatalf("u1's counts after the batches: %+v", su)
			}

			// 50 concurrent retries of one publish make one post.
			post := map[string]any{"user": "u1", "foreign_id": "f1", "title": "once", "content": "only once"}
			var wg sync.WaitGroup
			statuses := make([]int, 50)
			ids := make([]int64, 50)
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// A client retries a refusal of load (503) as it would
					// any failure: the foreign id makes that safe.
					var r *v1Reply
					for try := 0; try < 100 && (r == nil || r.Status == 503); try++ {
						var err error
						if r, err = c.send("POST", "/v1/server/posts", is.key, post); err != nil {
							t.Error(err)
							return
						}
					}
					var p serverPost
					json.Unmarshal(r.Raw, &p)
					statuses[i], ids[i] = r.Status, p.ID
				}()
			}
			wg.Wait()
			created := 0
			for i := range statuses {
				if statuses[i] == 201 {
					created++
				}
				if (statuses[i] != 201 && statuses[i] != 200) || ids[i] != ids[0] || ids[0] == 0 {
					t.Fatalf("retry %d: status %d, post %d (first %d)", i, statuses[i], ids[i], ids[0])
				}
			}
			if created != 1 {
				t.Fatalf("%d of 50 concurrent publishes of one foreign id made a post, want 1", created)
			}
			var p2, p3 serverPost
			is.call("POST", "/v1/server/posts", map[string]any{"user": "u1", "foreign_id": "f2", "title": "two", "content": "c"}, &p2, 201)
			is.call("POST", "/v1/server/posts", map[string]any{"user": "u3", "foreign_id": "f3", "title": "three", "content": "c"}, &p3, 201)
			c.refused(409, "conflict", "POST", "/v1/server/posts", is.key, map[string]any{"user": "u1", "foreign_id": "f3", "title": "t", "content": "c"})
			c.refused(404, "not_found", "POST", "/v1/server/posts", is.key, map[string]any{"user": "nobody", "foreign_id": "f9", "title": "t", "content": "c"})
			var got serverPost
			is.call("GET", "/v1/server/posts/{foreign_id}", nil, &got, 200, "f1")
			if got.ID != ids[0] || got.ForeignID != "f1" || got.Title != "once" {
				t.Fatalf("GET f1: %+v", got)
			}
			is.call("DELETE", "/v1/server/posts/{foreign_id}", nil, nil, 204, "f2")
			c.refused(404, "not_found", "GET", "/v1/server/posts/{foreign_id}", is.key, nil, "f2")
			c.refused(404, "not_found", "DELETE", "/v1/server/posts/{foreign_id}", is.key, nil, "f2")

			// Server-side rendering: u2's timeline, read as u2.
			waitFor(t, "f1 in u2's timeline", func() bool {
				var page struct {
					Data []apiPost `json:"data"`
				}
				is.call("GET", "/v1/server/users/{ref}/timeline?limit=10", nil, &page, 200, "u2")
				return len(page.Data) == 1 && page.Data[0].ID == ids[0]
			})

			// u1 acts with the app's tokens too: likes, comments, mutes, a
			// block, a muted word, a report.
			u1, u2 := is.app.hsToken("u1"), is.app.hsToken("u2")
			c.want(204, "PUT", "/v1/posts/{id}/like", u1, nil, nil, p3.ID)
			c.want(204, "PUT", "/v1/posts/{id}/like", u2, nil, nil, ids[0])
			c.want(201, "POST", "/v1/posts/{id}/comments", u1, map[string]string{"text": "from u1"}, nil, p3.ID)
			c.want(201, "POST", "/v1/posts/{id}/comments", u2, map[string]string{"text": "on u1's post"}, nil, ids[0])
			c.want(204, "PUT", "/v1/mutes/{id}", u1, nil, nil, id["u4"])
			c.want(204, "PUT", "/v1/mutes/{id}", u2, nil, nil, id["u1"])
			c.want(204, "PUT", "/v1/blocks/{id}", is.app.hsToken("u4"), nil, nil, id["u1"])
			c.want(204, "PUT", "/v1/muted-words/{word}", u1, nil, nil, "spoiler")
			c.want(204, "POST", "/v1/posts/{id}/report", u1, map[string]string{"reason": "spam"}, nil, p3.ID)
			c.want(204, "PUT", "/v1/posts/{id}/repost", u1, nil, nil, p3.ID)
			c.want(200, "POST", "/v1/markers", u1, map[string]any{"timeline": map[string]any{"last_read_id": p3.ID}}, nil)

			r := is.call("GET", "/v1/server/users/{ref}/export", nil, nil, 200, "u1")
			var export map[string]json.RawMessage
			if err := json.Unmarshal(r.Raw, &export); err != nil {
				t.Fatalf("export is not JSON: %v: %.300s", err, r.Raw)
			}
			for kind, want := range map[string]int{"identities": 1, "profile": 1, "posts": 1, "comments": 1, "likes": 1,
				"following": 2, "followers": 2, "mutes": 1, "muted_words": 1, "reports": 1, "reposts": 1, "markers": 1} {
				var items []map[string]any
				if err := json.Unmarshal(export[kind], &items); err != nil || len(items) != want {
					t.Errorf("export's %s: %s, want %d items", kind, export[kind], want)
				}
			}

			// The erasure.
			var e erasure
			r = is.call("DELETE", "/v1/server/users/{ref}", nil, &e, 202, "u1")
			if e.UserID != id["u1"] || r.Header.Get("Location") != fmt.Sprintf("/v1/server/erasures/%d", e.ID) {
				t.Fatalf("erasure %+v at %q", e, r.Header.Get("Location"))
			}
			waitFor(t, "the erasure done", func() bool {
				is.call("GET", "/v1/server/erasures/{id}", nil, &e, 200, e.ID)
				return e.State == "done"
			})
			if e.Counts["posts"] != 1 || e.Counts["profile"] != 1 || e.Counts["likes"] != 1 || e.Counts["comments"] != 1 {
				t.Fatalf("erasure counts %v", e.Counts)
			}
			c.refused(404, "not_found", "GET", "/v1/server/users/{ref}", is.key, nil, "u1")
			c.refused(404, "not_found", "GET", "/v1/server/posts/{foreign_id}", is.key, nil, "f1")
			is.call("GET", "/v1/server/users/{ref}", nil, &su, 200, "u3")
			if su.FollowerCount != 0 || su.FollowingCount != 0 {
				t.Fatalf("u3's counts after u1's erasure: %+v", su)
			}
			if p := c.timeline(u2, 10); len(p) != 0 {
				t.Fatalf("u2's timeline after u1's erasure: %+v", p)
			}
			is.noTrace(t, id["u1"], []int64{ids[0], p2.ID})
		})
	}
}

// userColumns are the columns that name a user; postColumns those that
// name a post. keptTables keep a user's id on purpose: an erasure's
// record (its progress), the job queue's rows (River's, cleaned by
// retention), the abuse limits' counters (expiring).
var (
	userColumns = []string{"user_id", "follower_id", "followee_id", "muted_id", "blocked_id", "reporter_id", "actor_id", "author_id"}
	postColumns = []string{"post_id"}
	keptTables  = []string{"erasures", "feedd_migrations", "rate_counts"}
)

// noTrace fails t if any row of the database names user uid or one of
// their posts, or Redis holds a key of theirs or an inbox entry of their
// posts.
func (is *identityServer) noTrace(t *testing.T, uid int64, posts []int64) {
	t.Helper()
	check := func(q func(query string, args ...any) int, tables []dbTable, param func(i int) string) {
		for _, tb := range tables {
			if slices.Contains(keptTables, tb.name) || strings.HasPrefix(tb.name, "river_") || strings.HasPrefix(tb.name, "sqlite_") {
				continue
			}
			for _, col := range tb.cols {
				var ids []int64
				switch {
				case slices.Contains(userColumns, col) || (tb.name == "users" && col == "id"):
					ids = []int64{uid}
				case slices.Contains(postColumns, col) || (tb.name == "posts" && col == "id"):
					ids = posts
				}
				for _, id := range ids {
					if n := q(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = %s", tb.name, col, param(1)), id); n > 0 {
						t.Errorf("after the erasure, %s has %d rows with %s = %d", tb.name, n, col, id)
					}
				}
			}
		}
	}
	if is.b == nil {
		for _, file := range []string{"feedd.db", sqlite.InboxFile} {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(is.dir, file)+"?mode=ro&_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := func(query string, args ...any) int {
				var n int
				if err := db.QueryRow(query, args...).Scan(&n); err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				return n
			}
			rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_schema m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'`)
			if err != nil {
				t.Fatal(err)
			}
			check(q, collectTables(t, rows), func(int) string { return "?" })
		}
		return
	}
	conn, err := pgx.Connect(context.Background(), is.b.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	q := func(query string, args ...any) int {
		var n int
		if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	rows, err := conn.Query(context.Background(), `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	var tables dbTables
	for rows.Next() {
		var tn, cn string
		if err := rows.Scan(&tn, &cn); err != nil {
			t.Fatal(err)
		}
		tables.add(tn, cn)
	}
	rows.Close()
	check(q, tables, func(i int) string { return fmt.Sprintf("$%d", i) })
	// Redis: no key of the user (their inbox, outbox, sessions are keyed
	// by them or gone), and no inbox holds their posts.
	ctx := context.Background()
	keys, err := is.b.rdb.Keys(ctx, is.b.prefix+"*{"+strconv.FormatInt(uid, 10)+"}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("after the erasure, Redis has keys of the user: %v", keys)
	}
	all, err := is.b.rdb.Keys(ctx, is.b.prefix+"feed:{*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		members, err := is.b.rdb.ZRange(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			for _, p := range posts {
				if m == strconv.FormatInt(p, 10) {
					t.Errorf("after the erasure, inbox %s holds the user's post %d", k, p)
				}
			}
		}
	}
}

// dbTable is a table and its columns; dbTables collects them.
type dbTable struct {
	name string
	cols []string
}

type dbTables []dbTable

func (ts *dbTables) add(table, col string) {
	if n := len(*ts); n == 0 || (*ts)[n-1].name != table {
		*ts = append(*ts, dbTable{name: table})
	}
	(*ts)[len(*ts)-1].cols = append((*ts)[len(*ts)-1].cols, col)
}

// collectTables reads (table, column) rows, a table's rows together.
func collectTables(t *testing.T, rows *sql.Rows) dbTables {
	t.Helper()
	defer rows.Close()
	var out dbTables
	for rows.Next() {
		var tn, cn string
		if err := rows.Scan(&tn, &cn); err != nil {
			t.Fatal(err)
		}
		out.add(tn, cn)
	}
	return out
}

// TestRevokeUser (docs/integrating.md, "Revocation"), on both engines: the
// server API's revocation closes the user's live stream at once and
// refuses their tokens issued before it, and only theirs; a token issued
// after it is good.
func TestRevokeUser(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			is := startIdentityServer(t, engine)
			c, app := is.c, is.app
			old, other := app.token("k1", "alice"), app.token("k1", "bob")
			alice := c.me(old)
			c.me(other)
			st := c.openStream(old, "", "127.0.0.2")
			kept := c.openStream(other, "", "127.0.0.3")
			is.call("POST", "/v1/server/users/{ref}/revoke", nil, nil, 204, "alice")
			t.Logf("the stream ended %v after the revocation", streamEnds(t, st, 5*time.Second, "the revoked user's stream"))
			r, err := c.send("GET", "/v1/timeline", old, nil)
			if err != nil || r.Status != 401 || !strings.Contains(string(r.Raw), "issued before the user's sessions were revoked") {
				t.Fatalf("a token issued before the revocation: %v %d %s", err, r.Status, r.Raw)
			}
			if cr := is.do("GET", "/user/me", old, nil); cr.Status != 401 || !strings.Contains(cr.ErrorMsg, "revoked") {
				t.Fatalf("the compatible API with a revoked token: %d %s", cr.Status, cr.Raw)
			}
			c.me(other) // bob's token is good
			select {
			case _, ok := <-kept.events:
				if !ok {
					t.Fatal("bob's stream ended with alice's revocation")
				}
			default:
			}
			// A token issued from the next second on is good.
			fresh := app.token("k1", "alice", func(m jwt.MapClaims) { m["iat"] = time.Now().Unix() + 1 })
			if me := c.me(fresh); me.ID != alice.ID {
				t.Fatalf("a fresh token after the revocation: %+v", me)
			}
			c.refused(404, "not_found", "POST", "/v1/server/users/{ref}/revoke", is.key, nil, "nobody")
		})
	}
}

// v1ServerExchanges sends every documented answer of the server API and of
// /v1/auth/methods through c (TestV1API checks that none is missed): key
// is a live API key of c's server, started with app's tokens.
func v1ServerExchanges(t *testing.T, c *v1Client, key string, app *testApp) {
	var methods struct {
		Phone bool `json:"phone"`
		SSO   any  `json:"sso"`
	}
	c.want(200, "GET", "/v1/auth/methods", "", nil, &methods)
	if !methods.Phone || methods.SSO != nil {
		t.Fatalf("GET /v1/auth/methods: %+v", methods)
	}
	big := bytes.Repeat([]byte(" "), 9<<20)
	for _, op := range []string{"/v1/server/users", "/v1/server/follows", "/v1/server/unfollows", "/v1/server/posts"} {
		c.refused(401, "unauthorized", "POST", op, "", map[string]any{})
		c.refused(400, "invalid", "POST", op, key, map[string]any{"nope": 1})
		c.refused(413, "too_large", "POST", op, key, big)
	}
	c.want(200, "POST", "/v1/server/users", key, map[string]any{"users": []map[string]string{{"ref": "s1"}, {"ref": "s2"}}}, nil)
	c.want(200, "POST", "/v1/server/follows", key, map[string]any{"pairs": []map[string]string{{"follower": "s2", "followee": "s1"}}}, nil)
	c.want(200, "POST", "/v1/server/unfollows", key, map[string]any{"pairs": []map[string]string{{"follower": "s2", "followee": "s1"}}}, nil)
	post := map[string]any{"user": "s1", "foreign_id": "v1-f", "title": "t", "content": "c"}
	c.want(201, "POST", "/v1/server/posts", key, post, nil)
	c.want(200, "POST", "/v1/server/posts", key, post, nil)
	c.refused(404, "not_found", "POST", "/v1/server/posts", key, map[string]any{"user": "none", "foreign_id": "v1-g", "title": "t", "content": "c"})
	c.refused(409, "conflict", "POST", "/v1/server/posts", key, map[string]any{"user": "s2", "foreign_id": "v1-f", "title": "t", "content": "c"})

	gets := []struct {
		method, tmpl string
		ok           int
		arg          any
	}{
		{"GET", "/v1/server/users/{ref}", 200, "s1"},
		{"GET", "/v1/server/users/{ref}/timeline", 200, "s1"},
		{"GET", "/v1/server/users/{ref}/export", 200, "s1"},
		{"POST", "/v1/server/users/{ref}/revoke", 204, "s1"},
		{"GET", "/v1/server/posts/{foreign_id}", 200, "v1-f"},
		{"DELETE", "/v1/server/posts/{foreign_id}", 204, "v1-f"},
		{"DELETE", "/v1/server/users/{ref}", 202, "s2"},
	}
	for _, g := range gets {
		c.refused(401, "unauthorized", g.method, g.tmpl, "fdk_unknown", nil, g.arg)
		c.want(g.ok, g.method, g.tmpl, key, nil, nil, g.arg)
		c.refused(404, "not_found", g.method, g.tmpl, key, nil, "never")
	}
	c.refused(400, "invalid", "GET", "/v1/server/users/{ref}/timeline?limit=0", key, nil, "s1")
	var e erasure
	c.want(202, "DELETE", "/v1/server/users/{ref}", key, nil, &e, "s1")
	c.want(200, "GET", "/v1/server/erasures/{id}", key, nil, nil, e.ID)
	c.refused(401, "unauthorized", "GET", "/v1/server/erasures/{id}", "", nil, e.ID)
	c.refused(400, "invalid", "GET", "/v1/server/erasures/{id}", key, nil, "x")
	c.refused(404, "not_found", "GET", "/v1/server/erasures/{id}", key, nil, e.ID+1000)
	_ = app
}

// TestAPIKeys (docs/integrating.md, "API keys"): feedd apikey makes, lists
// and revokes keys (a revoked key is refused at once, its name free
// again); each key has its budget of work, a batch counting its items,
// and is refused with 429 and Retry-After past it, having done nothing.
func TestAPIKeys(t *testing.T) {
	dir := t.TempDir()
	key := createAPIKey(t, "backend", "--data", dir)
	if again := createAPIKey(t, "other", "--data", dir); again == key {
		t.Fatal("two keys are one")
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"apikey", "create", "backend", "--data", dir}, func(string) string { return "" }, &out, &errOut); err == nil || !strings.Contains(err.Error(), "live key is named") {
		t.Fatalf("a second live key of one name: %v", err)
	}
	s := startServer(t, "--data", dir, "--server-limit-key", "12/1m")
	c := newV1Client(t, s)
	c.want(200, "POST", "/v1/server/users", key, map[string]any{"users": []map[string]string{{"ref": "a"}, {"ref": "b"}}}, nil)
	// 2 units spent; a batch of 11 more is over 12, and does nothing.
	users := make([]map[string]string, 11)
	for i := range users {
		users[i] = map[string]string{"ref": fmt.Sprint("u", i)}
	}
	r, err := c.send("POST", "/v1/server/users", key, map[string]any{"users": users})
	if err != nil || r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a batch over the key's budget: %v %d %q %s", err, r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	c.refused(404, "not_found", "GET", "/v1/server/users/{ref}", key, nil, "u0")
	// A batch over the most a call takes is refused as invalid, not
	// charged item by item: the key's budget is left for the next batch.
	huge := make([]map[string]string, 1001)
	for i := range huge {
		huge[i] = map[string]string{"ref": fmt.Sprint("h", i)}
	}
	c.refused(400, "invalid", "POST", "/v1/server/users", key, map[string]any{"users": huge})
	c.refused(400, "invalid", "POST", "/v1/server/follows", key, map[string]any{"pairs": make([]map[string]string, 10001)})
	c.want(200, "POST", "/v1/server/users", key, map[string]any{"users": []map[string]string{{"ref": "c"}}}, nil)

	out.Reset()
	if err := run(context.Background(), []string{"apikey", "list", "--data", dir}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if l := out.String(); !strings.Contains(l, "backend") || !strings.Contains(l, "other") || strings.Contains(l, "fdk_") {
		t.Fatalf("feedd apikey list:\n%s", l)
	}
	if err := run(context.Background(), []string{"apikey", "revoke", "backend", "--data", dir}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	c.refused(401, "unauthorized", "GET", "/v1/server/users/{ref}", key, nil, "a")
	if fresh := createAPIKey(t, "backend", "--data", dir); fresh == key {
		t.Fatal("the new key of a revoked name is the old one")
	}
}
