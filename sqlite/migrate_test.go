package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/sqlite"
)

// The schema of feedd 0.1.0, frozen: testdata/0.1.0 holds copies of the
// baselines as 0.1.0 shipped them, never edited, and the names 0.1.0
// recorded them by.
const (
	release010     = "testdata/0.1.0"
	release010Main = "migrations/001_baseline.sql"
	release010Box  = "inbox_migrations/001_baseline.sql"
)

// TestBaselineFrozen: the baselines are the schema 0.1.0 created, so they
// are never edited after it; a change to the schema is a new migration.
func TestBaselineFrozen(t *testing.T) {
	for file, frozen := range map[string]string{release010Main: "feedd.db.sql", release010Box: "inbox.db.sql"} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(release010, frozen))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from %s, the 0.1.0 it must stay: put the change in a new migration (CONTRIBUTING.md, \"A migration\")", file, filepath.Join(release010, frozen))
		}
	}
}

// fromRelease010 makes in a temporary directory the feedd.db and inbox.db
// of a feedd 0.1.0 in use: its frozen schema, recorded as 0.1.0 recorded
// it, the two files paired, with users, posts, likes, follows (one of an
// author in pull mode), mutes, blocks, muted words, a report, a hidden
// post, a session, a notification group and inboxes. It returns the
// directory.
func fromRelease010(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(release010, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dbOf(t, filepath.Join(dir, "feedd.db"), read("feedd.db.sql"), release010Main,
		`INSERT INTO users (phone, nick_name, created_at, mode, active_at) VALUES
			('13800000000', 'a', 1, 0, 1000), ('13800000001', 'b', 1, 0, 1000),
			('13800000002', 'c', 1, 1, 1000), ('13800000003', 'd', 1, 0, 1000)`,
		`INSERT INTO posts (user_id, title, content, liked, created_at, updated_at) VALUES
			(2, 't1', 'c1', 1, 1800000000000, 1800000000000), (3, 't2', 'c2', 1, 1800000060000, 1800000060000),
			(2, 't3', 'c3', 0, 1800000120000, 1800000120000)`,
		`INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 1, 1800000001000, 2), (2, 1, 1800000061000, 3)`,
		`INSERT INTO follows (follower_id, followee_id, created_at, pull) VALUES (1, 2, 5, 0), (1, 3, 5, 1), (4, 1, 5, 0)`,
		`UPDATE users SET followee = 2 WHERE id = 1; UPDATE users SET fans = 1 WHERE id IN (2, 3)`,
		`INSERT INTO mutes (user_id, muted_id, created_at) VALUES (1, 4, 5)`,
		`INSERT INTO blocks (user_id, blocked_id, created_at) VALUES (4, 3, 5)`,
		`INSERT INTO muted_words (user_id, word, created_at) VALUES (1, 'spoiler', 5)`,
		`INSERT INTO reports (post_id, reporter_id, reason, created_at, dismissed) VALUES (3, 4, 'spam', 5, 0)`,
		`INSERT INTO hidden_posts (post_id, hidden_at) VALUES (3, 6)`,
		`INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ('hash-of-a', 1, 4000000000000)`,
		`INSERT INTO notify_groups (id, user_id, kind, target_id, first_at, latest_at, count) VALUES (1, 1, 'follow', 0, 1800000000000, 1800000000000, 1)`,
		`INSERT INTO notify_actors (group_id, actor_id, at) VALUES (1, 4, 1800000000000)`,
		`INSERT INTO feedd_meta (key, value) VALUES ('inbox_file', 'pair-010')`)
	dbOf(t, filepath.Join(dir, "inbox.db"), read("inbox.db.sql"), release010Box,
		`INSERT INTO inbox (user_id, score, post_id) VALUES (1, 1800000000000, 1), (1, 1800000120000, 3), (4, 1800000000000, 1)`,
		`INSERT INTO inbox_trim (user_id, room) VALUES (1, 958), (4, 959)`,
		`INSERT INTO inbox_meta (key, value) VALUES ('id', 'pair-010')`)
	return dir
}

// dbOf makes the database file path as a feedd left it: feedd_migrations
// as feedd creates it, the migration body run and recorded as name, then
// qs.
func dbOf(t *testing.T, path, body, name string, qs ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	all := []string{`CREATE TABLE feedd_migrations (name TEXT PRIMARY KEY)`, body, `INSERT INTO feedd_migrations (name) VALUES ('` + name + `')`}
	for _, q := range append(all, qs...) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFrom010: feedd opens the data directory of feedd 0.1.0 and
// migrates it to the newest schema: both files then have a new database's
// schema, and the data reads as it was written, through the stores.
func TestUpgradeFrom010(t *testing.T) {
	ctx := t.Context()
	main, ib := openPair(t, fromRelease010(t))
	freshMain, freshInbox := openPair(t, t.TempDir())
	for _, c := range []struct {
		name     string
		got, new *sqlite.DB
	}{{"feedd.db", main, freshMain}, {"inbox.db", ib, freshInbox}} {
		if got, want := dumpSchema(t, c.got.Read), dumpSchema(t, c.new.Read); got != want {
			t.Errorf("%s of 0.1.0 upgraded, schema differs from a new one's:\n%s", c.name, lineDiff(want, got))
		}
	}
	if ib.Regenerated {
		t.Error("the paired inbox.db of 0.1.0 was regenerated")
	}
	for _, c := range []struct {
		db   *sqlite.DB
		name string
	}{{main, release010Main}, {ib, release010Box}} {
		var release string
		if err := c.db.Read.QueryRowContext(ctx, `SELECT release FROM feedd_schema_migrations WHERE name = ?`, c.name).Scan(&release); err != nil || release != "0.1.0" {
			t.Errorf("%s: the record of %s moved as %q, %v; want release 0.1.0", c.db.Path, c.name, release, err)
		}
		if err := startOf010(c.db.Write, c.name); err == nil || !strings.Contains(err.Error(), feed.OlderRefusal) {
			t.Errorf("%s: feedd 0.1.0's start on the upgraded file = %v, want %q", c.db.Path, err, feed.OlderRefusal)
		}
	}

	users, err := main.Users(ctx, []int64{1, 2, 3, 4})
	if err != nil || len(users) != 4 || users[3].Mode != feed.PullMode || users[1].Followee != 2 || users[2].Fans != 1 {
		t.Fatalf("Users after the upgrade = %v, %v", users, err)
	}
	if id, err := main.Session(ctx, "hash-of-a", time.UnixMilli(1_900_000_000_000), 0); err != nil || id != 1 {
		t.Fatalf("Session after the upgrade = %d, %v; want user 1", id, err)
	}
	if posts, err := main.PostsOfUser(ctx, 2, 0, 10); err != nil || len(posts) != 2 || posts[0].Title != "t3" {
		t.Fatalf("PostsOfUser(2) after the upgrade = %v, %v", posts, err)
	}
	if ids, err := main.Following(ctx, 1, 0, 10); err != nil || !slices.Equal(ids, []int64{2, 3}) {
		t.Fatalf("Following(1) after the upgrade = %v, %v", ids, err)
	}
	if ids, err := main.PullFollowees(ctx, 1); err != nil || !slices.Equal(ids, []int64{3}) {
		t.Fatalf("PullFollowees(1) after the upgrade = %v, %v", ids, err)
	}
	if m, err := main.Muted(ctx, 1, 0, 10); err != nil || !slices.Equal(m, []int64{4}) {
		t.Fatalf("Muted(1) after the upgrade = %v, %v", m, err)
	}
	if b, err := main.BlockedBy(ctx, 3, []int64{4}); err != nil || !b[4] {
		t.Fatalf("BlockedBy(3, [4]) after the upgrade = %v, %v", b, err)
	}
	if w, err := main.MutedWords(ctx, 1); err != nil || !slices.Equal(w, []string{"spoiler"}) {
		t.Fatalf("MutedWords(1) after the upgrade = %v, %v", w, err)
	}
	if h, err := main.Hidden(ctx, []int64{1, 3}); err != nil || h[1] || !h[3] {
		t.Fatalf("Hidden after the upgrade = %v, %v", h, err)
	}
	now := time.UnixMilli(1_800_000_200_000)
	if gs, err := main.Notifications(ctx, 1, feed.Top(), now, 10); err != nil || len(gs) != 1 || gs[0].Kind != feed.NotifyFollow || !slices.Equal(gs[0].ActorIDs, []int64{4}) {
		t.Fatalf("Notifications(1) after the upgrade = %+v, %v", gs, err)
	}
	aff, err := main.Affinity(ctx, 1, []int64{2, 3}, now.Add(-24*time.Hour), now, time.Hour)
	if err != nil || aff[2].Likes <= 0 || aff[3].Likes <= 0 {
		t.Fatalf("Affinity of user 1 after the upgrade = %v, %v", aff, err)
	}
	page, err := (&sqlite.Inbox{DB: ib}).Page(ctx, 1, feed.Top(), 0, 10)
	if err != nil || !slices.Equal(page, []feed.Entry{{PostID: 3, Score: 1800000120000}, {PostID: 1, Score: 1800000000000}}) {
		t.Fatalf("inbox of user 1 after the upgrade = %v, %v", page, err)
	}
	// and takes writes
	if err := main.SetMutedWord(ctx, 1, "plot", true, now); err != nil {
		t.Fatal(err)
	}
	// Reposts: the follows show them (show_reposts), the posts count them,
	// and a repost's id comes after every post's, as the next post's after it.
	var jobs []feed.Job
	main.Enqueue = func(_ context.Context, _ *sql.Tx, js ...feed.Job) error { jobs = append(jobs, js...); return nil }
	if changed, err := main.SetRepost(ctx, 2, 2, true, now); err != nil || !changed || len(jobs) != 1 {
		t.Fatalf("SetRepost after the upgrade = %v, %v, jobs %v", changed, err, jobs)
	}
	rid := jobs[0].(feed.FanoutJob).PostID
	if rid <= 3 {
		t.Fatalf("the first repost after the upgrade has id %d, a post's", rid)
	}
	entries, err := main.RepostEntries(ctx, 1, []int64{rid, 2})
	if r := entries[rid]; err != nil || len(entries) != 1 || r == nil || !r.ReposterShown || !r.AuthorFollowed {
		t.Fatalf("RepostEntries after the upgrade = %+v, %v", entries, err)
	}
	if sharers, err := main.Sharers(ctx, 1, []int64{2}); err != nil || sharers[2] == nil || sharers[2].Count != 1 || sharers[2].First.ID != rid {
		t.Fatalf("Sharers after the upgrade = %+v, %v", sharers, err)
	}
	p := &feed.Post{UserID: 1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, QuoteOf: 1}
	if err := main.CreatePost(ctx, p); err != nil || p.ID <= rid {
		t.Fatalf("a quote after the first repost (%d): id %d, %v", rid, p.ID, err)
	}
	if q, err := main.Post(ctx, 2); err != nil || q.Reposts != 1 || q.Quotes != 0 || q.QuoteOf != 0 || q.QuotePolicy != feed.QuotesEveryone {
		t.Fatalf("post 2 after the upgrade = %+v, %v", q, err)
	}
	if q, err := main.Post(ctx, 1); err != nil || q.Quotes != 1 {
		t.Fatalf("post 1 after its quote = %+v, %v", q, err)
	}
	if err := (&sqlite.Inbox{DB: ib, Cap: 960}).Deliver(ctx, feed.Entry{PostID: 4, Score: 1800000180000}, []int64{1, 4}); err != nil {
		t.Fatal(err)
	}
	// The rows 005_identity.sql touched: users of 0.1.0 keep their phones
	// beside users made without one; their sessions end by user; their
	// posts have no foreign id, and a new post may have one.
	links, err := main.LinkIdentities(ctx, "https://app.example/", []string{"a", "b"}, make([]feed.Profile, 2), func() string { return "app_user" }, now)
	if err != nil || links[0].UserID == links[1].UserID || links[0].UserID <= 4 {
		t.Fatalf("LinkIdentities after the upgrade = %+v, %v", links, err)
	}
	if u, err := main.User(ctx, links[0].UserID); err != nil || u.Phone != "" {
		t.Fatalf("a linked user after the upgrade = %+v, %v", u, err)
	}
	if u, err := main.User(ctx, 1); err != nil || u.Phone != "13800000000" {
		t.Fatalf("user 1 after the upgrade = %+v, %v", u, err)
	}
	if err := main.Revoke(ctx, 1, now); err != nil {
		t.Fatal(err)
	}
	if err := main.EndSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Session(ctx, "hash-of-a", now, 0); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Fatalf("the session of user 1 after EndSessions: %v", err)
	}
	if p, err := main.Post(ctx, 1); err != nil || p.ForeignID != "" {
		t.Fatalf("post 1 after the upgrade = %+v, %v", p, err)
	}
}

// A data directory of a development build before 0.1.0 (migrations
// recorded, not the baseline) is refused with a clear error, its schema
// unchanged.
func TestMigratePreRelease(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "feedd.db")
	dbOf(t, path, `CREATE TABLE users (id INTEGER PRIMARY KEY, phone TEXT NOT NULL UNIQUE)`, "migrations/001_init.sql")
	schemaOf := func() string {
		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var recorded string
		if err := raw.QueryRow(`SELECT group_concat(name) FROM feedd_migrations`).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		return dumpSchema(t, raw) + recorded
	}
	before := schemaOf()
	_, err := sqlite.Open(t.Context(), dir)
	if err == nil || !strings.Contains(err.Error(), "older than 0.1.0") {
		t.Fatalf("Open of a pre-0.1.0 feedd.db = %v, want an error naming 0.1.0", err)
	}
	if after := schemaOf(); after != before {
		t.Errorf("the refused feedd.db was changed:\n%s", lineDiff(before, after))
	}
}

