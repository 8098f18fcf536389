package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/postgres"
)

// open opens a fresh database, migrated, closed when t ends. Its Enqueue is
// unset.
func open(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), testenv.PostgresURL(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// openWithJobs opens a fresh database whose enqueued jobs collect in memory;
// jobs returns and clears them.
func openWithJobs(t *testing.T) (db *postgres.DB, jobs func() []feed.Job) {
	db = open(t)
	var mu sync.Mutex
	var pending []feed.Job
	db.Enqueue = func(ctx context.Context, tx pgx.Tx, js ...feed.Job) error {
		mu.Lock()
		defer mu.Unlock()
		pending = append(pending, js...)
		return nil
	}
	return db, func() []feed.Job {
		mu.Lock()
		defer mu.Unlock()
		out := pending
		pending = nil
		return out
	}
}

func openBackend(t *testing.T) *feedtest.Backend {
	db, jobs := openWithJobs(t)
	return &feedtest.Backend{
		Users: db, Auth: db, Posts: db, Follows: db, Social: db, Filters: db, Ranks: db, Snapshots: db, Comments: db, Reposts: db,
		Identities: db, APIKeys: db, Accounts: db, Media: db,
		Inbox:  &postgres.Inbox{DB: db, Cap: 1 << 20}, // the suites' model keeps everything
		Outbox: &postgres.Outbox{DB: db},
		Jobs:   jobs,
	}
}

func TestInbox(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T, cap int) feed.Inbox { return &postgres.Inbox{DB: open(t), Cap: cap} }, feed.InboxSlack)
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
	db.Enqueue = func(context.Context, pgx.Tx, ...feed.Job) error { return boom }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); !errors.Is(err, boom) {
		t.Fatalf("CreatePost with a failing queue = %v, want %v", err, boom)
	}
	if posts, err := db.PostsOfUser(ctx, u.ID, 0, 10); err != nil || len(posts) != 0 {
		t.Fatalf("after failed enqueues PostsOfUser = %d posts, %v; want none", len(posts), err)
	}
	db.Enqueue = func(context.Context, pgx.Tx, ...feed.Job) error { return nil }
	p = &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	db.Enqueue = func(context.Context, pgx.Tx, ...feed.Job) error { return boom }
	if err := db.DeletePost(ctx, p.ID, u.ID); !errors.Is(err, boom) {
		t.Fatalf("DeletePost with a failing queue = %v, want %v", err, boom)
	}
	if _, err := db.Post(ctx, p.ID); err != nil {
		t.Fatalf("the post is gone after a DeletePost whose job failed: %v", err)
	}
}

// The tests below are PostgreSQL's own: many writers at once, which SQLite
// never has.

