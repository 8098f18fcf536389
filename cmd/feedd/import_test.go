package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/hmdp"
	"github.com/feedd/feedd/internal/bench"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/sqlite"
)

// hmdpSource is a running instance of the tutorial's service for a test:
// a MySQL database of its own with the tutorial's schema (hmdp.Schema), and
// its Redis keys under a prefix of the test's own (given to the import as
// --redis-key-prefix).
type hmdpSource struct {
	dsn    string
	db     *sql.DB
	redis  string // URL
	prefix string
	rdb    *goredis.Client
}

// newHMDPSource makes the source, with the tutorial's tables when schema
// is set (else an empty database).
func newHMDPSource(t *testing.T, schema bool) *hmdpSource {
	t.Helper()
	s := &hmdpSource{dsn: testenv.MySQLDSN(t)}
	s.redis, s.prefix = testenv.RedisURL(t)
	var err error
	if s.db, err = sql.Open("mysql", s.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.db.Close() })
	for _, stmt := range strings.Split(hmdp.Schema, ";") {
		if schema && strings.Contains(stmt, "CREATE") {
			s.exec(t, stmt)
		}
	}
	opts, err := goredis.ParseURL(s.redis)
	if err != nil {
		t.Fatal(err)
	}
	s.rdb = goredis.NewClient(opts)
	t.Cleanup(func() {
		bench.DeleteKeys(context.Background(), s.rdb, s.prefix)
		s.rdb.Close()
	})
	return s
}

func (s *hmdpSource) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := s.db.Exec(q, args...); err != nil {
		t.Fatalf("%.60s: %v", q, err)
	}
}

// zadd adds members with scores (ms) to the tutorial's sorted set key.
func (s *hmdpSource) zadd(t *testing.T, key string, members map[string]int64) {
	t.Helper()
	var zs []goredis.Z
	for m, sc := range members {
		zs = append(zs, goredis.Z{Member: m, Score: float64(sc)})
	}
	if err := s.rdb.ZAdd(context.Background(), s.prefix+key, zs...).Err(); err != nil {
		t.Fatal(err)
	}
}

// twelveImages is an image list over feedd's 9.
var twelveImages = strings.TrimSuffix(strings.Repeat("/imgs/p.jpg,", 12), ",")

// hmdpBase is the fixture's clock: row i's time is hmdpBase + i minutes.
var hmdpBase = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(minutes int) int64 { return hmdpBase.Add(time.Duration(minutes) * time.Minute).Unix() }

func atMS(minutes int) int64 { return at(minutes) * 1000 }