// startOf010 runs on db what feedd 0.1.0 runs first when it opens a file
// (its sqlite/db.go at the release): the first statements of its
// migrations, looking up the baseline recorded as name.
func startOf010(db *sql.DB, name string) error {
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS feedd_migrations (name TEXT PRIMARY KEY)`); err != nil {
		return err
	}
	var n int
	return db.QueryRow(`SELECT count(*) FROM feedd_migrations WHERE name = ?`, name).Scan(&n)
}

// TestNewerRefused: a file that a newer feedd migrated (a migration this
// feedd does not know recorded) is refused with an error naming that
// feedd's release and the migration, and is left as it was; a file this
// feedd made is refused by feedd 0.1.0's start with feed.OlderRefusal.
func TestNewerRefused(t *testing.T) {
	dir := t.TempDir()
	main, ib := openPair(t, dir)
	for _, c := range []struct {
		db   *sqlite.DB
		name string
	}{{main, release010Main}, {ib, release010Box}} {
		if err := startOf010(c.db.Write, c.name); err == nil || !strings.Contains(err.Error(), feed.OlderRefusal) {
			t.Errorf("%s: feedd 0.1.0's start on a new file = %v, want %q", c.db.Path, err, feed.OlderRefusal)
		}
	}
	if _, err := main.Write.Exec(`INSERT INTO feedd_schema_migrations (name, release, applied_at) VALUES ('migrations/999_later.sql', '9.1.0', 1)`); err != nil {
		t.Fatal(err)
	}
	before := dumpSchema(t, main.Read)
	main.Close()
	ib.Close()
	_, err := sqlite.Open(t.Context(), dir)
	var newer *feed.NewerSchemaError
	if !errors.As(err, &newer) || !strings.Contains(err.Error(), "feedd.db was upgraded by feedd 9.1.0") || !strings.Contains(err.Error(), "migrations/999_later.sql") {
		t.Fatalf("Open of a feedd.db of feedd 9.1.0 = %v, want a NewerSchemaError naming 9.1.0 and its migration", err)
	}
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if after := dumpSchema(t, raw); after != before {
		t.Errorf("the refused feedd.db was changed:\n%s", lineDiff(before, after))
	}
}

// The stock sqlite3 shell writes every table a like, a follow or an inbox
// touches, in a new database and in one upgraded from 0.1.0 (no trigger calls a
// function only feedd registers), and feedd reads what it wrote.
func TestSQLite3ShellWrites(t *testing.T) {
	shell := testenv.SQLite3(t)
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		main, _ := openPair(t, dir)
		for _, q := range []string{
			`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000000', 'a', 1), ('13800000001', 'b', 1)`,
			`INSERT INTO posts (user_id, title, content, created_at, updated_at) VALUES (2, 't', 'c', 5, 5)`,
		} {
			if _, err := main.Write.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for name, setUp := range map[string]func(t *testing.T) string{
		"new":                 fresh,
		"upgraded from 0.1.0": fromRelease010,
	} {
		t.Run(name, func(t *testing.T) {
			dir := setUp(t)
			run := func(file, script string) {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), shell, "-bail", filepath.Join(dir, file))
				cmd.Stdin = strings.NewReader(script)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("sqlite3 %s: %v\n%s\nscript:\n%s", file, err, out, script)
				}
			}
			// Written while feedd has the files open: WAL, busy_timeout.
			run("feedd.db", `PRAGMA busy_timeout = 10000;
				DELETE FROM likes WHERE user_id = 1;
				INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 1, 7, 2);
				INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 2, 8, 2);
				DELETE FROM likes WHERE user_id = 2;
				UPDATE likes SET created_at = 9 WHERE user_id = 1;
				DELETE FROM follows WHERE follower_id = 1;
				INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 2, 6), (2, 1, 6);
				DELETE FROM follows WHERE follower_id = 2;
				UPDATE follows SET created_at = 10 WHERE follower_id = 1;`)
			run("inbox.db", `PRAGMA busy_timeout = 10000;
				INSERT INTO inbox (user_id, score, post_id) VALUES (1, 5, 1), (2, 5, 1);
				DELETE FROM inbox WHERE user_id = 2;
				INSERT INTO inbox_trim (user_id, room) VALUES (1, 100) ON CONFLICT (user_id) DO UPDATE SET room = room - 1;
				UPDATE inbox_trim SET room = 32 WHERE user_id = 1;
				DELETE FROM inbox_trim WHERE user_id = 2;`)
			main, ib := openPair(t, dir)
			now := time.UnixMilli(20)
			aff, err := main.Affinity(t.Context(), 1, []int64{2}, time.UnixMilli(0), now, time.Hour)
			if err != nil || aff[2].Likes <= 0 || !aff[2].FollowedAt.Equal(time.UnixMilli(10)) {
				t.Fatalf("Affinity after the shell's writes = %v, %v; want user 2's like and follow (at 10 ms)", aff, err)
			}
			page, err := (&sqlite.Inbox{DB: ib}).Page(t.Context(), 1, feed.AtMost(5), 0, 10)
			if err != nil || !slices.Contains(page, feed.Entry{PostID: 1, Score: 5}) {
				t.Fatalf("inbox page after the shell's writes = %v, %v; want post 1 at 5", page, err)
			}
		})
	}
}

