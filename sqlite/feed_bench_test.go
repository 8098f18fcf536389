package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/sqlite"
)

// The hot paths of a feed read and of fan-out on the embedded store, for
// comparing a change with benchstat:
//
//	go test -run '^$' -bench . -count 10 ./sqlite > old.txt
//	(change)
//	go test -run '^$' -bench . -count 10 ./sqlite > new.txt; benchstat old.txt new.txt

// benchWorld is a viewer following 20 authors of 20 posts each, every post
// delivered to the viewer's inbox, a third of them liked.
type benchWorld struct {
	db     *sqlite.DB
	svc    *feed.Service
	viewer int64
	posts  []*feed.Post
}

func openBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	w := &benchWorld{db: db}
	ib := &sqlite.Inbox{DB: db}
	w.svc = &feed.Service{Users: db, Auth: db, Posts: db, Follows: db, Social: db, Outbox: &sqlite.Outbox{DB: db}, Inbox: ib,
		Filters: db, Ranks: db, Snapshots: db}
	now := time.UnixMilli(1_800_000_000_000)
	viewer, err := db.FindOrCreateUser(ctx, "13800000000", "viewer", now)
	if err != nil {
		b.Fatal(err)
	}
	w.viewer = viewer.ID
	for a := range 20 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", a), fmt.Sprintf("author%d", a), now)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.SetFollow(ctx, w.viewer, u.ID, true, now); err != nil {
			b.Fatal(err)
		}
		for i := range 20 {
			t := now.Add(time.Duration(a*20+i) * time.Second)
			p := &feed.Post{UserID: u.ID, Title: "title", Content: "some content\nof a post", Images: "/a.jpg", CreatedAt: t, UpdatedAt: t}
			if err := db.CreatePost(ctx, p); err != nil {
				b.Fatal(err)
			}
			if err := ib.Deliver(ctx, feed.Entry{PostID: p.ID, Score: p.Score()}, []int64{w.viewer, u.ID}); err != nil {
				b.Fatal(err)
			}
			if p.ID%3 == 0 {
				if _, err := db.ToggleLike(ctx, p.ID, w.viewer, t); err != nil {
					b.Fatal(err)
				}
			}
			w.posts = append(w.posts, p)
		}
	}
	return w
}

// BenchmarkScrollFeed is one hydrated page of the follow feed, as GET
// /blog/of/follow serves it: the inbox page, the cursor, the posts, their
// visibility, authors and the viewer's likes.
func BenchmarkScrollFeed(b *testing.B) {
	w := openBenchWorld(b)
	ctx := context.Background()
	for _, size := range []int{10, 50} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			for b.Loop() {
				s, err := w.svc.ScrollFeed(ctx, w.viewer, feed.ScrollCursor{LastID: 1 << 62, Offset: 0}, size)
				if err != nil || s == nil || len(s.List) != size {
					b.Fatalf("scroll: %v", err)
				}
			}
		})
	}
}

// BenchmarkHydrate is the hydration of 10 posts: their authors and the
// viewer's likes, in a constant number of queries.
func BenchmarkHydrate(b *testing.B) {
	w := openBenchWorld(b)
	ctx := context.Background()
	posts := w.posts[:10]
	for b.Loop() {
		if _, err := w.svc.Hydrate(ctx, w.viewer, posts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPullFollowees is the question every feed page asks first: which
// of the viewer's 20 followees are in pull mode (none here).
func BenchmarkPullFollowees(b *testing.B) {
	w := openBenchWorld(b)
	ctx := context.Background()
	for b.Loop() {
		if ids, err := w.db.PullFollowees(ctx, w.viewer); err != nil || len(ids) != 0 {
			b.Fatalf("PullFollowees = %v, %v", ids, err)
		}
	}
}

// BenchmarkInboxPage is the range query of a feed page on the embedded inbox.
func BenchmarkInboxPage(b *testing.B) {
	w := openBenchWorld(b)
	ctx := context.Background()
	ib := &sqlite.Inbox{DB: w.db}
	for b.Loop() {
		if es, err := ib.Page(ctx, w.viewer, feed.AtMost(1<<62), 0, 10); err != nil || len(es) != 10 {
			b.Fatalf("page: %v", err)
		}
	}
}

// BenchmarkInboxDeliver is one fan-out batch on the embedded inbox: one
// entry into 1000 inboxes in one statement. It reports deliveries/s.
func BenchmarkInboxDeliver(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ib := &sqlite.Inbox{DB: db}
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	post := int64(0)
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		post++
		if err := ib.Deliver(ctx, feed.Entry{PostID: post, Score: 1_800_000_000_000 + post}, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(post*int64(len(ids)))/time.Since(start).Seconds(), "deliveries/s")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(post*int64(len(ids))), "cpu-ns/delivery")
}

// cpuTime is the CPU time this process has used (user and system): on a
// machine shared with other work it measures a benchmark better than the
// time it took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkInboxDeliverFull is one fan-out batch into full inboxes: one
// entry into 1000 inboxes that each hold the default cap (800) to start
// with, as an active user's does. Run it long enough for every inbox to be
// trimmed several times (-benchtime 1000x: five trims each at the default
// slack of 200). It reports deliveries/s and the entries per inbox at the
// end.
func BenchmarkInboxDeliverFull(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const users, full = 1000, 800
	// Entries of posts 1..full, scores a second apart, added to each inbox
	// in one call.
	ib := &sqlite.Inbox{DB: db}
	entries := make([]feed.Entry, full)
	for i := range entries {
		entries[i] = feed.Entry{PostID: int64(i + 1), Score: 1_800_000_000_000 + int64(i+1)*1000}
	}
	for u := int64(1); u <= users; u++ {
		if err := ib.Add(ctx, u, entries); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]int64, users)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	post := int64(full)
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		post++
		if err := ib.Deliver(ctx, feed.Entry{PostID: post, Score: 1_800_000_000_000 + post*1000}, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((post-full)*users)/time.Since(start).Seconds(), "deliveries/s")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64((post-full)*users), "cpu-ns/delivery")
	var n int64
	if err := db.Read.QueryRowContext(ctx, `SELECT count(*) FROM inbox`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/users, "entries/inbox")
}

// BenchmarkInboxDeliverSparse is one fan-out batch to 1000 users drawn at
// random among 100 000 whose inboxes hold 20 entries each: unlike the
// consecutive users of the benchmarks above, each delivery writes a page
// of its own, as it does in a large database.
func BenchmarkInboxDeliverSparse(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const users, held = 100_000, 20
	if _, err := db.Write.ExecContext(ctx, `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?2),
		u(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM u WHERE id < ?1)
		INSERT INTO inbox (user_id, score, post_id) SELECT id, 1800000000000 + i * 1000, i FROM u, g`, users, held); err != nil {
		b.Fatal(err)
	}
	ib := &sqlite.Inbox{DB: db}
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]int64, 1000)
	post := int64(held)
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		post++
		for i := range ids {
			ids[i] = 1 + r.Int64N(users)
		}
		if err := ib.Deliver(ctx, feed.Entry{PostID: post, Score: 1_800_000_000_000 + post*1000}, ids); err != nil {
			b.Fatal(err)
		}
	}
	n := float64((post - held) * int64(len(ids)))
	b.ReportMetric(n/time.Since(start).Seconds(), "deliveries/s")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/n, "cpu-ns/delivery")
}