// fill loads the fixture: a small community, and one row of every kind
// the import skips or cleans (docs/operations.md, "Moving from hmdp").
// Some columns are made VARBINARY, as deployments did to store emoji in a
// utf8 (3-byte) database, so that bytes that are not UTF-8 can be stored.
func (s *hmdpSource) fill(t *testing.T) {
	t.Helper()
	s.exec(t, "ALTER TABLE tb_user MODIFY nick_name VARBINARY(32) NULL DEFAULT ''")
	s.exec(t, "ALTER TABLE tb_blog MODIFY content VARBINARY(2048) NOT NULL")
	s.exec(t, "ALTER TABLE tb_blog_comments MODIFY content VARBINARY(4096) NOT NULL")
	user := func(id int, phone, nick, icon string, minute int) {
		s.exec(t, "INSERT INTO tb_user (id, phone, password, nick_name, icon, create_time, update_time) VALUES (?, ?, 'x', ?, ?, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
			id, phone, nick, icon, at(minute), at(minute))
	}
	user(1, "13800000001", "Alice", "/imgs/icons/a.jpg", 1)
	user(2, "13800000002", "Bob", "", 2)
	user(3, "13800000003", "Carol", "https://cdn.example/c.png", 3)
	user(4, "13800000004", "Dave\u202e", "javascript:alert(1)", 4) // control_chars, bad_image
	user(5, "13800000005", "Eve", "", 5)                           // duplicate_phone: feedd has the phone
	user(6, "13800000006", "Frank", "", 6)                         // id_taken: feedd has user 6
	user(7, "13800000007", "caf\xe9", "", 7)                       // invalid_utf8
	s.exec(t, "INSERT INTO tb_user_info (user_id, city, introduce) VALUES (1, 'Hangzhou', 'I like noodles'), (2, 'Shanghai', NULL), (99, 'Nowhere', 'no such user')")

	post := func(id, author int, title, images, content string, liked, minute int) {
		s.exec(t, "INSERT INTO tb_blog (id, shop_id, user_id, title, images, content, liked, comments, create_time, update_time) VALUES (?, 1, ?, ?, ?, ?, ?, 0, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
			id, author, title, images, content, liked, at(minute), at(minute))
	}
	post(10, 1, "Hello", "/imgs/a.jpg,/imgs/b.jpg", "first note", 5, 10)
	post(11, 2, "<b>Bold</b> move", "", "line one<br>line two &amp; more", 1, 11) // markup
	post(12, 3, "Album", twelveImages, "x", 0, 12)                                // too_long: 12 images
	post(13, 1, "Pics", "/ok.jpg,javascript:alert(1)", "two pictures", 0, 13)     // bad_image
	post(14, 99, "Orphan", "", "by nobody", 1, 14)                                // missing_author
	post(15, 6, "Squatted", "", "by a user skipped", 0, 15)                       // missing_author (user 6 is feedd's)
	post(16, 2, "Bytes", "", "bad \xff byte", 0, 16)                              // invalid_utf8
	post(17, 3, "Ring\a", "", "bell", 0, 17)                                      // control_chars
	post(18, 1, "Taken", "", "feedd has post 18", 1, 18)                          // id_taken

	follow := func(id, a, b, minute int) {
		s.exec(t, "INSERT INTO tb_follow (id, user_id, follow_user_id, create_time) VALUES (?, ?, ?, FROM_UNIXTIME(?))", id, a, b, at(minute))
	}
	follow(1, 1, 2, 20)
	follow(2, 1, 3, 21)
	follow(3, 2, 1, 22)
	follow(4, 3, 1, 23)
	follow(5, 1, 1, 24)  // self_follow
	follow(6, 1, 99, 25) // missing_user
	follow(7, 1, 2, 26)  // duplicate
	follow(8, 4, 1, 27)
	follow(9, 6, 1, 28) // missing_user: user 6 is feedd's
	follow(10, 2, 3, 29)

	comment := func(id, user, blog, parent, answer int, content string, liked, status, minute int) {
		s.exec(t, "INSERT INTO tb_blog_comments (id, user_id, blog_id, parent_id, answer_id, content, liked, status, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
			id, user, blog, parent, answer, content, liked, status, at(minute), at(minute+1))
	}
	comment(1, 2, 10, 0, 0, "Looks great", 3, 0, 40)                      // a thread
	comment(2, 3, 10, 1, 1, "Agreed", 0, 0, 41)                           // a reply
	comment(3, 1, 10, 1, 2, "Thanks both", 1, 0, 42)                      // a reply to a reply, in the thread
	comment(4, 3, 10, 0, 0, "Second thread", 0, 1, 43)                    // reported
	comment(5, 4, 10, 0, 0, "Spam spam", 0, 2, 44)                        // hidden
	comment(6, 2, 14, 0, 0, "on a post not imported", 0, 0, 45)           // missing_post
	comment(7, 99, 10, 0, 0, "by nobody", 0, 0, 46)                       // missing_user
	comment(8, 2, 10, 99, 99, "a reply to nothing", 0, 0, 47)             // missing_thread
	comment(9, 2, 11, 1, 1, "in a thread of another post", 0, 0, 48)      // missing_thread
	comment(10, 3, 10, 2, 2, "parent_id names a reply", 0, 0, 49)         // missing_thread
	comment(11, 1, 11, 0, 0, "caf\xe9 ok", 0, 0, 50)                      // invalid_utf8
	comment(12, 2, 11, 11, 11, "<b>nice</b> &amp; <br>true", 0, 0, 51)    // markup
	comment(13, 3, 10, 1, 4, "answer_id in another thread", 0, 0, 52)     // bad_answer: answers 1
	comment(14, 1, 11, 0, 0, "<p></p>", 0, 0, 53)                         // empty_text
	comment(15, 1, 10, 0, 0, "feedd has comment 15", 0, 0, 54)            // id_taken
	comment(16, 1, 12, 0, 0, strings.Repeat("x", 1200), 0, 0, 55)         // too_long
	comment(17, 2, 12, 0, 0, "a status of another service", 0, 7, 56)     // bad_status: hidden
	comment(18, 2, 10, 15, 15, "a reply in feedd's own thread", 0, 0, 57) // missing_thread

	s.zadd(t, "blog:liked:10", map[string]int64{"3": atMS(31), "2": atMS(30)})
	s.zadd(t, "blog:liked:11", map[string]int64{"1": atMS(32), "99": atMS(33)}) // missing_user
	s.zadd(t, "blog:liked:12", map[string]int64{"abc": atMS(34)})               // malformed
	s.zadd(t, "blog:liked:14", map[string]int64{"1": atMS(35)})                 // missing_post
	s.zadd(t, "blog:liked:18", map[string]int64{"2": atMS(36)})                 // missing_post (feedd's post 18)
	// The tutorial's feeds: what each follower was pushed.
	s.zadd(t, "feed:1", map[string]int64{"11": atMS(11), "16": atMS(16), "14": atMS(14), "x": 1})
	s.zadd(t, "feed:2", map[string]int64{"10": atMS(10), "13": atMS(13)})
}

