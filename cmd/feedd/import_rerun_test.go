package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/hmdp"
	"github.com/feedd/feedd/internal/bench"
	"github.com/feedd/feedd/internal/testenv"
)

// withRedis gives a target its outboxes, inboxes and sessions in Redis,
// under a prefix of the test's own.
func withRedis(t *testing.T, target *importTarget) *importTarget {
	ru, prefix := testenv.RedisURL(t)
	target.args = append(target.args, "--redis-url", ru, "--redis-prefix", prefix)
	target.name += "+redis"
	t.Cleanup(func() {
		opts, _ := goredis.ParseURL(ru)
		rdb := goredis.NewClient(opts)
		bench.DeleteKeys(context.Background(), rdb, prefix)
		rdb.Close()
	})
	return target
}

// Ids at and past the bounds of what an import keeps.
const (
	idPastBound = "4503599627370497"     // 2^52 + 1
	idMaxInt64  = "9223372036854775807"  // 2^63 - 1
	idPastInt64 = "9223372036854775813"  // 2^63 + 5
	idMaxUint64 = "18446744073709551615" // 2^64 - 1
)

// TestImportBoundsOwnUsersAndRerun imports, into a store that already
// served a user of its own (id 3), a source with ids past feed.MaxImportID
// and past int64 (skipped as id_out_of_range, never aborting, the rows
// referring to them skipped too), rows of a user id missing from tb_user
// that is feedd's user 3 (missing_author, missing_user: never credited to
// user 3), and a nickname of markup (cleaned, served as a name signup
// gives). feedd's own signups still work. A second run brings a new post
// of a pull-mode author whose Redis outbox a reader had built: the reader
// sees it; a like added in the source to an older post does not come over
// but with --resync likes, which a later --resync reads again from the
// start. Both engines, outboxes in Redis.
func TestImportBoundsOwnUsersAndRerun(t *testing.T) {
	for _, mk := range []func(*testing.T) *importTarget{
		func(t *testing.T) *importTarget { return withRedis(t, sqliteTarget(t)) },
		func(t *testing.T) *importTarget { return postgresTarget(t, true) },
	} {
		target := mk(t)
		t.Run(target.name, func(t *testing.T) {
			target.args = append(target.args, "--pull-threshold", "2")
			target.exec(t, "INSERT INTO users (id, phone, nick_name, created_at, active_at) VALUES (3, '13900000003', 'feedd''s own', 0, 0)")
			src := newHMDPSource(t, true)
			user := func(id, phone, nick string, minute int) {
				src.exec(t, "INSERT INTO tb_user (id, phone, password, nick_name, icon, create_time, update_time) VALUES (?, ?, 'x', ?, '', FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
					id, phone, nick, at(minute), at(minute))
			}
			post := func(id, author, title string, minute int) {
				src.exec(t, "INSERT INTO tb_blog (id, shop_id, user_id, title, images, content, liked, comments, create_time, update_time) VALUES (?, 1, ?, ?, '', 'text', 0, 0, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
					id, author, title, at(minute), at(minute))
			}
			follow := func(id int, a, b string) {
				src.exec(t, "INSERT INTO tb_follow (id, user_id, follow_user_id, create_time) VALUES (?, ?, ?, FROM_UNIXTIME(?))", id, a, b, at(20+id))
			}
			comment := func(id, user, parent string, minute int) {
				src.exec(t, "INSERT INTO tb_blog_comments (id, user_id, blog_id, parent_id, answer_id, content, liked, status, create_time, update_time) VALUES (?, ?, 10, ?, ?, 'a comment', 0, 0, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
					id, user, parent, parent, at(minute), at(minute))
			}
			user("1", "13800000101", "Alice", 1)
			user("2", "13800000102", "<img src=x onerror=alert(1)>", 2)
			user("4", "13800000104", "Dora", 4)
			user(idPastBound, "13800000105", "past the bound", 5)
			user(idMaxInt64, "13800000106", "the largest int64", 6)
			user(idMaxUint64, "13800000107", "past int64", 7)
			post("10", "4", "Dora's first", 10)
			post("11", "3", "by a user missing from tb_user", 11)
			post("12", idMaxUint64, "by a user past int64", 12)
			post("13", "1", "Alice's", 13)
			post(idPastInt64, "1", "an id past int64", 14)
			follow(1, "1", "4")
			follow(2, "2", "4")
			follow(3, "3", "1")         // missing_user: 3 is feedd's own
			follow(4, "1", idMaxUint64) // missing_user
			comment("1", "2", "0", 30)
			comment("2", "3", "0", 31)         // missing_user
			comment(idMaxUint64, "1", "0", 32) // id_out_of_range
			comment("3", "1", idMaxUint64, 33) // missing_thread
			src.zadd(t, "blog:liked:10", map[string]int64{"1": atMS(40)})

			rep, logs, err := runImportCmd(t, src, target)
			if err != nil {
				t.Fatalf("import: %v\n%s\n%s", err, rep.text, logs)
			}
			want := map[string][5]int64{
				"tb_user":          {6, 6, 3, 3, 1},
				"tb_blog":          {5, 5, 2, 3, 0},
				"tb_follow":        {4, 4, 2, 2, 0},
				"blog:liked":       {-1, 1, 1, 0, 0},
				"tb_blog_comments": {4, 4, 1, 3, 0},
			}
			wantSkipped := map[string]map[string]int64{
				"tb_user":          {hmdp.SkipIDOutOfRange: 3},
				"tb_blog":          {hmdp.SkipIDOutOfRange: 1, hmdp.SkipMissingAuthor: 2},
				"tb_follow":        {hmdp.SkipMissingUser: 2},
				"tb_blog_comments": {hmdp.SkipIDOutOfRange: 1, hmdp.SkipMissingThread: 1, hmdp.SkipMissingUser: 1},
			}
			for phase, w := range want {
				if got := rep.phases[phase]; got != w {
					t.Errorf("%s: source, read, imported, skipped, cleaned = %v, want %v", phase, got, w)
				}
			}
			for phase, w := range wantSkipped {
				if got := rep.skipped[phase]; fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s skipped %v, want %v", phase, got, w)
				}
			}
			if got := rep.cleaned["tb_user"]; fmt.Sprint(got) != fmt.Sprint(map[string]int64{hmdp.CleanMarkup: 1}) {
				t.Errorf("tb_user cleaned %v, want markup 1", got)
			}
			if t.Failed() {
				t.Fatalf("report:\n%s", rep.text)
			}
			for _, q := range []string{
				"SELECT count(*) FROM posts WHERE user_id = 3",
				"SELECT count(*) FROM follows WHERE follower_id = 3 OR followee_id = 3",
				"SELECT count(*) FROM comments WHERE user_id = 3",
				fmt.Sprintf("SELECT count(*) FROM users WHERE id > %d", feed.MaxImportID),
			} {
				if n := target.count(t, q); n != 0 {
					t.Errorf("%s: %d, want 0", q, n)
				}
			}

			s := startServer(t, target.args...)
			// feedd's own signups go on above the imported ids.
			var me struct {
				ID       int64  `json:"id"`
				NickName string `json:"nickName"`
			}
			s.must("GET", "/user/me", s.login("13900000099"), nil, &me)
			if me.ID <= 4 || me.ID > feed.MaxImportID {
				t.Errorf("a new signup has id %d", me.ID)
			}
			alice := s.login("13800000101")
			s.must("GET", "/user/2", alice, nil, &me)
			if !regexp.MustCompile(`^user_[A-Za-z0-9]{10}$`).MatchString(me.NickName) {
				t.Errorf("user 2's nickName %q, want one as signup gives", me.NickName)
			}
			if got := ids(s.scrollAll(alice, 10)); !slices.Equal(got, []int64{13, 10}) {
				t.Fatalf("Alice's feed %v, want [13 10] (Dora is in pull mode)", got)
			}
			s.stop()

			// The source goes on: a post of Dora's, a like of her older post.
			post("14", "4", "Dora's second", 50)
			src.zadd(t, "blog:liked:10", map[string]int64{"2": atMS(51)})
			again, logs, err := runImportCmd(t, src, target)
			if err != nil {
				t.Fatalf("re-run: %v\n%s\n%s", err, again.text, logs)
			}
			if got := again.phases["tb_blog"]; got != [5]int64{6, 6, 3, 3, 0} {
				t.Errorf("re-run: tb_blog %v\n%s", got, again.text)
			}
			if n := target.count(t, "SELECT count(*) FROM likes WHERE post_id = 10"); n != 1 {
				t.Errorf("a re-run brought the like of an older post: %d likes (docs/operations.md says it does not)", n)
			}
			s = startServer(t, target.args...)
			alice = s.login("13800000101")
			if got := ids(s.scrollAll(alice, 10)); !slices.Equal(got, []int64{14, 13, 10}) {
				t.Errorf("Alice's feed after the re-run %v, want [14 13 10]: Dora's outbox kept what it had", got)
			}
			s.stop()

			for i := range 2 {
				resync, logs, err := runImportCmd(t, src, target, "--resync", "likes")
				if err != nil {
					t.Fatalf("--resync likes: %v\n%s\n%s", err, resync.text, logs)
				}
				wantImported := int64(1 - i) // the second pass finds both there
				if got := resync.phases[hmdp.PhaseLikesAgain]; got != [5]int64{-1, 2, wantImported, 0, 0} {
					t.Errorf("--resync likes, pass %d: %v, want 2 read, %d imported\n%s", i+1, got, wantImported, resync.text)
				}
				if !strings.Contains(resync.text, "likes-resync: every post's likes read again") {
					t.Errorf("the report does not say what a resync counts:\n%s", resync.text)
				}
			}
			if n := target.count(t, "SELECT count(*) FROM posts WHERE id = 10 AND liked = 2"); n != 1 {
				t.Errorf("post 10 does not count the 2 likes after --resync likes")
			}
		})
	}
}
