package fanout_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

// staleFollows answers the first IsFollowing with "following", as a read
// made just before an unfollow committed would; later reads see the store.
type staleFollows struct {
	feed.FollowStore
	calls atomic.Int64
}

func (s *staleFollows) IsFollowing(ctx context.Context, followerID, followeeID int64) (bool, error) {
	if s.calls.Add(1) == 1 {
		return true, nil
	}
	return s.FollowStore.IsFollowing(ctx, followerID, followeeID)
}

// TestFollowJobAfterUnfollow: a follow's job that runs late leaves no post
// of the followee in an ex-follower's inbox, whether the unfollow
// committed between its check and its copy (the unfollow's job, having run
// before the copy, removed nothing), or before the job ran at all while an
// earlier attempt had copied the posts.
func TestFollowJobAfterUnfollow(t *testing.T) {
	for _, c := range []struct {
		name  string
		stale bool // the job's first check sees the follow
	}{{"unfollow between check and copy", true}, {"unfollow before the job", false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, 1) // jobs dropped until the queue exists
			f := w.users[0]
			p1, p2 := w.publish(t), w.publish(t)
			if !c.stale {
				// An earlier attempt of the follow's job copied the posts.
				es := []feed.Entry{{PostID: p1.ID, Score: p1.Score()}, {PostID: p2.ID, Score: p2.Score()}}
				if err := w.inbox.Add(ctx, f, es); err != nil {
					t.Fatal(err)
				}
			}
			// The unfollow commits; its job finds nothing to remove (dropped).
			if err := w.db.SetFollow(ctx, f, w.author, false, time.Now()); err != nil {
				t.Fatal(err)
			}
			var follows feed.FollowStore = w.db
			if c.stale {
				follows = &staleFollows{FollowStore: w.db}
			}
			q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 1, PollInterval: 20 * time.Millisecond},
				&fanout.Deps{Follows: follows, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: w.inbox, BatchSize: 50, SplitSize: 300})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer q.Stop(ctx)
			tx, err := w.db.Write.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.EnqueueTx(ctx, tx, feed.FollowJob{FollowerID: f, FolloweeID: w.author, Follow: true}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				var n int
				if err := w.db.Read.QueryRow(`SELECT count(*) FROM river_job WHERE kind = 'feed_follow' AND state = 'completed'`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the follow's job did not complete")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n1, n2 := w.holders(t, p1.ID), w.holders(t, p2.ID); n1 != 0 || n2 != 0 {
				t.Fatalf("after the late follow job, the ex-follower's inbox holds the followee's posts (%d, %d inboxes)", n1, n2)
			}
		})
	}
}

// interleavedFollows runs between[n] right after the IsFollowing call
// numbered n (from 1) has read the store: changes of the follow (and their
// jobs) made while the job that read waits.
type interleavedFollows struct {
	feed.FollowStore
	between map[int64]func()
	calls   atomic.Int64
}

func (s *interleavedFollows) IsFollowing(ctx context.Context, followerID, followeeID int64) (bool, error) {
	ok, err := s.FollowStore.IsFollowing(ctx, followerID, followeeID)
	if fn := s.between[s.calls.Add(1)]; fn != nil {
		fn()
	}
	return ok, err
}

// TestFollowJobsInterleaved: a follow's job that runs between another
// job's check and its change to the inbox keeps its effect. An unfollow's
// job that checked before a re-follow committed, and removed after the
// re-follow's job had copied the followee's posts, puts them back; so does
// a follow's job whose second check saw an unfollow and that removed after
// a re-follow's job had copied. On SQL inboxes and on Redis.
func TestFollowJobsInterleaved(t *testing.T) {
	rdb, prefix := redisClient(t)
	for _, inbox := range []string{"sql", "redis"} {
		for _, c := range []struct {
			name   string
			follow bool // the late job is a follow's (else an unfollow's)
		}{{"unfollow job, re-follow before its removal", false}, {"follow job, unfollow and re-follow before its removal", true}} {
			t.Run(inbox+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				w := newWorld(t, 1)
				f := w.users[0]
				var ib feed.Inbox = w.inbox
				if inbox == "redis" {
					ib = redis.NewInbox(rdb, redis.InboxOptions{Prefix: fmt.Sprintf("%sinterleaved:%d:", prefix, time.Now().UnixNano())})
				}
				p1, p2 := w.publish(t), w.publish(t)
				// A built inbox: the follow's backfill, long done, and a
				// post of someone else (so that no removal empties it).
				es := []feed.Entry{{PostID: p1.ID, Score: p1.Score()}, {PostID: p2.ID, Score: p2.Score()}, {PostID: p2.ID + 1000, Score: p2.Score() + 1}}
				if err := ib.Restore(ctx, f, es); err != nil {
					t.Fatal(err)
				}
				follows := &interleavedFollows{FollowStore: w.db}
				q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 2, PollInterval: 20 * time.Millisecond},
					&fanout.Deps{Follows: follows, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: ib, BatchSize: 50, SplitSize: 300})
				if err != nil {
					t.Fatal(err)
				}
				var drop atomic.Bool // the jobs of follow changes are dropped (run late, below) or enqueued
				drop.Store(true)
				w.db.Enqueue = func(ctx context.Context, tx *sql.Tx, jobs ...feed.Job) error {
					if drop.Load() {
						return nil
					}
					return q.EnqueueTx(ctx, tx, jobs...)
				}
				if err := q.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer q.Stop(ctx)
				setFollow := func(on bool) {
					if err := w.db.SetFollow(ctx, f, w.author, on, time.Now()); err != nil {
						t.Error(err)
					}
				}
				refollow := func() { // and its job, run to the end
					done := w.jobsIn(t, "feed_follow", "completed")
					drop.Store(false)
					setFollow(true)
					deadline := time.Now().Add(30 * time.Second)
					for w.jobsIn(t, "feed_follow", "completed") < done+1 {
						if time.Now().After(deadline) {
							t.Error("the re-follow's job did not complete")
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
				// The late job's own change commits now, its job runs below.
				setFollow(false)
				if c.follow {
					setFollow(true)
					// It copies, sees an unfollow at its second check, and
					// removes after a re-follow's job has copied.
					follows.between = map[int64]func(){1: func() { setFollow(false) }, 2: refollow}
				} else {
					// It sees the unfollow, and removes after a re-follow's
					// job has copied.
					follows.between = map[int64]func(){1: refollow}
				}
				tx, err := w.db.Write.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := q.EnqueueTx(ctx, tx, feed.FollowJob{FollowerID: f, FolloweeID: w.author, Follow: c.follow}); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				w.waitIdle(t)
				if n := int64(len(follows.between)); follows.calls.Load() <= n {
					t.Fatalf("IsFollowing called %d times; the interleaving did not run", follows.calls.Load())
				}
				if ok, err := w.db.IsFollowing(ctx, f, w.author); err != nil || !ok {
					t.Fatalf("IsFollowing = %v, %v; the user follows again", ok, err)
				}
				got, err := ib.Page(ctx, f, feed.AtMost(math.MaxInt64), 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 3 {
					t.Fatalf("the follower's inbox holds %v; want the followee's 2 posts (they follow again) and the other one", got)
				}
			})
		}
	}
}