// importTarget is a store feedd import writes to and feedd serve then
// serves: the embedded SQLite, or PostgreSQL with the inboxes in Redis.
type importTarget struct {
	name  string
	args  []string                                      // the store's flags, for import and serve alike
	exec  func(t *testing.T, q string, args ...any)     // SQL on the store (not its inboxes)
	count func(t *testing.T, q string, args ...any) int // a count on the store, inboxes included
}

func sqliteTarget(t *testing.T) *importTarget {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	idb, err := sqlite.OpenInbox(ctx, dir, sqlite.Options{}, db)
	if err != nil {
		t.Fatal(err)
	}
	idb.Close()
	t.Cleanup(func() { db.Close() })
	return &importTarget{name: "sqlite", args: []string{"--data", dir},
		exec: func(t *testing.T, q string, args ...any) {
			t.Helper()
			if _, err := db.Write.Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		},
		count: func(t *testing.T, q string, args ...any) int {
			t.Helper()
			return count(t, openRead(t, dir), q, args...)
		}}
}

// postgresTarget is PostgreSQL; with redisInboxes, the inboxes are in
// Redis under a prefix of the test's own.
func postgresTarget(t *testing.T, redisInboxes bool) *importTarget {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	args := []string{"--database-url", url}
	name := "postgres"
	if redisInboxes {
		ru, prefix := testenv.RedisURL(t)
		args = append(args, "--redis-url", ru, "--redis-prefix", prefix)
		name += "+redis"
		t.Cleanup(func() {
			opts, _ := goredis.ParseURL(ru)
			rdb := goredis.NewClient(opts)
			bench.DeleteKeys(context.Background(), rdb, prefix)
			rdb.Close()
		})
	}
	pg := func(q string) string { return regexp.MustCompile(`\?`).ReplaceAllStringFunc(q, counter()) }
	return &importTarget{name: name, args: args,
		exec: func(t *testing.T, q string, args ...any) {
			t.Helper()
			if _, err := pool.Exec(ctx, pg(q), args...); err != nil {
				t.Fatal(err)
			}
		},
		count: func(t *testing.T, q string, args ...any) int {
			t.Helper()
			var n int
			if err := pool.QueryRow(ctx, pg(q), args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}}
}

// counter numbers the ? placeholders of one query $1, $2, ...
func counter() func(string) string {
	n := 0
	return func(string) string { n++; return "$" + strconv.Itoa(n) }
}

// importReport is the report feedd import printed, as a reader takes it.
type importReport struct {
	text   string
	phases map[string][5]int64 // source (-1: "-"), read, imported, skipped, cleaned
	// skipped and cleaned: phase -> reason -> rows
	skipped, cleaned map[string]map[string]int64
}

var reportRow = regexp.MustCompile(`^(\S+)\s+(-|\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-|\d+)$`)

func parseImportReport(t *testing.T, text string) importReport {
	t.Helper()
	r := importReport{text: text, phases: map[string][5]int64{}, skipped: map[string]map[string]int64{}, cleaned: map[string]map[string]int64{}}
	var section map[string]map[string]int64
	for _, line := range strings.Split(text, "\n") {
		if m := reportRow.FindStringSubmatch(line); m != nil {
			var v [5]int64
			for i := range 5 {
				v[i], _ = strconv.ParseInt(m[2+i], 10, 64)
				if m[2+i] == "-" {
					v[i] = -1
				}
			}
			r.phases[m[1]] = v
			continue
		}
		switch {
		case line == "skipped:":
			section = r.skipped
		case line == "cleaned:":
			section = r.cleaned
		case strings.HasPrefix(line, "  ") && section != nil:
			phase, list, _ := strings.Cut(strings.TrimSpace(line), ": ")
			section[phase] = map[string]int64{}
			for _, part := range strings.Split(list, ", ") {
				reason, n, _ := strings.Cut(part, " ")
				section[phase][reason], _ = strconv.ParseInt(n, 10, 64)
			}
		default:
			section = nil
		}
	}
	return r
}

// runImport runs feedd import hmdp in this process with the source and the
// target's flags, and returns its report and error.
func runImportCmd(t *testing.T, src *hmdpSource, target *importTarget, extra ...string) (importReport, string, error) {
	t.Helper()
	args := append([]string{"import", "hmdp", "--mysql", src.dsn, "--redis", src.redis, "--redis-key-prefix", src.prefix, "--log-format", "json"}, target.args...)
	args = append(args, extra...)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := run(ctx, args, func(string) string { return "" }, &stdout, &stderr)
	return parseImportReport(t, stdout.String()), stderr.String(), err
}

// squat gives the target rows of its own before the import: a user with
// source user 5's phone, one with source user 6's id, a post with source
// post 18's id, and a comment with source comment 15's id on post 10, as
// a feedd that served before (or during) a move would have: a run after
// the first one finds feedd's own comments on the posts it imported.
func squat(t *testing.T, target *importTarget) {
	target.exec(t, "INSERT INTO users (id, phone, nick_name, created_at, active_at) VALUES (900000, '13800000005', 'early bird', 0, 0)")
	target.exec(t, "INSERT INTO users (id, phone, nick_name, created_at, active_at) VALUES (6, '13900000006', 'squatter', 0, 0)")
	target.exec(t, "INSERT INTO posts (id, user_id, title, content, created_at, updated_at) VALUES (18, 900000, 'feedd''s own', 'x', 1, 1)")
	target.exec(t, "INSERT INTO comments (id, post_id, user_id, content, created_at, updated_at) VALUES (15, 10, 900000, 'feedd''s own comment', 1, 1)")
}

// TestImportHMDP imports the fixture into each engine and reads it back
// through both APIs of the real server: the report's counts of every
// skip and clean, the rows cleaned, a re-run that adds nothing, and the
// imported users' feeds, likes, profiles and logins.
func TestImportHMDP(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) *importTarget{
		sqliteTarget,
		func(t *testing.T) *importTarget { return postgresTarget(t, true) },
	} {
		target := mk(t)
		t.Run(target.name, func(t *testing.T) {
			src := newHMDPSource(t, true)
			src.fill(t)
			squat(t, target)

			// A dry run reports the source and writes nothing.
			dry, _, err := runImportCmd(t, src, target, "--dry-run")
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, dry.text)
			}
			// Into an empty store: comments 15 and 18 would come over.
			if !strings.Contains(dry.text, "dry run") || dry.phases["tb_user"][2] != 7 || dry.phases["tb_follow"][1] != 10 ||
				dry.phases["tb_blog_comments"] != [5]int64{18, 18, 12, 6, 5} {
				t.Errorf("dry run report:\n%s", dry.text)
			}
			if n := target.count(t, "SELECT count(*) FROM users"); n != 2 {
				t.Fatalf("the dry run wrote: %d users", n)
			}

			rep, logs, err := runImportCmd(t, src, target, "--strict")
			if err == nil || !strings.Contains(err.Error(), "--strict") {
				t.Errorf("--strict with rows skipped: err %v", err)
			}
			want := map[string][5]int64{
				"tb_user":    {7, 7, 5, 2, 3},
				"tb_blog":    {9, 9, 6, 3, 5},
				"tb_follow":  {10, 10, 6, 4, 0},
				"blog:liked": {-1, 7, 3, 4, 0},
				// Comments of the skipped post and user, three replies
				// outside a thread of theirs, one with no text once
				// cleaned; comment 18's thread is feedd's own 15.
				"tb_blog_comments": {18, 18, 10, 8, 5},
			}
			for phase, w := range want {
				if got := rep.phases[phase]; got != w {
					t.Errorf("%s: source, read, imported, skipped, cleaned = %v, want %v", phase, got, w)
				}
			}
			wantSkipped := map[string]map[string]int64{
				"tb_user":    {feed.SkipDuplicatePhone: 1, feed.SkipIDTaken: 1},
				"tb_blog":    {hmdp.SkipMissingAuthor: 2, feed.SkipIDTaken: 1},
				"tb_follow":  {hmdp.SkipSelfFollow: 1, hmdp.SkipMissingUser: 2, feed.SkipDuplicate: 1},
				"blog:liked": {hmdp.SkipMissingUser: 1, hmdp.SkipMalformed: 1, hmdp.SkipMissingPost: 2},
				"tb_blog_comments": {hmdp.SkipMissingPost: 1, hmdp.SkipMissingUser: 1, hmdp.SkipMissingThread: 4, hmdp.SkipEmptyText: 1,
					feed.SkipIDTaken: 1},
			}
			wantCleaned := map[string]map[string]int64{
				"tb_user": {hmdp.CleanControl: 1, hmdp.CleanBadImage: 1, hmdp.CleanInvalidUTF8: 1},
				"tb_blog": {hmdp.CleanMarkup: 1, hmdp.CleanTooLong: 1, hmdp.CleanBadImage: 1, hmdp.CleanInvalidUTF8: 1, hmdp.CleanControl: 1},
				"tb_blog_comments": {hmdp.CleanInvalidUTF8: 1, hmdp.CleanMarkup: 1, hmdp.CleanBadAnswer: 1, hmdp.CleanTooLong: 1,
					hmdp.CleanBadStatus: 1},
			}
			for phase, w := range wantSkipped {
				if got := rep.skipped[phase]; fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s skipped %v, want %v", phase, got, w)
				}
			}
			for phase, w := range wantCleaned {
				if got := rep.cleaned[phase]; fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s cleaned %v, want %v", phase, got, w)
				}
			}
			if !strings.Contains(logs, `"msg":"row skipped"`) || !strings.Contains(logs, `"reason":"duplicate_phone"`) {
				t.Errorf("no sample of the skipped rows in the log")
			}
			if t.Failed() {
				t.Fatalf("report:\n%s", rep.text)
			}

			// Cleaned as docs/operations.md says.
			for _, c := range []struct {
				q    string
				want int
			}{
				{"SELECT count(*) FROM posts WHERE id = 11 AND title = 'Bold move' AND content = 'line one\nline two & more'", 1},
				{"SELECT count(*) FROM posts WHERE id = 13 AND images = '/ok.jpg'", 1},
				{"SELECT count(*) FROM posts WHERE id = 16 AND content = 'bad \uFFFD byte'", 1},
				{"SELECT count(*) FROM posts WHERE id = 17 AND title = 'Ring'", 1},
				{"SELECT count(*) FROM posts WHERE id = 18 AND title = 'feedd''s own'", 1},
				{"SELECT count(*) FROM users WHERE id = 4 AND nick_name = 'Dave' AND icon = ''", 1},
				{"SELECT count(*) FROM users WHERE id = 7 AND nick_name = 'caf\uFFFD'", 1},
				{"SELECT count(*) FROM users WHERE id = 6 AND nick_name = 'squatter'", 1},
				{"SELECT count(*) FROM users WHERE phone = '13800000005'", 1},
				{"SELECT count(*) FROM comments WHERE id = 11 AND content = 'caf\uFFFD ok'", 1},
				{"SELECT count(*) FROM comments WHERE id = 12 AND content = 'nice & \ntrue' AND parent_id = 11 AND answer_id = 11", 1},
				{"SELECT count(*) FROM comments WHERE id = 13 AND parent_id = 1 AND answer_id = 1", 1},
				{"SELECT count(*) FROM comments WHERE id = 3 AND parent_id = 1 AND answer_id = 2 AND liked = 1", 1},
				{"SELECT count(*) FROM comments WHERE id = 15 AND post_id = 10 AND content = 'feedd''s own comment' AND replies = 0", 1},
				{"SELECT count(*) FROM comments WHERE id = 16 AND length(content) = 1000", 1},
				{"SELECT count(*) FROM comments WHERE status = 1", 1},
				{"SELECT count(*) FROM comments WHERE status = 2 AND id IN (5, 17)", 2},
			} {
				if n := target.count(t, c.q); n != c.want {
					t.Errorf("%s: %d", c.q, n)
				}
			}
			if n := target.count(t, "SELECT count(*) FROM posts WHERE id = 12 AND images = ?", strings.TrimSuffix(strings.Repeat("/imgs/p.jpg,", 9), ",")); n != 1 {
				t.Errorf("post 12 does not keep its first 9 images")
			}

			// A re-run finds nothing new, writes nothing, and reports the same.
			tables := "SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM posts) + (SELECT count(*) FROM follows) + (SELECT count(*) FROM likes) + (SELECT count(*) FROM comments)"
			before := target.count(t, tables)
			again, _, err := runImportCmd(t, src, target)
			if err != nil {
				t.Fatal(err)
			}
			for phase, w := range want {
				if got := again.phases[phase]; got != w {
					t.Errorf("re-run: %s %v, want %v", phase, got, w)
				}
			}
			if !strings.Contains(again.text, "tb_follow") || target.count(t, tables) != before {
				t.Errorf("the re-run wrote rows:\n%s", again.text)
			}

			s := startServer(t, target.args...)
			checkImported(t, s)
		})
	}
}

