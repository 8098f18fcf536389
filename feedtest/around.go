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

// testAround: pages read around a post (TimelineAround) and before a
// cursor (TimelineBefore) are exact. On a still feed with tie groups
// larger than a page and deleted posts (some still in the inboxes), a page
// around any entry is the entries nearest to it, with the right count of
// newer ones; then, while another goroutine publishes (and deletes its new
// posts), scrolls from a page around an entry down to the end and up to
// the newest see every entry of the start exactly once in feed order, and
// the new posts in feed order, each once. A position further behind the
// newest than a scan reads is refused.
func testAround(t *testing.T, b *Backend) {
	r := newRand(t)
	w := newWorld(t, b, r)
	w.publishBursts(sized(700))
	for range 30 {
		if id := w.order[r.IntN(len(w.order))]; !w.deleted[id] {
			w.delete(id)
		}
	}
	w.applyRemovals(0.5, 0)
	start := w.clock.Load()

	for _, viewer := range []int64{w.v1, w.v2} {
		want := w.feedOf(viewer, start)
		for range 25 {
			i, limit := r.IntN(len(want)), 1+r.IntN(feed.MaxTimelineLimit)
			page, err := w.svc.TimelineAround(w.ctx, viewer, want[i].PostID, limit)
			must(t, err, "TimelineAround")
			lo := max(0, i-limit/2)
			exp := want[lo:min(len(want), lo+limit)]
			if got := viewEntries(page.List); !slices.Equal(got, exp) {
				t.Fatalf("viewer %d, around entry %d of %d, limit %d:\n%s", viewer, i, len(want), limit, diffEntries(got, exp))
			}
			if page.Newer != lo {
				t.Fatalf("around entry %d, limit %d: newer %d, want %d", i, limit, page.Newer, lo)
			}
			// Next may be set on a page that ends the feed exactly (as
			// Timeline's): the page after it is empty.
			if *page.Prev != exp[0] || (page.Next == nil && lo+limit < len(want)) {
				t.Fatalf("around entry %d, limit %d: prev %v, next %v", i, limit, page.Prev, page.Next)
			}
		}
	}

	// A position further back than a scan reads.
	small := newService(b, &w.clock)
	small.InboxCap = 10
	want := w.feedOf(w.v1, start)
	_, err := small.TimelineAround(w.ctx, w.v1, want[len(want)-1].PostID, 10)
	wantCode(t, err, feed.EINVALID, "TimelineAround far behind the newest")

	var published atomic.Int64
	var pubStopped atomic.Bool
	var firstPages sync.WaitGroup
	stop := make(chan struct{})
	pubRand := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	firstPages.Add(1)
	pubDone := make(chan error, 1)
	go func() {
		defer pubStopped.Store(true)
		pubDone <- publishConcurrently(w, pubRand, start, stop, &published, &firstPages)
	}()
	pages := 0
	between := func() {
		if pages++; pages == 1 {
			firstPages.Done()
		}
		deadline := time.Now().Add(5 * time.Second)
		for !pubStopped.Load() && published.Load() < int64(pages) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	err = scrollAround(w, w.v1, want, start, r, between)
	if pages == 0 {
		firstPages.Done()
	}
	close(stop)
	if perr := <-pubDone; perr != nil {
		t.Fatalf("publisher: %v", perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if published.Load() == 0 {
		t.Fatal("nothing was published during the scroll")
	}
	t.Logf("%d posts published during the scroll, in %d pages", published.Load(), pages)
}

// scrollAround opens viewer's timeline around a random entry of want (the
// feed at start, a time before every new post) and scrolls down to the end and up to the newest,
// under concurrent publishes; it checks that the entries of the start are
// seen exactly as want has them, and the new ones in order and once.
func scrollAround(w *world, viewer int64, want []feed.Entry, start int64, r *rand.Rand, between func()) error {
	size := func() int { return 1 + r.IntN(40) }
	i := r.IntN(len(want))
	page, err := w.svc.TimelineAround(w.ctx, viewer, want[i].PostID, size())
	if err != nil {
		return err
	}
	between()
	seen := viewEntries(page.List)
	next, prev := page.Next, *page.Prev
	for n := 0; next != nil; n++ {
		if n > len(want) {
			return fmt.Errorf("scroll down does not end")
		}
		p, err := w.svc.Timeline(w.ctx, viewer, next, size())
		if err != nil {
			return err
		}
		seen = append(seen, viewEntries(p.List)...)
		next = p.Next
		between()
	}
	for n := 0; ; n++ {
		if n > len(want)+500 {
			return fmt.Errorf("scroll up does not end")
		}
		p, err := w.svc.TimelineBefore(w.ctx, viewer, prev, size())
		if err != nil {
			return err
		}
		if len(p.List) == 0 {
			if p.Newer != 0 || *p.Prev != prev {
				return fmt.Errorf("empty page before %v: newer %d, prev %v", prev, p.Newer, p.Prev)
			}
			break
		}
		seen = append(viewEntries(p.List), seen...)
		prev = *p.Prev
		between()
	}
	var old []feed.Entry
	for k, e := range seen {
		if k > 0 && !seen[k-1].Before(e) {
			return fmt.Errorf("entries %v and %v out of order or repeated", seen[k-1], e)
		}
		if e.Score <= start {
			old = append(old, e)
		}
	}
	if !slices.Equal(old, want) {
		return fmt.Errorf("the scroll around entry %d saw %d of the %d entries of the start:\n%s", i, len(old), len(want), diffEntries(old, want))
	}
	return nil
}

func viewEntries(vs []feed.PostView) []feed.Entry {
	out := make([]feed.Entry, len(vs))
	for i, v := range vs {
		out[i] = v.Entry()
	}
	return out
}
