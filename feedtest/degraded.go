package feedtest

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	feed "github.com/feedd/feedd"
)

// downInbox is an inbox store that is unreachable.
type downInbox struct{ feed.Inbox }

var errDown = errors.New("inbox store unreachable")

func (downInbox) Page(context.Context, int64, feed.Bound, int, int) ([]feed.Entry, error) {
	return nil, errDown
}

// lostInbox reports every user's inbox lost until it is restored.
type lostInbox struct {
	feed.Inbox
	mu       sync.Mutex
	restored map[int64]bool
}

func (l *lostInbox) Page(ctx context.Context, userID int64, max feed.Bound, offset, limit int) ([]feed.Entry, error) {
	l.mu.Lock()
	ok := l.restored[userID]
	l.mu.Unlock()
	if !ok {
		return nil, feed.ErrInboxLost
	}
	return l.Inbox.Page(ctx, userID, max, offset, limit)
}

func (l *lostInbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	if err := l.Inbox.Restore(ctx, userID, entries); err != nil {
		return err
	}
	l.mu.Lock()
	l.restored[userID] = true
	l.mu.Unlock()
	return nil
}

// testDegraded checks the paths that keep the feed up when the inbox store
// is not: FeedEntries (the pull computation) equals what fan-out delivered,
// a scroll served from the database while the inbox store is down equals the
// scroll of the inboxes, and a lost inbox is rebuilt on the first read.
func testDegraded(t *testing.T, b *Backend) {
	w := newWorld(t, b, newRand(t))
	w.publishBursts(sized(400))
	viewers := []int64{w.v1, w.v2, w.fan}

	for _, v := range viewers {
		pulled, err := b.Posts.FeedEntries(w.ctx, v, feed.AtMost(math.MaxInt64), 0, 10000)
		must(t, err, "FeedEntries")
		if want := all(t, b.Inbox, v); !slices.Equal(pulled, want) {
			t.Fatalf("FeedEntries of %d differs from the inbox fan-out built:\n%s", v, diffEntries(pulled, want))
		}
		if want := w.feedOf(v, math.MaxInt64); !slices.Equal(pulled, want) {
			t.Fatalf("FeedEntries of %d differs from the model:\n%s", v, diffEntries(pulled, want))
		}
	}

	scrollIDs := func(svc *feed.Service, viewer int64, size int) []int64 {
		var ids []int64
		last, off := w.clock.Load()+1, 0
		for i := 0; i < 10000; i++ {
			res, err := svc.ScrollFeed(w.ctx, viewer, feed.ScrollCursor{LastID: last, Offset: off}, size)
			must(t, err, "ScrollFeed")
			if res == nil {
				return ids
			}
			for _, p := range res.List {
				ids = append(ids, p.ID)
			}
			last, off = res.MinTime, res.Offset
		}
		t.Fatal("scroll did not end")
		return nil
	}
	down := withInbox(w.svc, downInbox{b.Inbox})
	lost := withInbox(w.svc, &lostInbox{Inbox: b.Inbox, restored: map[int64]bool{}})
	for _, v := range viewers {
		for _, size := range []int{1, 7, feed.MaxPageSize} {
			want := scrollIDs(w.svc, v, size)
			if len(want) == 0 {
				t.Fatalf("viewer %d has an empty feed", v)
			}
			if got := scrollIDs(down, v, size); !slices.Equal(got, want) {
				t.Fatalf("viewer %d size %d: feed served while the inbox is down differs:\n got %v\nwant %v", v, size, got, want)
			}
			if got := scrollIDs(lost, v, size); !slices.Equal(got, want) {
				t.Fatalf("viewer %d size %d: feed after a rebuild differs:\n got %v\nwant %v", v, size, got, want)
			}
		}
	}
}

// withInbox returns a service like s reading through ib.
func withInbox(s *feed.Service, ib feed.Inbox) *feed.Service {
	return &feed.Service{
		Users: s.Users, Auth: s.Auth, Posts: s.Posts, Follows: s.Follows, Inbox: ib, Codes: s.Codes,
		Social: s.Social, Outbox: s.Outbox, ActiveWindow: s.ActiveWindow, PullThreshold: s.PullThreshold,
		Now: s.Now, Rand: s.Rand, PageSize: s.PageSize, InboxCap: s.InboxCap, Log: s.Log,
		Filters: s.Filters, Ranks: s.Ranks, Snapshots: s.Snapshots, Rank: s.Rank, ReportThreshold: s.ReportThreshold,
		Reposts: s.Reposts,
	}
}
