package fanout_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
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
