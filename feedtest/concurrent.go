package feedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// testScrollConcurrent scrolls two feeds while another goroutine publishes
// (and deletes its own new posts) through the same backend.
func testScrollConcurrent(t *testing.T, b *Backend) {
	r := newRand(t)
	w := newWorld(t, b, r)
	w.publishBursts(sized(1200))
	start := w.clock.Load()
	posts := map[int64]*feed.Post{} // what existed at the start: read-only from here
	for id, p := range w.posts {
		posts[id] = p
	}
	pubRand := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	var published atomic.Int64
	var pubStopped atomic.Bool
	firstPages := sync.WaitGroup{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)

	scrollers := []*scroller{}
	for _, viewer := range []int64{w.v1, w.v2} {
		want := w.feedOf(viewer, start)
		inWant := map[int64]bool{}
		for _, e := range want {
			inWant[e.PostID] = true
		}
		sizes := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
		s := &scroller{
			svc: w.svc, viewer: viewer, start: start, sizes: anySize(sizes), maxReq: len(w.order) + 100,
			token: newSession(t, w.svc, viewer),
			post: func(id int64) *feed.Post {
				if !inWant[id] {
					return nil
				}
				return posts[id]
			},
			liked: func(int64) bool { return false },
		}
		pages := 0
		firstPages.Add(1)
		s.between = func(int64, []feed.Entry) error {
			if pages++; pages == 1 {
				firstPages.Done()
			}
			// Make sure the pages interleave with publishes.
			deadline := time.Now().Add(5 * time.Second)
			for !pubStopped.Load() && published.Load() < int64(pages) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Microsecond)
			}
			return nil
		}
		scrollers = append(scrollers, s)
		wg.Go(func() {
			err := s.run(w.ctx)
			if pages == 0 {
				firstPages.Done()
			}
			if err == nil && !slices.Equal(s.seen, want) {
				err = fmt.Errorf("saw %d posts, want %d\n%s", len(s.seen), len(want), diffEntries(s.seen, want))
			}
			if err != nil {
				errs <- fmt.Errorf("viewer %d, start %d: %w", viewer, start, err)
			}
		})
	}

	var pubErr error
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		defer pubStopped.Store(true)
		pubErr = publishConcurrently(w, pubRand, start, stop, &published, &firstPages)
	}()
	wg.Wait()
	close(stop)
	<-pubDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if pubErr != nil {
		t.Fatalf("publisher: %v", pubErr)
	}
	for _, s := range scrollers {
		t.Logf("viewer %d: %d posts in %d requests (%d whole-page ties)", s.viewer, len(s.seen), s.requests, s.carries)
	}
	t.Logf("%d posts published during the scrolls", published.Load())
	if published.Load() == 0 {
		t.Fatal("nothing was published during the scrolls")
	}
}

// publishConcurrently publishes posts newer than start until stop (at most
// 400), runs their fan-out, and deletes some of them again. It touches no
// state of w but the service and the backend.
func publishConcurrently(w *world, r *rand.Rand, start int64, stop <-chan struct{}, published *atomic.Int64, firstPages *sync.WaitGroup) error {
	ctx := w.ctx
	firstPages.Wait()
	clock := start + 1
	var mine []*feed.Post
	for n := 0; n < 400; n++ {
		select {
		case <-stop:
			return nil
		default:
		}
		clock += int64(r.IntN(2))
		w.clock.Store(clock)
		p, err := w.svc.Publish(ctx, w.authors[r.IntN(len(w.authors))], feed.PostInput{Title: "new", Content: "new"})
		if err != nil {
			return err
		}
		mine = append(mine, p)
		if r.IntN(5) == 0 {
			q := mine[r.IntN(len(mine))]
			if err := w.svc.DeletePost(ctx, q.UserID, q.ID); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
				return err
			}
		}
		for _, j := range w.b.Jobs() {
			if err := RunJob(ctx, w.b, j); err != nil {
				return err
			}
		}
		published.Add(1)
	}
	return nil
}