// checkImported reads the fixture's import through both APIs.
func checkImported(t *testing.T, s *server) {
	t.Helper()
	// A fresh login by an imported phone lands on the imported account.
	alice := s.login("13800000001")
	var me struct {
		ID       int64  `json:"id"`
		NickName string `json:"nickName"`
		Icon     string `json:"icon"`
	}
	s.must("GET", "/user/me", alice, nil, &me)
	if me.ID != 1 || me.NickName != "Alice" || me.Icon != "/imgs/icons/a.jpg" {
		t.Fatalf("login as 13800000001: %+v, want the imported user 1", me)
	}
	var info struct {
		City, Introduce string
		Fans, Followee  int
	}
	s.must("GET", "/user/info/1", alice, nil, &info)
	if info.City != "Hangzhou" || info.Introduce != "I like noodles" || info.Fans != 3 || info.Followee != 2 {
		t.Errorf("/user/info/1: %+v", info)
	}
	// Alice's feed: her posts and those of Bob and Carol, newest first.
	feedIDs := ids(s.scrollAll(alice, 4))
	if want := []int64{17, 16, 13, 12, 11, 10}; !slices.Equal(feedIDs, want) {
		t.Errorf("Alice's feed %v, want %v", feedIDs, want)
	}
	var b blog
	s.must("GET", "/blog/10", alice, nil, &b)
	if b.Liked == nil || *b.Liked != 2 || b.IsLike == nil || *b.IsLike || b.Name != "Alice" || b.Images == nil || *b.Images != "/imgs/a.jpg,/imgs/b.jpg" {
		t.Errorf("/blog/10: %+v", b)
	}
	if tm, err := time.Parse(time.RFC3339, b.Created); err != nil || !tm.Equal(hmdpBase.Add(10*time.Minute)) {
		t.Errorf("/blog/10 createTime %s, want %s", b.Created, hmdpBase.Add(10*time.Minute))
	}
	var likers []struct{ ID int64 }
	s.must("GET", "/blog/likes/10", alice, nil, &likers)
	if len(likers) != 2 || likers[0].ID != 2 || likers[1].ID != 3 {
		t.Errorf("/blog/likes/10: %+v, want users 2 then 3, earliest first", likers)
	}
	s.must("GET", "/blog/11", alice, nil, &b)
	if b.IsLike == nil || !*b.IsLike || *b.Liked != 1 {
		t.Errorf("/blog/11 for Alice: %+v, want liked by her", b)
	}
	if r := s.do("GET", "/blog/14", alice, nil); r.Success {
		t.Errorf("/blog/14 (skipped) answers %s", r.Raw)
	}
	var followsBob bool
	s.must("GET", "/follow/or/not/2", alice, nil, &followsBob)
	if !followsBob {
		t.Error("Alice does not follow Bob")
	}

	// The native API sees the same.
	c := newV1Client(t, s)
	tok := c.login("13800000001")
	if me := c.me(tok); me.ID != 1 || me.Phone != "13800000001" || me.FollowerCount != 3 || me.FollowingCount != 2 {
		t.Errorf("/v1/me: %+v", me)
	}
	var page apiPage[apiPost]
	c.want(200, "GET", "/v1/timeline?limit=100", tok, nil, &page)
	var v1IDs []int64
	for _, p := range page.Data {
		v1IDs = append(v1IDs, p.ID)
	}
	if !slices.Equal(v1IDs, feedIDs) {
		t.Errorf("/v1/timeline %v, compatible feed %v", v1IDs, feedIDs)
	}
	var prof apiProfile
	c.want(200, "GET", "/v1/users/{id}", tok, nil, &prof, 3)
	if prof.NickName != "Carol" || prof.Icon != "https://cdn.example/c.png" || !prof.FollowedByMe || prof.FollowerCount != 2 {
		t.Errorf("/v1/users/3: %+v", prof)
	}
	var post apiPost
	c.want(200, "GET", "/v1/posts/{id}", tok, nil, &post, 12)
	if len(post.Images) != feed.MaxImageItems || post.Author.ID != 3 || post.Title != "Album" {
		t.Errorf("/v1/posts/12: %+v", post)
	}

	checkImportedComments(t, s, c, tok)

	// feedd's own ids continue above the imported ones.
	var id int64
	s.must("POST", "/blog", alice, map[string]any{"title": "after the move", "content": "hello from feedd"}, &id)
	if id <= 18 {
		t.Errorf("a new post got id %d, not above the imported ones", id)
	}
	if cm := c.addComment(tok, 10, "after the move", 1); cm.ID <= 17 || cm.ParentID == nil || *cm.ParentID != 1 {
		t.Errorf("a new reply %+v: its id not above the imported 17, or not in thread 1", cm)
	}
	newcomer := s.me(s.login("13900000100"))
	if newcomer <= 7 || newcomer == 900000 || newcomer == 6 {
		t.Errorf("a new user got id %d", newcomer)
	}
}

