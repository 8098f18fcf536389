package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
)

// upgradeFrom is the release an upgrade is tested from, and the commit it
// was cut at (docs/operations.md, "Upgrading").
var upgradeFrom = struct{ version, commit string }{"0.1.0", "17ed808bef8d297076f4419196877623b1f3a7e0"}

var releaseBins sync.Map // commit -> func() (string, error)

// releaseBinary returns feedd built from commit, as its release was: built
// once from that commit's tree (git archive, into a temporary directory
// removed afterwards) and kept in the user's cache directory under the
// commit's name, so that a machine that has built it once does not build
// it again. A commit missing from the checkout's history skips the test,
// and fails it under CI=true.
func releaseBinary(t *testing.T, version, commit string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err == nil {
		err = exec.Command("git", "-C", strings.TrimSpace(string(top)), "cat-file", "-e", commit+"^{commit}").Run()
	}
	if err != nil {
		why := fmt.Sprintf("the commit of feedd %s, %s, is not in this checkout's history (%v): fetch it (git fetch --unshallow)", version, commit, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	build, _ := releaseBins.LoadOrStore(commit, sync.OnceValues(func() (string, error) {
		return buildRelease(strings.TrimSpace(string(top)), version, commit)
	}))
	bin, err := build.(func() (string, error))()
	if err != nil {
		t.Fatalf("build feedd %s: %v", version, err)
	}
	return bin
}

func buildRelease(top, version, commit string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "feedd-test", "feedd-"+version+"-"+commit)
	if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o100 != 0 {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "feedd-"+version+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", top, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	var errs bytes.Buffer
	archive.Stderr, untar.Stderr = &errs, &errs
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", err
	}
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := errors.Join(archive.Run(), untar.Wait()); err != nil {
		return "", fmt.Errorf("git archive %s | tar -x: %v\n%s", commit, err, errs.Bytes())
	}
	part := bin + ".part-" + testenv.Unique()
	cmd := exec.Command("go", "build", "-trimpath", "-o", part, "./cmd/feedd")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(part)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, os.Rename(part, bin) // concurrent builds: the last rename wins, with the same program
}

// TestUpgradeFromRelease: the released feedd (upgradeFrom, built from its
// commit) runs on each engine and is given real data through its API:
// users, follows (one author in pull mode), posts, likes, comments and a
// reply, a mute, a muted word, the notifications all that makes, and, from
// an API process without workers, a post and a follow whose jobs are left
// queued. Then this feedd starts on the same database (and Redis):
//
//   - it applies every migration of its source (whatever their number)
//     and records them;
//   - every timeline (both APIs, every page, the old cursors included),
//     post, comment page, profile and notification page reads as the
//     release read it, with the queued jobs done (fields added since may
//     be there too);
//   - started again, it migrates nothing;
//   - the release, started on the upgraded database, stops at once with
//     feed.OlderRefusal and changes nothing.
func TestUpgradeFromRelease(t *testing.T) {
	t.Parallel()
	old := releaseBinary(t, upgradeFrom.version, upgradeFrom.commit)
	now := feeddBinary(t)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		upgrade(t, old, now, upgradeEngine{
			flags: []string{"--data", dir, "--poll-interval", "20ms"},
			records: func(t *testing.T) []migrationRecord {
				return append(sqliteRecords(t, filepath.Join(dir, "feedd.db"), "../../sqlite/migrations"),
					sqliteRecords(t, filepath.Join(dir, "inbox.db"), "../../sqlite/inbox_migrations")...)
			},
		})
	})
	t.Run("postgres+redis", func(t *testing.T) {
		t.Parallel()
		url := testenv.PostgresURL(t)
		redisURL, prefix := testenv.RedisURL(t)
		upgrade(t, old, now, upgradeEngine{
			flags: []string{"--database-url", url, "--redis-url", redisURL, "--redis-prefix", prefix},
			records: func(t *testing.T) []migrationRecord {
				return postgresRecords(t, url, "../../postgres/migrations")
			},
		})
	})
}

