package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/sqlite"
)

// open opens a fresh database in t's temporary directory, closed when t ends.
func open(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

// openBackend opens a fresh database whose enqueued jobs collect in memory.
func openBackend(t *testing.T) *feedtest.Backend {
	db := open(t)
	var mu sync.Mutex
	var jobs []feed.Job
	db.Enqueue = func(ctx context.Context, tx *sql.Tx, js ...feed.Job) error {
		mu.Lock()
		defer mu.Unlock()
		jobs = append(jobs, js...)
		return nil
	}
	return &feedtest.Backend{
		Users: db, Auth: db, Posts: db, Follows: db, Social: db, Filters: db, Ranks: db, Snapshots: db,
		Inbox:  &sqlite.Inbox{DB: db, Cap: 1 << 20}, // the suites' model keeps everything
		Outbox: &sqlite.Outbox{DB: db},
		Jobs: func() []feed.Job {
			mu.Lock()
			defer mu.Unlock()
			out := jobs
			jobs = nil
			return out
		},
	}
}

func TestInbox(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T, cap int) feed.Inbox { return &sqlite.Inbox{DB: open(t), Cap: cap} }, feed.InboxSlack)
}

func TestStores(t *testing.T) { feedtest.TestStores(t, openBackend) }

func TestFeed(t *testing.T) { feedtest.TestFeed(t, openBackend) }

func TestSocial(t *testing.T) { feedtest.TestSocial(t, openBackend) }

func TestHybrid(t *testing.T) { feedtest.TestHybrid(t, openBackend) }

// TestEnqueueInTransaction checks that a post whose job cannot be enqueued
// is not committed, and that a store without a queue refuses to publish.
func TestEnqueueInTransaction(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	now := time.Now().Truncate(time.Millisecond)
	u, err := db.FindOrCreateUser(ctx, "13800000001", "user_a", now)
	if err != nil {
		t.Fatal(err)
	}
	p := &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); err == nil {
		t.Fatal("CreatePost without a queue succeeded")
	}
	boom := errors.New("queue down")
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return boom }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); !errors.Is(err, boom) {
		t.Fatalf("CreatePost with a failing queue = %v, want %v", err, boom)
	}
	if posts, err := db.PostsOfUser(ctx, u.ID, 0, 10); err != nil || len(posts) != 0 {
		t.Fatalf("after failed enqueues PostsOfUser = %d posts, %v; want none", len(posts), err)
	}
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return boom }
	if err := db.DeletePost(ctx, p.ID, u.ID); !errors.Is(err, boom) {
		t.Fatalf("DeletePost with a failing queue = %v, want %v", err, boom)
	}
	if _, err := db.Post(ctx, p.ID); err != nil {
		t.Fatalf("the post is gone after a DeletePost whose job failed: %v", err)
	}
}

// A database created before 002_social.sql keeps its users: they come out
// in push mode, active since their creation.
func TestMigrateSocial(t *testing.T) {
	ctx := t.Context()
	path := dbBefore(t, "migrations/002",
		`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000001', 'a', 1700000000123), ('13800000002', 'b', 1700000000456)`,
		`INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 2, 1700000000789)`)
	db, err := sqlite.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users, err := db.Users(ctx, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for id, created := range map[int64]int64{1: 1700000000123, 2: 1700000000456} {
		u := users[id]
		if u == nil || u.Mode != feed.PushMode || u.ActiveAt.UnixMilli() != created || u.CreatedAt.UnixMilli() != created {
			t.Fatalf("user %d after the migration: %+v", id, u)
		}
	}
	if ids, err := db.Following(ctx, 1, 0, 10); err != nil || len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("Following(1) after the migration = %v, %v", ids, err)
	}
	var n int
	files, _ := filepath.Glob("migrations/*.sql")
	if err := db.Read.QueryRowContext(ctx, `SELECT count(*) FROM feedd_migrations`).Scan(&n); err != nil || n != len(files) {
		t.Fatalf("feedd_migrations has %d rows (%v), want %d (every migration once)", n, err, len(files))
	}
}