// checkImportedComments reads the fixture's comments through both APIs,
// as user 1 (tok) and user 7, who took no part in them.
func checkImportedComments(t *testing.T, s *server, c *v1Client, tok string) {
	t.Helper()
	other := c.login("13800000007")
	var post apiPost
	c.want(200, "GET", "/v1/posts/{id}", tok, nil, &post, 10)
	var b blog
	s.must("GET", "/blog/10", s.login("13800000001"), nil, &b)
	// Post 10 has comments 1, 2, 3, 4, 5 and 13 (hidden ones count), and
	// feedd's own 15.
	if post.CommentCount != 7 || b.Comments == nil || *b.Comments != 7 {
		t.Errorf("post 10: comment_count %d, /blog/10 comments %v, want 7", post.CommentCount, b.Comments)
	}
	// Comment 5 is hidden; 4, reported, is shown until a moderator decides.
	for order, want := range map[string][]int64{"new": {4, 1, 15}, "top": {1, 4, 15}} {
		list := c.comments(other, 10, order, 10)
		if got := apiCommentIDs(list); !slices.Equal(got, want) {
			t.Fatalf("%s comments of post 10: %v, want %v", order, got, want)
		}
		th := list[slices.IndexFunc(list, func(c apiComment) bool { return c.ID == 1 })]
		if th.ReplyCount != 3 || th.LikeCount != 3 || th.Author == nil || th.Author.ID != 2 || th.Text != "Looks great" ||
			!th.CreatedAt.Equal(hmdpBase.Add(40*time.Minute)) || !slices.Equal(apiCommentIDs(th.Replies), []int64{2, 3}) {
			t.Errorf("thread 1: %+v", th)
		}
		if r := th.Replies[1]; r.ReplyTo == nil || r.ReplyTo.CommentID != 2 || r.ReplyTo.User == nil || r.ReplyTo.User.ID != 3 {
			t.Errorf("comment 3, a reply to a reply: %+v", r)
		}
	}
	var replies apiPage[apiComment]
	c.want(200, "GET", "/v1/comments/{id}/replies?limit=10", other, nil, &replies, 1)
	if got := apiCommentIDs(replies.Data); !slices.Equal(got, []int64{2, 3, 13}) {
		t.Fatalf("replies of comment 1: %v, want 2, 3, 13", got)
	}
	if r := replies.Data[2]; r.ReplyTo == nil || r.ReplyTo.CommentID != 1 || r.Text != "answer_id in another thread" {
		t.Errorf("comment 13, whose answer_id was in another thread: %+v, want it answering 1", r)
	}
	list := c.comments(other, 11, "new", 10)
	if len(list) != 1 || list[0].ID != 11 || list[0].Text != "caf\uFFFD ok" || len(list[0].Replies) != 1 || list[0].Replies[0].Text != "nice & \ntrue" {
		t.Errorf("comments of post 11: %+v", list)
	}
	// Comment 17's status was none of the tutorial's: hidden.
	if list := c.comments(other, 12, "new", 10); len(list) != 1 || list[0].ID != 16 || len([]rune(list[0].Text)) != feed.MaxCommentText {
		t.Errorf("comments of post 12: %v", apiCommentIDs(list))
	}
	// The moderation list has the reported and the hidden ones.
	body := s.adminCall("GET", "/admin/comments/reports", 200)
	var mod apiPage[struct {
		CommentID int64 `json:"comment_id"`
		Hidden    bool  `json:"hidden"`
	}]
	if err := json.Unmarshal([]byte(body), &mod); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(mod.Data); got != "[{17 true} {5 true} {4 false}]" {
		t.Errorf("the moderation list %s, want 17 and 5 hidden, 4 reported", got)
	}
}