// TestNotifyGroupIDsNotReused: a notification group's id is its key
// (feed.NotifyKey), so the id of the group with the highest id, once
// removed, is not given to the next group (of any user); deleting a group
// deletes its actors.
func TestNotifyGroupIDsNotReused(t *testing.T) {
	ctx := t.Context()
	main, _ := openPair(t, t.TempDir())
	for _, q := range []string{
		`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000000', 'a', 1), ('13800000001', 'b', 1), ('13800000002', 'c', 1)`,
		`INSERT INTO notify_groups (id, user_id, kind, target_id, first_at, latest_at, count) VALUES
			(1, 1, 'follow', 0, 10, 20, 2), (2, 2, 'follow', 0, 10, 30, 1), (3, 3, 'follow', 0, 10, 40, 1)`,
		`INSERT INTO notify_actors (group_id, actor_id, at) VALUES (1, 2, 10), (1, 3, 20), (2, 1, 30), (3, 1, 40)`,
		`DELETE FROM notify_groups WHERE id = 3`,
	} {
		if _, err := main.Write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var actors int
	if err := main.Read.QueryRowContext(ctx, `SELECT count(*) FROM notify_actors`).Scan(&actors); err != nil || actors != 3 {
		t.Fatalf("actors after deleting a group: %d, %v; want 3 (its row deleted with it)", actors, err)
	}
	now := time.UnixMilli(50)
	main.Notify = feed.NotifySettings{}
	main.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	if err := main.SetFollow(ctx, 2, 3, true, now); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := main.Read.QueryRowContext(ctx, `SELECT max(id) FROM notify_groups`).Scan(&id); err != nil || id != 4 {
		t.Fatalf("the next group's id = %d, %v; want 4 (3 was removed, never given again)", id, err)
	}
}