// TestSessionSweepClock checks what the feedtest suite cannot see: the
// sweep in CreateSession removes the sessions expired by the caller's clock
// even when the machine's clock, two days behind, would still call them live.
func TestSessionSweepClock(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	now := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	u, err := db.FindOrCreateUser(ctx, "13800000001", "u", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(ctx, "old", u.ID, now, now.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	if err := db.CreateSession(ctx, "new", u.ID, later, later.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	rows, err := db.Read.QueryContext(ctx, `SELECT token_hash FROM sessions ORDER BY token_hash`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tok string
		if err := rows.Scan(&tok); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	if err := rows.Err(); err != nil || len(tokens) != 1 || tokens[0] != "new" {
		t.Fatalf("sessions after the sweep: %v (%v), want [new]", tokens, err)
	}
}

func TestFilters(t *testing.T) { feedtest.TestFilters(t, openBackend) }

// A database whose inboxes were filled before 003_inbox_trim.sql (when the
// SQLite inbox kept every entry) has each of them trimmed to the cap by its
// next delivery.
func TestMigrateInboxTrim(t *testing.T) {
	ctx := t.Context()
	path := dbBefore(t, "migrations/003", `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 300)
		INSERT INTO inbox (user_id, score, post_id) SELECT u, 1700000000000 + i, i FROM g, (SELECT 1 AS u UNION ALL SELECT 2)`)
	db, err := sqlite.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ib := &sqlite.Inbox{DB: db, Cap: 50}
	if err := ib.Deliver(ctx, feed.Entry{PostID: 301, Score: 1700000000301}, []int64{1}); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[int64]int{1: 50, 2: 300} { // 2 waits for its next delivery
		es, err := ib.Page(ctx, u, feed.AtMost(1<<52), 0, 1000)
		if err != nil || len(es) != want || (u == 1 && es[0].PostID != 301) {
			t.Fatalf("inbox of user %d after the migration and a delivery to user 1: %d entries (%v), want %d", u, len(es), err, want)
		}
	}
}

// A database created before 005_follows_pull.sql flags the follows of the
// authors already out of push mode, so PullFollowees answers as before.
func TestMigrateFollowsPull(t *testing.T) {
	ctx := t.Context()
	path := dbBefore(t, "migrations/005",
		`INSERT INTO users (phone, nick_name, created_at, mode) VALUES ('13800000001', 'a', 1, 0), ('13800000002', 'b', 1, 0), ('13800000003', 'c', 1, 1), ('13800000004', 'd', 1, 2)`,
		`INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 2, 1), (1, 3, 1), (1, 4, 1), (2, 3, 1), (3, 1, 1)`)
	db, err := sqlite.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for v, want := range map[int64][]int64{1: {3, 4}, 2: {3}, 3: nil, 4: nil} {
		if got, err := db.PullFollowees(ctx, v); err != nil || !slices.Equal(got, want) {
			t.Fatalf("PullFollowees(%d) after the migration = %v, %v; want %v", v, got, err, want)
		}
	}
	if err := db.SetMode(ctx, 3, feed.PushMode); err != nil {
		t.Fatal(err)
	}
	if got, err := db.PullFollowees(ctx, 1); err != nil || !slices.Equal(got, []int64{4}) {
		t.Fatalf("PullFollowees(1) after SetMode(3, push) = %v, %v; want [4]", got, err)
	}
}

// dbBefore makes a feedd.db in a temporary directory as a feedd of an
// earlier release left it: the migrations whose names sort before upto,
// each recorded as applied, then qs (its data). It returns the file's path.
func dbBefore(t *testing.T, upto string, qs ...string) string {
	t.Helper()
	files, _ := filepath.Glob("migrations/*.sql")
	files = slices.DeleteFunc(files, func(f string) bool { return f >= upto })
	path := filepath.Join(t.TempDir(), "feedd.db")
	dbOf(t, path, files, qs...)
	return path
}

// dbOf makes the database file path: the migration files, run as they
// are and each recorded as applied, then qs.
func dbOf(t *testing.T, path string, files []string, qs ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	all := []string{`CREATE TABLE feedd_migrations (name TEXT PRIMARY KEY)`}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(b), `INSERT INTO feedd_migrations (name) VALUES ('`+f+`')`)
	}
	for _, q := range append(all, qs...) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
}

// A database created before 006_likes_author.sql gives its likes their
// posts' authors, so the ranked timeline's affinity (read from the likes
// alone now) counts the likes made before the upgrade; a like made after
// it has its author too.
func TestMigrateLikesAuthor(t *testing.T) {
	ctx := t.Context()
	path := dbBefore(t, "migrations/006",
		`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000001', 'a', 1), ('13800000002', 'b', 1), ('13800000003', 'c', 1)`,
		`INSERT INTO posts (user_id, title, content, liked, created_at, updated_at) VALUES (2, 't', 'c', 1, 5, 5), (3, 't', 'c', 1, 6, 6)`,
		`INSERT INTO likes (post_id, user_id, created_at) VALUES (1, 1, 10), (2, 1, 20)`)
	db, err := sqlite.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	feedtest.CheckLikesAuthored(t, db, func(viewer int64) ([]feedtest.Like, error) {
		rows, err := db.Read.QueryContext(ctx, `SELECT post_id, author_id, created_at FROM likes WHERE user_id = ?`, viewer)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []feedtest.Like
		for rows.Next() {
			var l feedtest.Like
			if err := rows.Scan(&l.PostID, &l.AuthorID, &l.At); err != nil {
				return nil, err
			}
			out = append(out, l)
		}
		return out, rows.Err()
	})
}

func TestImportStore(t *testing.T) { feedtest.TestImportStore(t, openBackend) }

// BenchmarkImportFollows is feedd import's follows into the embedded
// store, with the writer tuned for a bulk load as feedd import's is
// (sqlite.Options.Bulk) and as SQLite's defaults have it:
//
//	go test -run '^$' -bench ImportFollows -benchtime 1x -count 5 ./sqlite
func BenchmarkImportFollows(b *testing.B) {
	for _, bulk := range []bool{false, true} {
		b.Run(fmt.Sprintf("bulk=%t", bulk), func(b *testing.B) {
			feedtest.BenchImportFollows(b, func(b *testing.B) feed.ImportStore {
				db, err := sqlite.OpenOptions(context.Background(), b.TempDir(), sqlite.Options{Synchronous: "NORMAL", Bulk: bulk})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				return db
			}, 2_000_000, 100_000, 100_000)
		})
	}
}
