package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/sqlite"
)

// BenchmarkConcurrentWrites is 32 writers toggling likes, or follows, on
// the store at once, with each synchronous level: group commit's gain is
// FULL's writes/s against NORMAL's (commit.go).
//
//	go test -run '^$' -bench ConcurrentWrites -count 5 ./sqlite
func BenchmarkConcurrentWrites(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, op := range []string{"likes", "follows"} {
			b.Run(sync+"/"+op, func(b *testing.B) {
				ctx := context.Background()
				db, err := sqlite.OpenOptions(ctx, b.TempDir(), sqlite.Options{Synchronous: sync})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
				now := time.UnixMilli(1_800_000_000_000)
				const users, posts = 200, 20
				var ids, postIDs []int64
				for i := range users {
					u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("138%08d", i), fmt.Sprintf("u%d", i), now)
					if err != nil {
						b.Fatal(err)
					}
					ids = append(ids, u.ID)
				}
				for i := range posts {
					p := &feed.Post{UserID: ids[i], Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
					if err := db.CreatePost(ctx, p); err != nil {
						b.Fatal(err)
					}
					postIDs = append(postIDs, p.ID)
				}
				var seq atomic.Int64
				b.SetParallelism(16) // 16 x GOMAXPROCS (2 here): 32 writers
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					g := seq.Add(1)
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					me := ids[int(g)%users]
					following := map[int64]bool{}
					for pb.Next() {
						var err error
						if op == "likes" {
							_, err = db.ToggleLike(ctx, postIDs[rng.IntN(posts)], me, now)
						} else {
							t := ids[rng.IntN(users)]
							if t == me {
								continue
							}
							err = db.SetFollow(ctx, me, t, !following[t], now)
							following[t] = !following[t]
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
			})
		}
	}
}
