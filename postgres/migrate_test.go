package postgres_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/postgres"
)

// The schema of feedd 0.1.0, frozen: a copy of the baseline as 0.1.0
// shipped it, never edited, and the name 0.1.0 recorded it by.
const (
	release010     = "testdata/0.1.0/postgres.sql"
	release010Name = "migrations/001_baseline.sql"
)

// TestBaselineFrozen: the baseline is the schema 0.1.0 created, so it is
// never edited after it; a change to the schema is a new migration.
func TestBaselineFrozen(t *testing.T) {
	got, err := os.ReadFile(release010Name)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(release010)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from %s, the 0.1.0 it must stay: put the change in a new migration (CONTRIBUTING.md, \"A migration\")", release010Name, release010)
	}
}

// dbOf makes a new database as a feedd left it: feedd_migrations as feedd
// creates it, body run and recorded as name, then qs. It returns the
// database's URL.
func dbOf(t *testing.T, body, name string, qs ...string) string {
	t.Helper()
	ctx := t.Context()
	url := testenv.PostgresURL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	all := []string{`CREATE TABLE feedd_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
		body, `INSERT INTO feedd_migrations (name) VALUES ('` + name + `')`}
	for _, q := range append(all, qs...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	return url
}

// TestUpgradeFrom010: feedd opens the database of a feedd 0.1.0 in use
// (its frozen schema, with users, posts, likes, follows, one of an author
// in pull mode, mutes, blocks, muted words, a report, a hidden post, a
// session, a notification group and inboxes) and migrates it to the newest
// schema: it then has a new database's schema, and the data reads as it
// was written, through the stores.
func TestUpgradeFrom010(t *testing.T) {
	ctx := t.Context()
	body, err := os.ReadFile(release010)
	if err != nil {
		t.Fatal(err)
	}
	url := dbOf(t, string(body), release010Name,
		`INSERT INTO users (phone, nick_name, created_at, mode, active_at, followee, fans) VALUES
			('13800000000', 'a', 1, 0, 1000, 2, 0), ('13800000001', 'b', 1, 0, 1000, 0, 1),
			('13800000002', 'c', 1, 1, 1000, 0, 1), ('13800000003', 'd', 1, 0, 1000, 0, 0)`,
		`INSERT INTO posts (user_id, title, content, liked, created_at, updated_at) VALUES
			(2, 't1', 'c1', 1, 1800000000000, 1800000000000), (3, 't2', 'c2', 1, 1800000060000, 1800000060000),
			(2, 't3', 'c3', 0, 1800000120000, 1800000120000)`,
		`INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 1, 1800000001000, 2), (2, 1, 1800000061000, 3)`,
		`INSERT INTO follows (follower_id, followee_id, created_at, pull) VALUES (1, 2, 5, false), (1, 3, 5, true), (4, 1, 5, false)`,
		`INSERT INTO mutes (user_id, muted_id, created_at) VALUES (1, 4, 5)`,
		`INSERT INTO blocks (user_id, blocked_id, created_at) VALUES (4, 3, 5)`,
		`INSERT INTO muted_words (user_id, word, created_at) VALUES (1, 'spoiler', 5)`,
		`INSERT INTO reports (post_id, reporter_id, reason, created_at) VALUES (3, 4, 'spam', 5)`,
		`INSERT INTO hidden_posts (post_id, hidden_at) VALUES (3, 6)`,
		`INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ('hash-of-a', 1, 4000000000000)`,
		`INSERT INTO notify_groups (user_id, kind, target_id, first_at, latest_at, count) VALUES (1, 'follow', 0, 1800000000000, 1800000000000, 1)`,
		`INSERT INTO notify_actors (group_id, actor_id, at) VALUES (1, 4, 1800000000000)`,
		`INSERT INTO inbox (user_id, score, post_id) VALUES (1, 1800000000000, 1), (1, 1800000120000, 3), (4, 1800000000000, 1)`,
		`INSERT INTO inbox_trim (user_id, room) VALUES (1, 958), (4, 959)`)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := dumpSchema(t, db.Pool), dumpSchema(t, open(t).Pool); got != want {
		t.Errorf("the database of 0.1.0 upgraded, schema differs from a new one's:\n%s", lineDiff(want, got))
	}
	var release string
	var at time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT release, applied_at FROM feedd_schema_migrations WHERE name = $1`, release010Name).Scan(&release, &at); err != nil ||
		release != "0.1.0" || time.Since(at) > time.Hour {
		t.Errorf("the record of the baseline moved as %q at %v, %v; want release 0.1.0 at its time", release, at, err)
	}
	if err := startOf010(t, url); err == nil || !strings.Contains(err.Error(), feed.OlderRefusal) {
		t.Errorf("feedd 0.1.0's start on the upgraded database = %v, want %q", err, feed.OlderRefusal)
	}

	users, err := db.Users(ctx, []int64{1, 2, 3, 4})
	if err != nil || len(users) != 4 || users[3].Mode != feed.PullMode || users[1].Followee != 2 || users[2].Fans != 1 {
		t.Fatalf("Users after the upgrade = %v, %v", users, err)
	}
	if id, err := db.Session(ctx, "hash-of-a", time.UnixMilli(1_900_000_000_000), 0); err != nil || id != 1 {
		t.Fatalf("Session after the upgrade = %d, %v; want user 1", id, err)
	}
	if posts, err := db.PostsOfUser(ctx, 2, 0, 10); err != nil || len(posts) != 2 || posts[0].Title != "t3" {
		t.Fatalf("PostsOfUser(2) after the upgrade = %v, %v", posts, err)
	}
	if ids, err := db.Following(ctx, 1, 0, 10); err != nil || !slices.Equal(ids, []int64{2, 3}) {
		t.Fatalf("Following(1) after the upgrade = %v, %v", ids, err)
	}
	if ids, err := db.PullFollowees(ctx, 1); err != nil || !slices.Equal(ids, []int64{3}) {
		t.Fatalf("PullFollowees(1) after the upgrade = %v, %v", ids, err)
	}
	if m, err := db.Muted(ctx, 1, 0, 10); err != nil || !slices.Equal(m, []int64{4}) {
		t.Fatalf("Muted(1) after the upgrade = %v, %v", m, err)
	}
	if b, err := db.BlockedBy(ctx, 3, []int64{4}); err != nil || !b[4] {
		t.Fatalf("BlockedBy(3, [4]) after the upgrade = %v, %v", b, err)
	}
	if w, err := db.MutedWords(ctx, 1); err != nil || !slices.Equal(w, []string{"spoiler"}) {
		t.Fatalf("MutedWords(1) after the upgrade = %v, %v", w, err)
	}
	if h, err := db.Hidden(ctx, []int64{1, 3}); err != nil || h[1] || !h[3] {
		t.Fatalf("Hidden after the upgrade = %v, %v", h, err)
	}
	now := time.UnixMilli(1_800_000_200_000)
	if gs, err := db.Notifications(ctx, 1, feed.Top(), now, 10); err != nil || len(gs) != 1 || gs[0].Kind != feed.NotifyFollow || !slices.Equal(gs[0].ActorIDs, []int64{4}) {
		t.Fatalf("Notifications(1) after the upgrade = %+v, %v", gs, err)
	}
	aff, err := db.Affinity(ctx, 1, []int64{2, 3}, now.Add(-24*time.Hour), now, time.Hour)
	if err != nil || aff[2].Likes <= 0 || aff[3].Likes <= 0 {
		t.Fatalf("Affinity of user 1 after the upgrade = %v, %v", aff, err)
	}
	ib := &postgres.Inbox{DB: db, Cap: 960}
	page, err := ib.Page(ctx, 1, feed.Top(), 0, 10)
	if err != nil || !slices.Equal(page, []feed.Entry{{PostID: 3, Score: 1800000120000}, {PostID: 1, Score: 1800000000000}}) {
		t.Fatalf("inbox of user 1 after the upgrade = %v, %v", page, err)
	}
	// and takes writes
	if err := db.SetMutedWord(ctx, 1, "plot", true, now); err != nil {
		t.Fatal(err)
	}
	// Reposts: the follows show them (show_reposts), the posts count them,
	// and a repost's id comes after every post's, as the next post's after it.
	var jobs []feed.Job
	db.Enqueue = func(_ context.Context, _ pgx.Tx, js ...feed.Job) error { jobs = append(jobs, js...); return nil }
	if changed, err := db.SetRepost(ctx, 2, 2, true, now); err != nil || !changed || len(jobs) != 1 {
		t.Fatalf("SetRepost after the upgrade = %v, %v, jobs %v", changed, err, jobs)
	}
	rid := jobs[0].(feed.FanoutJob).PostID
	if rid <= 3 {
		t.Fatalf("the first repost after the upgrade has id %d, a post's", rid)
	}
	entries, err := db.RepostEntries(ctx, 1, []int64{rid, 2})
	if r := entries[rid]; err != nil || len(entries) != 1 || r == nil || !r.ReposterShown || !r.AuthorFollowed {
		t.Fatalf("RepostEntries after the upgrade = %+v, %v", entries, err)
	}
	if sharers, err := db.Sharers(ctx, 1, []int64{2}); err != nil || sharers[2] == nil || sharers[2].Count != 1 || sharers[2].First.ID != rid {
		t.Fatalf("Sharers after the upgrade = %+v, %v", sharers, err)
	}
	p := &feed.Post{UserID: 1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, QuoteOf: 1}
	if err := db.CreatePost(ctx, p); err != nil || p.ID <= rid {
		t.Fatalf("a quote after the first repost (%d): id %d, %v", rid, p.ID, err)
	}
	if q, err := db.Post(ctx, 2); err != nil || q.Reposts != 1 || q.Quotes != 0 || q.QuoteOf != 0 || q.QuotePolicy != feed.QuotesEveryone {
		t.Fatalf("post 2 after the upgrade = %+v, %v", q, err)
	}
	if q, err := db.Post(ctx, 1); err != nil || q.Quotes != 1 {
		t.Fatalf("post 1 after its quote = %+v, %v", q, err)
	}
	if err := ib.Deliver(ctx, feed.Entry{PostID: 4, Score: 1800000180000}, []int64{1, 4}); err != nil {
		t.Fatal(err)
	}
	// The rows 005_identity.sql touched: users of 0.1.0 keep their phones
	// beside users made without one; their sessions end by user; their
	// posts have no foreign id, and a new post may have one.
	links, err := db.LinkIdentities(ctx, "https://app.example/", []string{"a", "b"}, make([]feed.Profile, 2), func() string { return "app_user" }, now)
	if err != nil || links[0].UserID == links[1].UserID || links[0].UserID <= 4 {
		t.Fatalf("LinkIdentities after the upgrade = %+v, %v", links, err)
	}
	if u, err := db.User(ctx, links[0].UserID); err != nil || u.Phone != "" {
		t.Fatalf("a linked user after the upgrade = %+v, %v", u, err)
	}
	if u, err := db.User(ctx, 1); err != nil || u.Phone != "13800000000" {
		t.Fatalf("user 1 after the upgrade = %+v, %v", u, err)
	}
	if err := db.Revoke(ctx, 1, now); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Session(ctx, "hash-of-a", now, 0); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Fatalf("the session of user 1 after EndSessions: %v", err)
	}
	if p, err := db.Post(ctx, 1); err != nil || p.ForeignID != "" {
		t.Fatalf("post 1 after the upgrade = %+v, %v", p, err)
	}
}