// upgradeEngine is what TestUpgradeFromRelease needs of an engine: the
// flags that point feedd at its database, and the record of migrations
// the database holds, checked against the source's migration files.
type upgradeEngine struct {
	flags   []string
	records func(t *testing.T) []migrationRecord
}

// migrationRecord is a row of feedd_schema_migrations.
type migrationRecord struct {
	File, Name, Release string
	AppliedAt           int64
}

func upgrade(t *testing.T, old, now string, e upgradeEngine) {
	// Four followers put user 0 in pull mode.
	flags := append([]string{"--pull-threshold", "4"}, e.flags...)
	start := func(bin string, extra ...string) (*proc, *upClient) {
		t.Helper()
		p := startProcBin(t, bin, nil, append(append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...), extra...)...)
		t.Cleanup(func() { p.logs.dumpIfFailed(t) })
		return p, &upClient{t: t, base: "http://" + p.addr, logs: p.logs}
	}

	// The release, with data.
	p, c := start(old)
	const n = 6 // user 5 is new: no posts, follows nobody
	users := make([]upUser, n)
	for i := range users {
		users[i] = c.login(fmt.Sprintf("1390000%04d", i))
	}
	follows := map[int][]int{0: {1, 2, 3}, 1: {0, 2}, 2: {0}, 3: {0, 1, 2}, 4: {0, 1}}
	for i := range n {
		for _, j := range follows[i] {
			c.send("PUT", fmt.Sprintf("/v1/following/%d", users[j].id), users[i].token, nil)
		}
	}
	var posts []int64
	author := map[int64]int{}
	for round := range 3 {
		for i, k := range []int{3, 3, 2, 2, 1} { // posts per user
			if round < k {
				p := c.send("POST", "/v1/posts", users[i].token, map[string]any{
					"title": fmt.Sprintf("post %d of user %d", round, i), "content": fmt.Sprintf("what user %d says, %d", i, round)})
				id := int64(p.(map[string]any)["id"].(float64))
				posts = append(posts, id)
				author[id] = i
			}
		}
	}
	// posts: round 0 is posts[0:5] (users 0-4), round 1 posts[5:9], round 2 posts[9:11]
	for _, l := range [][2]int{{1, 0}, {1, 5}, {2, 0}, {0, 1}, {3, 2}, {4, 9}, {2, 6}} { // user, post index
		c.send("PUT", fmt.Sprintf("/v1/posts/%d/like", posts[l[1]]), users[l[0]].token, nil)
	}
	top := c.send("POST", fmt.Sprintf("/v1/posts/%d/comments", posts[0]), users[1].token, map[string]any{"text": "a first comment"})
	c.send("POST", fmt.Sprintf("/v1/posts/%d/comments", posts[0]), users[2].token, map[string]any{"text": "a reply", "reply_to": top.(map[string]any)["id"]})
	c.send("POST", fmt.Sprintf("/v1/posts/%d/comments", posts[1]), users[3].token, map[string]any{"text": "another"})
	c.send("PUT", fmt.Sprintf("/v1/mutes/%d", users[2].id), users[3].token, nil)
	c.send("PUT", "/v1/muted-words/says", users[4].token, nil) // matches every post but user 4's own
	// Every timeline complete: own posts, the followees' (none for user
	// 3 of the muted user 2, none for user 4 but its own).
	for i := range n {
		want := 0
		for _, id := range posts {
			a := author[id]
			switch {
			case a == i:
				want++
			case i == 4, i == 3 && a == 2:
			case slices.Contains(follows[i], a):
				want++
			}
		}
		waitFor(t, fmt.Sprintf("user %d's timeline of %d posts", i, want), func() bool { return len(c.scroll(users[i].token)) == want })
	}
	p.stop(t)

	// The release again, an API without workers: a post and a follow
	// whose jobs stay queued.
	p, c = start(old, "--workers", "0")
	c.send("PUT", fmt.Sprintf("/v1/following/%d", users[5].id), users[4].token, nil)
	last := c.send("POST", "/v1/posts", users[5].token, map[string]any{"title": "queued", "content": "in flight"})
	lastID := int64(last.(map[string]any)["id"].(float64))
	posts = append(posts, lastID)
	before := c.read(users, posts, nil)
	p.stop(t)

	// This feedd: it migrates, works the queued jobs and reads as before.
	p, c = start(now)
	for _, u := range users[4:] {
		waitFor(t, "the queued post in its follower's and its author's timelines", func() bool {
			s := c.scroll(u.token)
			return len(s) > 0 && s[0] == lastID
		})
	}
	recs := e.records(t)
	after := c.read(users, posts, before)
	for key, a := range before.pages {
		if key == "user 4: timeline page 0" || key == "user 4: compatible timeline page 0" ||
			key == "user 5: timeline page 0" || key == "user 5: compatible timeline page 0" {
			continue // the queued post is on top of these now: scrolls has them
		}
		if err := subset(a, after.pages[key]); err != nil {
			t.Errorf("%s after the upgrade: %v\nbefore: %s\nafter:  %s", key, err, a, after.pages[key])
		}
	}
	for i := range users {
		want := before.scrolls[i]
		if i >= 4 {
			want = append([]int64{lastID}, want...)
		}
		if got := after.scrolls[i]; !slices.Equal(got, want) {
			t.Errorf("user %d's timeline after the upgrade: %v, want %v", i, got, want)
		}
	}
	p.stop(t)

	// Again: nothing to do.
	p, c = start(now)
	if again := e.records(t); !reflect.DeepEqual(again, recs) {
		t.Errorf("a second start changed the record of migrations:\n%v\nwas\n%v", again, recs)
	}
	if got := c.scroll(users[0].token); !slices.Equal(got, before.scrolls[0]) {
		t.Errorf("user 0's timeline at a second start: %v, want %v", got, before.scrolls[0])
	}
	p.stop(t)

	// The release refuses the upgraded database, changing nothing. Its
	// start fails opening the database, on feed.OlderRefusal (sqlite's and
	// postgres's TestUpgradeFrom010 run its statements); feedd 0.1.0 then
	// panics closing a nil app instead of printing the error (its openApp),
	// and stops all the same.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, old, append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "off", "--log-format", "json"}, flags...)...)
	cmd.Env = append(os.Environ(), testServeEnv...)
	out, err := cmd.CombinedOutput()
	refused := strings.Contains(string(out), feed.OlderRefusal) ||
		upgradeFrom.version == "0.1.0" && strings.Contains(string(out), "main.(*app).close") && strings.Contains(string(out), "main.openApp")
	if err == nil || ctx.Err() != nil || !refused || strings.Contains(string(out), `"msg":"listening"`) {
		t.Errorf("feedd %s on the upgraded database: %v (%v), output:\n%s\nwant it to stop at start, refusing the database", upgradeFrom.version, err, ctx.Err(), out)
	}
	if again := e.records(t); !reflect.DeepEqual(again, recs) {
		t.Errorf("the refusal changed the record of migrations:\n%v\nwas\n%v", again, recs)
	}
	t.Logf("feedd %s's refusal: %.300s", upgradeFrom.version, bytes.TrimSpace(out))
}

