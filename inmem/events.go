// Package inmem holds feedd's in-process implementations: the event hub of
// live timeline streams, which is the whole feed.EventService on the
// embedded default and the local half of the Redis and PostgreSQL ones.
package inmem

import (
	"context"
	"sync"
	"sync/atomic"

	feed "github.com/feedd/feedd"
)

// Buffer is how many events a subscription holds for a slow reader before
// it is ended with feed.ErrEventsLost (its client reconnects and replays).
const Buffer = 32

// Events is an in-process feed.EventService: Publish hands events straight
// to this process's subscriptions. The zero value is ready to use.
type Events struct {
	mu      sync.RWMutex
	users   map[int64]map[*sub]struct{}
	authors map[int64]map[*sub]struct{}
	n       int
}

var _ feed.EventService = (*Events)(nil)

// Publish implements feed.EventService. Its cost is a map lookup per user
// of ev.Users, whether or not they have a stream here.
func (h *Events) Publish(ctx context.Context, ev feed.Event) error {
	h.Dispatch(ev)
	return nil
}

// Dispatch delivers ev to the subscriptions of this process it concerns.
// A subscription whose buffer is full is ended with feed.ErrEventsLost.
func (h *Events) Dispatch(ev feed.Event) {
	var lost []*sub
	h.mu.RLock()
	if h.n == 0 {
		h.mu.RUnlock()
		return
	}
	send := func(set map[*sub]struct{}) {
		for s := range set {
			if !s.offer(ev) {
				lost = append(lost, s)
			}
		}
	}
	for _, u := range ev.Users {
		if set := h.users[u]; set != nil {
			send(set)
		}
	}
	if ev.Author != 0 {
		send(h.authors[ev.Author])
	}
	h.mu.RUnlock()
	for _, s := range lost {
		h.end(s, feed.ErrEventsLost)
	}
}

// Reset ends every subscription with feed.ErrEventsLost: the events
// published meanwhile were not seen (a broker connection was lost).
func (h *Events) Reset() {
	h.mu.RLock()
	var all []*sub
	for _, set := range h.users {
		for s := range set {
			all = append(all, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range all {
		h.end(s, feed.ErrEventsLost)
	}
}

// Len is the number of open subscriptions.
func (h *Events) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.n
}

// Subscribe implements feed.EventService.
func (h *Events) Subscribe(ctx context.Context, userID int64, authors []int64) (feed.Subscription, error) {
	s := &sub{hub: h, user: userID, authors: authors, ch: make(chan feed.Event, Buffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == nil {
		h.users = map[int64]map[*sub]struct{}{}
		h.authors = map[int64]map[*sub]struct{}{}
	}
	add(h.users, userID, s)
	for _, a := range authors {
		add(h.authors, a, s)
	}
	h.n++
	return s, nil
}

func add(m map[int64]map[*sub]struct{}, k int64, s *sub) {
	set := m[k]
	if set == nil {
		set = map[*sub]struct{}{}
		m[k] = set
	}
	set[s] = struct{}{}
}

func drop(m map[int64]map[*sub]struct{}, k int64, s *sub) {
	if set := m[k]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(m, k)
		}
	}
}

// end removes s and closes its channel, once.
func (h *Events) end(s *sub, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	s.err = err
	drop(h.users, s.user, s)
	for _, a := range s.authors {
		drop(h.authors, a, s)
	}
	h.n--
	// Senders hold the read lock while they send, and this holds the write
	// lock: no send is in progress, and none follows.
	close(s.ch)
}

type sub struct {
	hub     *Events
	user    int64
	authors []int64
	ch      chan feed.Event
	lost    atomic.Bool // an event did not fit: send no later one
	done    bool        // guarded by hub.mu
	err     error       // guarded by hub.mu
}

// offer queues ev without blocking; false when the buffer is full, and
// from then on, so that the reader never sees an event after a gap.
func (s *sub) offer(ev feed.Event) bool {
	if s.lost.Load() {
		return false
	}
	select {
	case s.ch <- ev:
		return true
	default:
		s.lost.Store(true)
		return false
	}
}

func (s *sub) Events() <-chan feed.Event { return s.ch }
func (s *sub) Close()                    { s.hub.end(s, nil) }

func (s *sub) Err() error {
	s.hub.mu.RLock()
	defer s.hub.mu.RUnlock()
	return s.err
}
