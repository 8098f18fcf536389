package redis_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// postsIndex is a durable outbox (the posts of each author) for
// redis.Outbox to rebuild from.
type postsIndex struct {
	mu    sync.Mutex
	posts map[int64][]feed.Entry
}

func (p *postsIndex) Add(context.Context, int64, feed.Entry) error    { return nil }
func (p *postsIndex) Remove(context.Context, int64, feed.Entry) error { return nil }
func (p *postsIndex) Clear(context.Context, int64) error              { return nil }
func (p *postsIndex) Entries(_ context.Context, authors []int64, b feed.Bound, limit int) ([]feed.Entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []feed.Entry
	for _, a := range authors {
		out = append(out, p.posts[a]...)
	}
	slices.SortFunc(out, feed.CompareEntries)
	return out[:min(limit, len(out))], nil
}

// TestOutboxForget: an outbox copied into Redis keeps what it had when
// posts reach the durable index alone (an import); Forget drops the copy,
// and the next read has them all, on one node and on a Cluster, for
// authors whose keys are on different nodes.
func TestOutboxForget(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		ctx := context.Background()
		rdb, prefix := open(t)
		src := &postsIndex{posts: map[int64][]feed.Entry{1: {{PostID: 10, Score: 1000}}, 2: {{PostID: 20, Score: 2000}}}}
		o := redis.NewOutbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: 100}, src)
		read := func() []int64 {
			t.Helper()
			es, err := o.Entries(ctx, []int64{1, 2}, feed.AtMost(math.MaxInt64), 10)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, e := range es {
				ids = append(ids, e.PostID)
			}
			return ids
		}
		if got := read(); !slices.Equal(got, []int64{20, 10}) {
			t.Fatalf("first read %v", got)
		}
		src.mu.Lock()
		src.posts[1] = append(src.posts[1], feed.Entry{PostID: 11, Score: 3000})
		src.mu.Unlock()
		if got := read(); !slices.Equal(got, []int64{20, 10}) {
			t.Fatalf("the copy changed by itself: %v", got)
		}
		if err := o.Forget(ctx, []int64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if got := read(); !slices.Equal(got, []int64{11, 20, 10}) {
			t.Fatalf("after Forget %v, want [11 20 10]", got)
		}
	})
}
