package fanout_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

// countingObserver counts what fan-out reports.
type countingObserver struct {
	mu        sync.Mutex
	discarded map[string]int
}

func (o *countingObserver) Delivered(int)          {}
func (o *countingObserver) Lag(time.Duration)      {}
func (o *countingObserver) FirstLag(time.Duration) {}
func (o *countingObserver) Pushed(string)          {}
func (o *countingObserver) Discarded(kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.discarded == nil {
		o.discarded = map[string]int{}
	}
	o.discarded[kind]++
}

func (o *countingObserver) count(kind string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.discarded[kind]
}

// syncBuffer is a log sink safe for the workers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jobsIn counts the River jobs of kind ("" for every kind) in one of
// states ("" for any state).
func (w *world) jobsIn(t *testing.T, kind string, states ...string) int {
	t.Helper()
	q := `SELECT count(*) FROM river_job WHERE (? = '' OR kind = ?)`
	args := []any{kind, kind}
	if len(states) > 0 {
		q += ` AND state IN (` + strings.TrimSuffix(strings.Repeat("?,", len(states)), ",") + `)`
		for _, s := range states {
			args = append(args, s)
		}
	}
	var n int
	if err := w.db.Read.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitIdle waits until no job is left to run (every one completed or
// discarded).
func (w *world) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.jobsIn(t, "", "available", "running", "retryable", "scheduled", "pending") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still to run", w.jobsIn(t, "", "available", "running", "retryable", "scheduled", "pending"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failOnceAfterBatches fails the post job's first write to its followers
// with an outage, once the job has inserted its batch jobs (want of them):
// a post job cut off after enqueuing its batches.
type failOnceAfterBatches struct {
	feed.Inbox
	w      *world
	t      *testing.T
	want   int
	failed atomic.Bool
}

func (f *failOnceAfterBatches) Deliver(ctx context.Context, e feed.Entry, ids []int64) error {
	if ids[0] != f.w.author && f.failed.CompareAndSwap(false, true) {
		deadline := time.Now().Add(30 * time.Second)
		for f.w.jobsIn(f.t, "feed_batch") < f.want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return fmt.Errorf("%w: injected", feed.ErrUnavailable)
	}
	return f.Inbox.Deliver(ctx, e, ids)
}

// TestFanoutRetryInsertsBatchesOnce: a post job whose audience is split
// (1000 followers, ranges of 300: the job's own and 3 batch jobs) fails
// after inserting its batch jobs and runs again, with followers skipped by
// activity (ActiveWindow) and a clock that moved between the attempts: it
// leaves exactly one set of batch jobs, and every inbox holds the post.
func TestFanoutRetryInsertsBatchesOnce(t *testing.T) {
	w := newWorld(t, 1000)
	ib := &failOnceAfterBatches{Inbox: w.inbox, w: w, t: t, want: 3}
	var tick atomic.Int64
	start := time.Now()
	now := func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Second) }
	q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 1, PollInterval: 20 * time.Millisecond},
		&fanout.Deps{Follows: w.db, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: ib,
			BatchSize: 50, SplitSize: 300, ActiveWindow: 24 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	w.db.Enqueue = q.EnqueueTx
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	p := w.publish(t)
	w.waitHolders(t, p.ID, 1001)
	w.waitIdle(t)
	if !ib.failed.Load() {
		t.Fatal("the post job's write was never failed")
	}
	if n := w.jobsIn(t, "feed_batch"); n != 3 {
		t.Errorf("%d batch jobs, want 3 (one set)", n)
	}
}

// TestFanoutRefusedInboxDoesNotStall: one follower's inbox key (of 1000)
// holds a plain string, so every delivery to it is refused (WRONGTYPE).
// The other 999 and the author get the post, and the job that covers the
// bad inbox uses its attempts and ends, discarded, counted and logged with
// the post id, rather than being snoozed for ever. The bad inbox is in the
// post job's own range, then in a batch job's.
func TestFanoutRefusedInboxDoesNotStall(t *testing.T) {
	rdb, prefix := redisClient(t)
	w := newWorld(t, 1000)
	for _, c := range []struct {
		name string
		bad  int // index of the follower whose inbox is broken
		kind string
	}{{"post job's range", 100, "feed_post"}, {"batch job's range", 800, "feed_batch"}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix + c.kind + ":"})
			bad := w.users[c.bad]
			if err := rdb.Set(ctx, ib.HeadKey(bad), "not an inbox", 0).Err(); err != nil {
				t.Fatal(err)
			}
			obs := &countingObserver{}
			logs := &syncBuffer{}
			q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 4, PollInterval: 20 * time.Millisecond, MaxAttempts: 2,
				Log: slog.New(slog.NewTextHandler(logs, nil))},
				&fanout.Deps{Follows: w.db, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: ib,
					BatchSize: 50, SplitSize: 300, Observe: obs})
			if err != nil {
				t.Fatal(err)
			}
			w.db.Enqueue = q.EnqueueTx
			if err := q.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer q.Stop(ctx)
			discarded := w.jobsIn(t, c.kind, "discarded")
			p := w.publish(t)
			w.waitIdle(t)
			if n := w.jobsIn(t, c.kind, "discarded") - discarded; n != 1 {
				t.Fatalf("%d %s jobs discarded, want 1", n, c.kind)
			}
			var attempt int
			if err := w.db.Read.QueryRow(`SELECT attempt FROM river_job WHERE kind = ? AND state = 'discarded' ORDER BY id DESC LIMIT 1`, c.kind).Scan(&attempt); err != nil {
				t.Fatal(err)
			}
			if attempt != 2 {
				t.Errorf("discarded after attempt %d, want 2 (its attempts used, not snoozed)", attempt)
			}
			member := ib.HeadMember(feed.Entry{PostID: p.ID, Score: p.Score()})
			pipe := rdb.Pipeline()
			cmds := map[int64]*goredis.FloatCmd{}
			for _, u := range append([]int64{w.author}, w.users...) {
				if u != bad {
					cmds[u] = pipe.ZScore(ctx, ib.HeadKey(u), member)
				}
			}
			if _, err := pipe.Exec(ctx); err != nil && err != goredis.Nil {
				t.Fatal(err)
			}
			missing := 0
			for _, cmd := range cmds {
				if cmd.Err() != nil {
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("%d of %d inboxes miss the post", missing, len(cmds))
			}
			if n := obs.count(c.kind); n != 1 {
				t.Errorf("%d %s jobs reported discarded, want 1", n, c.kind)
			}
			if l := logs.String(); !strings.Contains(l, "failed for good") || !strings.Contains(l, fmt.Sprintf("post_id=%d", p.ID)) || !strings.Contains(l, "WRONGTYPE") {
				t.Errorf("no error log of the discarded job with post_id=%d and its error:\n%s", p.ID, l)
			}
		})
	}
}

// redisClient is a client of the test Redis, closed when t ends, and the
// key prefix of t.
func redisClient(t *testing.T) (*goredis.Client, string) {
	url, prefix := testenv.RedisURL(t)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb, prefix
}
