package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/sqlite"
)

// openRepostWorld is benchWorld's shape with reposts: a viewer following
// 20 users, each with 20 entries in the viewer's inbox, of which share are
// reposts of posts by 40 users the viewer does not follow (each of those
// posts reposted by two of the 20).
func openRepostWorld(b *testing.B, share float64) (*feed.Service, int64) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	var jobs []feed.Job
	db.Enqueue = func(_ context.Context, _ *sql.Tx, js ...feed.Job) error { jobs = append(jobs, js...); return nil }
	ib := &sqlite.Inbox{DB: db}
	svc := &feed.Service{Users: db, Auth: db, Posts: db, Follows: db, Social: db, Outbox: &sqlite.Outbox{DB: db}, Inbox: ib,
		Filters: db, Ranks: db, Snapshots: db, Reposts: db}
	now := time.UnixMilli(1_800_000_000_000)
	user := func(i int) int64 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", i), fmt.Sprintf("user%d", i), now)
		if err != nil {
			b.Fatal(err)
		}
		return u.ID
	}
	viewer := user(0)
	var others []*feed.Post
	for o := range 40 {
		u := user(1000 + o)
		for i := range 5 {
			t := now.Add(time.Duration(o*5+i) * time.Millisecond)
			p := &feed.Post{UserID: u, Title: "title", Content: "some content\nof a post", Images: "/a.jpg", CreatedAt: t, UpdatedAt: t}
			if err := db.CreatePost(ctx, p); err != nil {
				b.Fatal(err)
			}
			others = append(others, p)
		}
	}
	next := 0
	for a := range 20 {
		u := user(1 + a)
		if err := db.SetFollow(ctx, viewer, u, true, now); err != nil {
			b.Fatal(err)
		}
		jobs = nil
		for i := range 20 {
			t := now.Add(time.Hour + time.Duration(a*20+i)*time.Second)
			if int(float64(i+1)*share) > int(float64(i)*share) { // share of the 20, spread
				if _, err := db.SetRepost(ctx, u, others[next/2%len(others)].ID, true, t); err != nil {
					b.Fatal(err)
				}
				next++
				continue
			}
			p := &feed.Post{UserID: u, Title: "title", Content: "some content\nof a post", Images: "/a.jpg", CreatedAt: t, UpdatedAt: t}
			if err := db.CreatePost(ctx, p); err != nil {
				b.Fatal(err)
			}
			if p.ID%3 == 0 {
				if _, err := db.ToggleLike(ctx, p.ID, viewer, t); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, j := range jobs {
			if f, ok := j.(feed.FanoutJob); ok {
				if err := ib.Deliver(ctx, feed.Entry{PostID: f.PostID, Score: f.Score}, []int64{viewer, u}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return svc, viewer
}

// BenchmarkScrollFeedReposts is BenchmarkScrollFeed's page of 10 on a
// timeline of which 30% of the entries are reposts, against none: the cost
// of placing reposts and telling who shared each post.
func BenchmarkScrollFeedReposts(b *testing.B) {
	ctx := context.Background()
	for _, share := range []float64{0, 0.3} {
		b.Run(fmt.Sprintf("reposts=%.1f", share), func(b *testing.B) {
			svc, viewer := openRepostWorld(b, share)
			cpu := cpuTime()
			for b.Loop() {
				s, err := svc.ScrollFeed(ctx, viewer, feed.ScrollCursor{LastID: 1 << 62, Offset: 0}, 10)
				if err != nil || s == nil || len(s.List) == 0 {
					b.Fatalf("scroll: %v", err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkScrollFeedRepostsBig is BenchmarkScrollFeedReposts on the
// graph of feedd bench read: 1000 users following 20 each, 10 entries
// each, 30% of them (in three rounds drawn for each user) reposts of
// random posts of earlier rounds, against none; the first pages of 50
// viewers.
func BenchmarkScrollFeedRepostsBig(b *testing.B) {
	for _, share := range []int{0, 3} {
		b.Run(fmt.Sprintf("reposts=0.%d", share), func(b *testing.B) { benchBigReposts(b, share) })
	}
}

func benchBigReposts(b *testing.B, shares int) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	var jobs []feed.Job
	db.Enqueue = func(_ context.Context, _ *sql.Tx, js ...feed.Job) error { jobs = append(jobs, js...); return nil }
	ib := &sqlite.Inbox{DB: db}
	svc := &feed.Service{Users: db, Auth: db, Posts: db, Follows: db, Social: db, Outbox: &sqlite.Outbox{DB: db}, Inbox: ib,
		Filters: db, Ranks: db, Snapshots: db, Reposts: db}
	now := time.UnixMilli(1_800_000_000_000)
	const users = 1000
	ids := make([]int64, users)
	for i := range ids {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", i), fmt.Sprintf("user%d", i), now)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = u.ID
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fans := map[int64][]int64{}
	for _, u := range ids {
		picked := map[int64]bool{u: true}
		for len(picked) <= 20 {
			v := ids[rng.IntN(users)]
			if !picked[v] {
				picked[v] = true
				if err := db.SetFollow(ctx, u, v, true, now); err != nil {
					b.Fatal(err)
				}
				fans[v] = append(fans[v], u)
			}
		}
	}
	reposting := make([]map[int]bool, users)
	for u := range reposting {
		reposting[u] = map[int]bool{}
		for _, r := range rng.Perm(9)[:shares] {
			reposting[u][r+1] = true
		}
	}
	var posts []int64
	t := now
	for round := range 10 {
		for u := range users {
			t = t.Add(time.Millisecond)
			if reposting[u][round] {
				if _, err := db.SetRepost(ctx, ids[u], posts[rng.IntN(len(posts))], true, t); err != nil {
					b.Fatal(err)
				}
				continue
			}
			p := &feed.Post{UserID: ids[u], Title: "title", Content: "some content", CreatedAt: t, UpdatedAt: t}
			if err := db.CreatePost(ctx, p); err != nil {
				b.Fatal(err)
			}
			posts = append(posts, p.ID)
		}
	}
	for _, j := range jobs {
		if f, ok := j.(feed.FanoutJob); ok {
			if err := ib.Deliver(ctx, feed.Entry{PostID: f.PostID, Score: f.Score}, append([]int64{f.AuthorID}, fans[f.AuthorID]...)); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu := cpuTime()
	i := 0
	for b.Loop() {
		if _, err := svc.ScrollFeed(ctx, ids[i%50*20], feed.ScrollCursor{LastID: 1 << 62, Offset: 0}, 10); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
