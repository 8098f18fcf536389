package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
		Users: db, Auth: db, Posts: db, Follows: db, Social: db, Filters: db, Ranks: db, Snapshots: db, Comments: db, Reposts: db,
		Identities: db, APIKeys: db, Accounts: db, Media: db,
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

func TestIdentity(t *testing.T) { feedtest.TestIdentity(t, openBackend) }

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

func TestComments(t *testing.T) { feedtest.TestComments(t, openBackend) }

func TestImportStore(t *testing.T) { feedtest.TestImportStore(t, openBackend) }

func TestMedia(t *testing.T) { feedtest.TestMedia(t, openBackend) }

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

func TestReposts(t *testing.T) { feedtest.TestReposts(t, openBackend) }