// A database of a development build before 0.1.0 (migrations recorded,
// not the baseline) is refused with a clear error, its schema unchanged.
func TestMigratePreRelease(t *testing.T) {
	ctx := t.Context()
	url := dbOf(t, `CREATE TABLE users (id BIGSERIAL PRIMARY KEY, phone TEXT NOT NULL UNIQUE)`, "migrations/001_init.sql")
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := func() string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := tables()
	db, err := postgres.Open(ctx, url)
	if err == nil {
		db.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "older than 0.1.0") {
		t.Fatalf("Open of a pre-0.1.0 database = %v, want an error naming 0.1.0", err)
	}
	if after := tables(); after != before {
		t.Errorf("the refused database's tables: %s, were %s", after, before)
	}
}

// startOf010 runs on the database at url what feedd 0.1.0 runs first when
// it opens one (its postgres/db.go at the release): the first statements
// of its migrations, in a transaction.
func startOf010(t *testing.T, url string) error {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS feedd_migrations (
			name       TEXT PRIMARY KEY,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var done bool
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM feedd_migrations WHERE name = $1)`, release010Name).Scan(&done)
	})
}

// TestNewerRefused: a database that a newer feedd migrated (a migration
// this feedd does not know recorded) is refused with an error naming that
// feedd's release and the migration, and is left as it was; a database
// this feedd made is refused by feedd 0.1.0's start with
// feed.OlderRefusal.
func TestNewerRefused(t *testing.T) {
	ctx := t.Context()
	url := testenv.PostgresURL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := startOf010(t, url); err == nil || !strings.Contains(err.Error(), feed.OlderRefusal) {
		t.Errorf("feedd 0.1.0's start on a new database = %v, want %q", err, feed.OlderRefusal)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO feedd_schema_migrations (name, release) VALUES ('migrations/999_later.sql', '9.1.0')`); err != nil {
		t.Fatal(err)
	}
	before := dumpSchema(t, db.Pool)
	db.Close()
	db, err = postgres.Open(ctx, url)
	if err == nil {
		db.Close()
	}
	var newer *feed.NewerSchemaError
	if !errors.As(err, &newer) || !strings.Contains(err.Error(), "upgraded by feedd 9.1.0") || !strings.Contains(err.Error(), "migrations/999_later.sql") {
		t.Fatalf("Open of a database of feedd 9.1.0 = %v, want a NewerSchemaError naming 9.1.0 and its migration", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if after := dumpSchema(t, pool); after != before {
		t.Errorf("the refused database was changed:\n%s", lineDiff(before, after))
	}
}
