package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
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
	var jobs []any
	db.Enqueue = func(ctx context.Context, tx *sql.Tx, js ...any) error {
		mu.Lock()
		defer mu.Unlock()
		jobs = append(jobs, js...)
		return nil
	}
	return &feedtest.Backend{
		Users: db, Auth: db, Posts: db, Follows: db,
		Inbox: &sqlite.Inbox{DB: db},
		Jobs: func() []any {
			mu.Lock()
			defer mu.Unlock()
			out := jobs
			jobs = nil
			return out
		},
	}
}

func TestInbox(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T) feed.Inbox { return &sqlite.Inbox{DB: open(t)} })
}

func TestStores(t *testing.T) { feedtest.TestStores(t, openBackend) }

func TestFeed(t *testing.T) { feedtest.TestFeed(t, openBackend) }

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
	db.Enqueue = func(context.Context, *sql.Tx, ...any) error { return boom }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); !errors.Is(err, boom) {
		t.Fatalf("CreatePost with a failing queue = %v, want %v", err, boom)
	}
	if posts, err := db.PostsOfUser(ctx, u.ID, 0, 10); err != nil || len(posts) != 0 {
		t.Fatalf("after failed enqueues PostsOfUser = %d posts, %v; want none", len(posts), err)
	}
	db.Enqueue = func(context.Context, *sql.Tx, ...any) error { return nil }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	db.Enqueue = func(context.Context, *sql.Tx, ...any) error { return boom }
	if err := db.DeletePost(ctx, p.ID, u.ID); !errors.Is(err, boom) {
		t.Fatalf("DeletePost with a failing queue = %v, want %v", err, boom)
	}
	if _, err := db.Post(ctx, p.ID); err != nil {
		t.Fatalf("the post is gone after a DeletePost whose job failed: %v", err)
	}
}