// checkRecords: recs name every migration file in dir, each applied once,
// the baseline by the release upgraded from and the others by it or by
// this feedd.
func checkRecords(t *testing.T, file, dir string, recs []migrationRecord) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations in %s: %v, %v", dir, files, err)
	}
	var got, want []string
	for _, r := range recs {
		got = append(got, r.Name)
		if r.Release != upgradeFrom.version && (r.Release != feed.Release || filepath.Base(r.Name) == "001_baseline.sql") {
			t.Errorf("%s: %s recorded as applied by %s, want %s or, but for the baseline, %s", file, r.Name, r.Release, upgradeFrom.version, feed.Release)
		}
	}
	for _, f := range files {
		want = append(want, filepath.Base(dir)+"/"+filepath.Base(f))
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s's migrations after the upgrade: %v, want every one of the source: %v", file, got, want)
	}
}

func sqliteRecords(t *testing.T, path, dir string) []migrationRecord {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, release, applied_at FROM feedd_schema_migrations ORDER BY name`)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rows.Close()
	var recs []migrationRecord
	for rows.Next() {
		r := migrationRecord{File: filepath.Base(path)}
		if err := rows.Scan(&r.Name, &r.Release, &r.AppliedAt); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, filepath.Base(path), dir, recs)
	return recs
}

func postgresRecords(t *testing.T, url, dir string) []migrationRecord {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	rows, err := conn.Query(t.Context(), `SELECT name, release, (extract(epoch FROM applied_at) * 1000)::bigint
		FROM feedd_schema_migrations ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (migrationRecord, error) {
		m := migrationRecord{File: "postgres"}
		return m, r.Scan(&m.Name, &m.Release, &m.AppliedAt)
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "the database", dir, recs)
	return recs
}