// Processes starting at once apply each migration once, and migrating
// again is a no-op.
func TestOpenConcurrentAndMigrateAgain(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	dbs := make([]*postgres.DB, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = postgres.Open(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	db := dbs[0]
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	if err := db.MigrateRiver(ctx); err != nil {
		t.Fatalf("migrate river again: %v", err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) < 1 {
		t.Fatalf("migration files %v, %v", files, err)
	}
	var applied int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM feedd_schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	} else if applied != len(files) {
		t.Fatalf("feedd_schema_migrations has %d rows, want %d", applied, len(files))
	}
	var river bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&river); err != nil {
		t.Fatal(err)
	} else if !river {
		t.Fatal("river_job table missing after Open")
	}
}

func newUsers(t *testing.T, db *postgres.DB, n int) []*feed.User {
	t.Helper()
	users := make([]*feed.User, n)
	for i := range users {
		u, err := db.FindOrCreateUser(context.Background(), fmt.Sprintf("138%08d", i), fmt.Sprintf("user_%d", i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		users[i] = u
	}
	return users
}

// Concurrent toggles by the same and different users leave the counter
// equal to the number of like rows.
func TestToggleLikeConcurrent(t *testing.T) {
	db, _ := openWithJobs(t)
	ctx := context.Background()
	users := newUsers(t, db, 8)
	now := time.Now()
	p := &feed.Post{UserID: users[0].ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	const perUser = 7 // odd: every user ends liking the post
	var wg sync.WaitGroup
	for _, u := range users {
		for range perUser {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := db.ToggleLike(ctx, p.ID, u.ID, time.Now()); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	got, err := db.Post(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	likers, err := db.Likers(ctx, p.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got.Liked != len(users) || len(likers) != len(users) {
		t.Fatalf("liked = %d, likers = %d, want %d", got.Liked, len(likers), len(users))
	}
}

// Concurrent follows, unfollows and mutual follows keep fans and followee
// equal to the follow rows, without deadlocks.
func TestSetFollowConcurrent(t *testing.T) {
	db, _ := openWithJobs(t)
	ctx := context.Background()
	users := newUsers(t, db, 6)
	var wg sync.WaitGroup
	for round := range 5 {
		for _, a := range users {
			for _, b := range users {
				if a.ID == b.ID {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := db.SetFollow(ctx, a.ID, b.ID, round%2 == 0, time.Now()); err != nil {
						t.Error(err)
					}
				}()
			}
		}
	}
	wg.Wait()
	for _, u := range users {
		got, err := db.User(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		var fans, followee int
		db.Pool.QueryRow(ctx, `SELECT count(*) FROM follows WHERE followee_id = $1`, u.ID).Scan(&fans)
		db.Pool.QueryRow(ctx, `SELECT count(*) FROM follows WHERE follower_id = $1`, u.ID).Scan(&followee)
		if got.Fans != fans || got.Followee != followee {
			t.Fatalf("user %d: fans %d followee %d, rows say %d and %d", u.ID, got.Fans, got.Followee, fans, followee)
		}
	}
}

// Of concurrent code requests for one phone at most one is stored, and a
// code logs in once however many try it at once.
func TestCodesConcurrent(t *testing.T) {
	db, _ := openWithJobs(t)
	ctx := context.Background()
	now := time.Now()
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	saved, consumed := 0, 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.SaveCode(ctx, "13800000000", "hash", now, feed.CodeTTL, feed.CodeResendAfter)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				saved++
			} else if feed.ErrorCode(err) != feed.ECONFLICT {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.ConsumeCode(ctx, "13800000000", "hash", now, feed.CodeMaxTries)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				consumed++
			} else if feed.ErrorCode(err) != feed.EINVALID {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if saved != 1 || consumed != 1 {
		t.Fatalf("saved %d, consumed %d; want 1 and 1", saved, consumed)
	}
}

// Likes racing the deletion of their post never outlive it, and nothing
// deadlocks: ToggleLike either commits before DeletePost removes the likes
// or finds no post.
func TestDeletePostWhileLiking(t *testing.T) {
	db, _ := openWithJobs(t)
	ctx := context.Background()
	users := newUsers(t, db, 8)
	now := time.Now()
	for range 5 {
		p := &feed.Post{UserID: users[0].ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
		if err := db.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i, u := range users {
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := db.ToggleLike(ctx, p.ID, u.ID, time.Now()); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
						t.Error(err)
					}
				}()
			}
			if i == len(users)/2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := db.DeletePost(ctx, p.ID, users[0].ID); err != nil {
						t.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM likes WHERE post_id = $1`, p.ID).Scan(&n); err != nil {
			t.Fatal(err)
		} else if n != 0 {
			t.Fatalf("%d likes outlived post %d", n, p.ID)
		}
	}
}

func TestFindOrCreateUserConcurrent(t *testing.T) {
	db, _ := openWithJobs(t)
	ctx := context.Background()
	const n = 8
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := db.FindOrCreateUser(ctx, "13900000000", fmt.Sprintf("user_%d", i), time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = u.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == 0 {
			t.Fatalf("ids %v: want one user", ids)
		}
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
	rows, err := db.Pool.Query(ctx, `SELECT token_hash FROM sessions ORDER BY token_hash`)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tokens) != 1 || tokens[0] != "new" {
		t.Fatalf("sessions after the sweep: %v (%v), want [new]", tokens, err)
	}
}

func TestFilters(t *testing.T) { feedtest.TestFilters(t, openBackend) }

// TestDeliverConcurrentCap: fan-out batches of different posts over
// overlapping audiences, with removals and exact trims among them, run at
// once without deadlocks, and every inbox stays within the cap's slack.
func TestDeliverConcurrentCap(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	const cap, workers, posts, users = 20, 6, 40, 300
	ib := &postgres.Inbox{DB: db, Cap: cap}
	var wg sync.WaitGroup
	errs := make(chan error, workers*posts*2)
	for w := range workers {
		wg.Go(func() {
			for i := range posts {
				id := int64(w*posts + i + 1)
				e := feed.Entry{PostID: id, Score: 1_700_000_000_000 + int64(i)}
				// Audiences overlap and come in different orders.
				var to []int64
				for u := int64(1 + w%3); u <= users; u += int64(1 + w%2) {
					to = append(to, u)
				}
				if w%2 == 1 {
					slices.Reverse(to)
				}
				errs <- ib.Deliver(ctx, e, to)
				switch i % 10 {
				case 3:
					errs <- ib.Remove(ctx, e, to[:len(to)/2])
				case 7:
					errs <- ib.Trim(ctx, to[0], cap)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var most int
	if err := db.Pool.QueryRow(ctx, `SELECT max(n) FROM (SELECT count(*) AS n FROM inbox GROUP BY user_id) c`).Scan(&most); err != nil {
		t.Fatal(err)
	}
	if most > cap+feed.InboxSlack(cap) || most < cap {
		t.Fatalf("largest inbox holds %d entries; cap %d, slack %d", most, cap, feed.InboxSlack(cap))
	}
}

func TestComments(t *testing.T) { feedtest.TestComments(t, openBackend) }

func TestImportStore(t *testing.T) { feedtest.TestImportStore(t, openBackend) }

func TestMedia(t *testing.T) { feedtest.TestMedia(t, openBackend) }

// BenchmarkImportFollows is feedd import's follows into PostgreSQL (COPY
// through a staging table); rows per CPU second are this process's only
// (the server's work is the server's):
//
//	go test -run '^$' -bench ImportFollows -benchtime 1x -count 5 ./postgres
func BenchmarkImportFollows(b *testing.B) {
	feedtest.BenchImportFollows(b, func(b *testing.B) feed.ImportStore { return open(b) }, 2_000_000, 100_000, 100_000)
}

func TestReposts(t *testing.T) { feedtest.TestReposts(t, openBackend) }