// TestImportKeepFeeds fills the inboxes from the tutorial's feed:* sets:
// each user's first page is what the tutorial showed them.
func TestImportKeepFeeds(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) *importTarget{
		sqliteTarget,
		func(t *testing.T) *importTarget { return postgresTarget(t, true) },
	} {
		target := mk(t)
		t.Run(target.name, func(t *testing.T) {
			src := newHMDPSource(t, true)
			src.fill(t)
			rep, _, err := runImportCmd(t, src, target, "--keep-feeds")
			if err != nil {
				t.Fatalf("%v\n%s", err, rep.text)
			}
			if got := rep.phases["feed"]; got[1] != 6 || got[2] != 4 || got[3] != 2 {
				t.Errorf("feed phase: %v, want 6 entries read, 4 kept, 2 skipped\n%s", got, rep.text)
			}
			if got := fmt.Sprint(rep.skipped["feed"]); got != "map[malformed:1 missing_post:1]" {
				t.Errorf("feed skipped %s", got)
			}
			s := startServer(t, target.args...)
			// Without the squatters, user 6 and post 18 come over.
			if got, want := ids(s.scrollAll(s.login("13800000001"), 3)), []int64{16, 11}; !slices.Equal(got, want) {
				t.Errorf("Alice's kept feed %v, want %v (the tutorial pushed her 11, 16 and 14, which was not imported)", got, want)
			}
			if got, want := ids(s.scrollAll(s.login("13800000002"), 3)), []int64{13, 10}; !slices.Equal(got, want) {
				t.Errorf("Bob's kept feed %v, want %v", got, want)
			}
			// Carol had no feed in the tutorial, and has none now.
			if got := s.scrollAll(s.login("13800000003"), 3); len(got) != 0 {
				t.Errorf("Carol's feed: %v, want empty as before", ids(got))
			}
			// New posts are delivered as usual.
			bob := s.login("13800000002")
			var id int64
			s.must("POST", "/blog", bob, map[string]any{"title": "new", "content": "after the move"}, &id)
			if id <= 18 {
				t.Errorf("a new post got id %d, not above the imported ones", id)
			}
			alice := s.login("13800000001")
			waitFor(t, "Bob's new post in Alice's feed", func() bool {
				got := ids(s.scrollAll(alice, 3))
				return len(got) > 0 && got[0] == id
			})
		})
	}
}