// upClient is a client of the native API that keeps what it reads as
// decoded JSON, so that what one release answered can be compared with
// what another answers.
type upClient struct {
	t    *testing.T
	base string
	logs *logBuffer
}

type upUser struct {
	id    int64
	token string
}

// send makes a request that must succeed (2xx) and returns its decoded
// body (nil when empty).
func (c *upClient) send(method, path, token string, body any) any {
	c.t.Helper()
	v, _ := c.sendRaw(method, path, token, body)
	return v
}

func (c *upClient) sendRaw(method, path, token string, body any) (any, []byte) {
	c.t.Helper()
	rd := bodyReader(body)
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	var v any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return v, raw
}

func (c *upClient) login(phone string) upUser {
	c.t.Helper()
	c.send("POST", "/v1/auth/code", "", map[string]string{"phone": phone})
	code := c.logs.wait(c.t, "login code", map[string]string{"phone": phone})["code"]
	s := c.send("POST", "/v1/auth/login", "", map[string]any{"phone": phone, "code": code}).(map[string]any)
	u := upUser{token: s["token"].(string)}
	u.id = int64(c.send("GET", "/v1/me", u.token, nil).(map[string]any)["id"].(float64))
	return u
}

// scroll returns the ids of token's whole timeline, newest first.
func (c *upClient) scroll(token string) []int64 {
	c.t.Helper()
	var ids []int64
	cursor := ""
	for range 1000 {
		page := c.send("GET", "/v1/timeline?limit=3"+cursor, token, nil).(map[string]any)
		for _, p := range page["data"].([]any) {
			ids = append(ids, int64(p.(map[string]any)["id"].(float64)))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			return ids
		}
		cursor = "&cursor=" + next
	}
	c.t.Fatal("the timeline did not end")
	return nil
}

// upReads is what read saw: each page by what was asked, and each user's
// timeline as ids.
type upReads struct {
	pages   map[string]string
	scrolls [][]int64
	cursors map[string][]string // pages asked for after the first: the cursor (or query) of each
}

