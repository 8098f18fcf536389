package inmem

import (
	"context"
	"errors"
	"testing"

	feed "github.com/feedd/feedd"
)

func post(id int64, users ...int64) feed.Event {
	return feed.Event{Kind: feed.EventPost, Entry: feed.Entry{PostID: id, Score: id}, Users: users}
}

// TestEventsRoute: an event reaches the subscriptions of the users it
// names and of the pull-mode author it names, in order, and no other.
func TestEventsRoute(t *testing.T) {
	ctx := context.Background()
	var h Events
	a, _ := h.Subscribe(ctx, 1, nil)
	b, _ := h.Subscribe(ctx, 2, []int64{9})
	h.Publish(ctx, post(10, 1, 3))
	h.Publish(ctx, feed.Event{Kind: feed.EventPost, Entry: feed.Entry{PostID: 11}, Users: []int64{9}, Author: 9})
	h.Publish(ctx, post(12, 1, 2))
	for _, tc := range []struct {
		s    feed.Subscription
		want []int64
	}{{a, []int64{10, 12}}, {b, []int64{11, 12}}} {
		for _, id := range tc.want {
			if ev := <-tc.s.Events(); ev.Entry.PostID != id {
				t.Fatalf("got post %d, want %d", ev.Entry.PostID, id)
			}
		}
		if n := len(tc.s.Events()); n != 0 {
			t.Fatalf("%d events too many", n)
		}
	}
	a.Close()
	a.Close() // idempotent
	if _, ok := <-a.Events(); ok || a.Err() != nil {
		t.Fatalf("closed subscription: open or err %v", a.Err())
	}
	if h.Len() != 1 {
		t.Fatalf("Len = %d, want 1", h.Len())
	}
	h.Publish(ctx, post(13, 1)) // nobody: no panic on a closed channel
}

// TestEventsSlowReader: a subscription that falls Buffer events behind is
// ended with ErrEventsLost, and nothing published after the first lost
// event reaches it (no gap a reader could not see).
func TestEventsSlowReader(t *testing.T) {
	ctx := context.Background()
	var h Events
	s, _ := h.Subscribe(ctx, 1, nil)
	for i := range Buffer + 5 {
		h.Publish(ctx, post(int64(i+1), 1))
	}
	var got []int64
	for ev := range s.Events() {
		got = append(got, ev.Entry.PostID)
	}
	if len(got) != Buffer || got[len(got)-1] != Buffer {
		t.Fatalf("read %d events, last %v; want the first %d", len(got), got[len(got)-1:], Buffer)
	}
	if !errors.Is(s.Err(), feed.ErrEventsLost) {
		t.Fatalf("Err = %v, want ErrEventsLost", s.Err())
	}
}

// TestEventsReset ends every subscription with ErrEventsLost.
func TestEventsReset(t *testing.T) {
	ctx := context.Background()
	var h Events
	a, _ := h.Subscribe(ctx, 1, nil)
	b, _ := h.Subscribe(ctx, 1, []int64{2})
	h.Reset()
	for _, s := range []feed.Subscription{a, b} {
		if _, ok := <-s.Events(); ok || !errors.Is(s.Err(), feed.ErrEventsLost) {
			t.Fatalf("after Reset: open %v, err %v", ok, s.Err())
		}
	}
	if h.Len() != 0 {
		t.Fatalf("Len = %d after Reset", h.Len())
	}
}

// TestEventWire: the wire form round-trips, and a bad one is refused.
func TestEventWire(t *testing.T) {
	ev := feed.Event{Kind: feed.EventDelete, Entry: feed.Entry{PostID: 7, Score: 1700000000123}, Users: []int64{1, 2}, Author: 3}
	b, err := feed.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := feed.UnmarshalEvent(b)
	if err != nil || got.Kind != ev.Kind || got.Entry != ev.Entry || len(got.Users) != 2 || got.Author != 3 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{"k":"nope"}`, `[`, `{"k":"post","u":"x"}`} {
		if _, err := feed.UnmarshalEvent([]byte(bad)); err == nil {
			t.Errorf("UnmarshalEvent(%s): no error", bad)
		}
	}
}