// read reads, as each user, the timeline of both APIs page by page, the
// profile, every post, its comments, and the notifications page by page.
// Given what an earlier feedd read (prev), it asks for the pages after the
// first with that feedd's cursors, which must still work.
func (c *upClient) read(users []upUser, posts []int64, prev *upReads) *upReads {
	c.t.Helper()
	r := &upReads{pages: map[string]string{}, cursors: map[string][]string{}}
	get := func(key, path, token string) any {
		v, raw := c.sendRaw("GET", path, token, nil)
		r.pages[key] = string(raw)
		return v
	}
	// pages reads the pages of a listing: the first at first, the later
	// ones with cursors: the next_cursor of the page before, or prev's.
	pages := func(key, first, token string, next func(page any) string) {
		path, i := first, 0
		for ; path != ""; i++ {
			page := get(fmt.Sprintf("%s page %d", key, i), path, token)
			n := next(page)
			if prev != nil {
				n = ""
				if cs := prev.cursors[key]; i < len(cs) {
					n = cs[i]
				}
			} else if n != "" {
				r.cursors[key] = append(r.cursors[key], n)
			}
			path = n
			if i > 1000 {
				c.t.Fatalf("%s did not end", key)
			}
		}
	}
	v1Next := func(base string) func(any) string {
		return func(page any) string {
			if n, _ := page.(map[string]any)["next_cursor"].(string); n != "" {
				return base + "&cursor=" + n
			}
			return ""
		}
	}
	for i, u := range users {
		r.scrolls = append(r.scrolls, c.scroll(u.token))
		get(fmt.Sprintf("user %d: me", i), "/v1/me", u.token)
		get(fmt.Sprintf("user %d: unread notifications", i), "/v1/notifications/unread-count", u.token)
		pages(fmt.Sprintf("user %d: notifications", i), "/v1/notifications?limit=2", u.token, v1Next("/v1/notifications?limit=2"))
		pages(fmt.Sprintf("user %d: timeline", i), "/v1/timeline?limit=3", u.token, v1Next("/v1/timeline?limit=3"))
		first := fmt.Sprintf("/blog/of/follow?lastId=%d&size=3", time.Now().Add(time.Hour).UnixMilli())
		pages(fmt.Sprintf("user %d: compatible timeline", i), first, u.token, func(page any) string {
			data, _ := page.(map[string]any)["data"].(map[string]any)
			if data == nil || len(data["list"].([]any)) == 0 {
				return ""
			}
			return fmt.Sprintf("/blog/of/follow?lastId=%.0f&offset=%.0f&size=3", data["minTime"], data["offset"])
		})
	}
	for i, u := range users {
		for _, id := range posts {
			get(fmt.Sprintf("post %d as user %d", id, i), fmt.Sprintf("/v1/posts/%d", id), u.token)
		}
		get(fmt.Sprintf("user %d as user 0", i), fmt.Sprintf("/v1/users/%d", u.id), users[0].token)
	}
	for _, id := range posts {
		pages(fmt.Sprintf("comments of post %d", id), fmt.Sprintf("/v1/posts/%d/comments?limit=1", id), users[0].token,
			v1Next(fmt.Sprintf("/v1/posts/%d/comments?limit=1", id)))
	}
	return r
}

// subset reports how b fails to hold a: every member of an object of a
// with an equal value in b (b may have more), arrays of the same length
// element by element; next_cursor, an opaque value, only present or null
// alike.
func subset(a, b string) error {
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return subsetOf("", va, vb)
}

func subsetOf(at string, a, b any) error {
	switch a := a.(type) {
	case map[string]any:
		m, ok := b.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object became %T", at, b)
		}
		for k, v := range a {
			w, ok := m[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", at, k)
			}
			if k == "next_cursor" {
				if (v == nil) != (w == nil) {
					return fmt.Errorf("%s.%s: %v, was %v", at, k, w, v)
				}
				continue
			}
			if err := subsetOf(at+"."+k, v, w); err != nil {
				return err
			}
		}
	case []any:
		l, ok := b.([]any)
		if !ok || len(l) != len(a) {
			return fmt.Errorf("%s: %d items became %v", at, len(a), b)
		}
		for i := range a {
			if err := subsetOf(fmt.Sprintf("%s[%d]", at, i), a[i], l[i]); err != nil {
				return err
			}
		}
	default:
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("%s: %v, was %v", at, b, a)
		}
	}
	return nil
}

// TestNewerDatabaseRefused: feedd started on a database that a newer feedd
// migrated (here: a migration of feedd 9.1.0 recorded) stops at start with
// an error naming that release, and serves nothing.
func TestNewerDatabaseRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := run(t.Context(), []string{"migrate", "--data", dir, "--log-level", "error"}, env(), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO feedd_schema_migrations (name, release, applied_at) VALUES ('migrations/999_later.sql', '9.1.0', 1)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	err = run(t.Context(), []string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--admin-addr", "off"}, env(), io.Discard, &logs)
	if err == nil || !strings.Contains(err.Error(), "feedd.db was upgraded by feedd 9.1.0, newer than this feedd ("+feed.Release+")") {
		t.Fatalf("feedd serve on a database of feedd 9.1.0 = %v, want it refused by name\n%s", err, logs.String())
	}
}
