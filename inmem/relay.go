package inmem

import (
	"context"
	"log/slog"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
)

// ListenFunc holds one subscription to a broker's channel of events (a
// Redis SUBSCRIBE, a PostgreSQL LISTEN) until it fails or ctx ends. It
// calls ready once the broker confirmed the subscription, and deliver with
// the payload of every message, in the order the broker sends them.
type ListenFunc func(ctx context.Context, ready func(), deliver func(payload []byte)) error

// Relay is the local half of an EventService whose events cross processes
// through a broker: it keeps one subscription per process open (started by
// the first Subscribe, re-opened after a failure) and hands what arrives
// to this process's streams. A broker subscription lost and re-opened may
// have missed events, so every stream open at that time is ended with
// feed.ErrEventsLost: its client reconnects and replays what it missed.
type Relay struct {
	Listen ListenFunc
	Log    *slog.Logger

	hub     Events
	once    sync.Once
	ready   chan struct{} // closed at the first confirmed subscription
	cancel  context.CancelFunc
	stopped chan struct{}
}

// Subscribe opens the broker subscription if it is not yet, waits until it
// is confirmed (or ctx ends), and subscribes to this process's hub.
func (r *Relay) Subscribe(ctx context.Context, userID int64, authors []int64) (feed.Subscription, error) {
	r.start()
	select {
	case <-r.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.hub.Subscribe(ctx, userID, authors)
}

// Len is the number of this process's open subscriptions.
func (r *Relay) Len() int { return r.hub.Len() }

func (r *Relay) start() {
	r.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		r.ready, r.cancel, r.stopped = make(chan struct{}), cancel, make(chan struct{})
		go r.run(ctx)
	})
}

func (r *Relay) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// run re-opens the subscription until Close, backing off from 100 ms to
// 5 s while the broker keeps failing.
func (r *Relay) run(ctx context.Context) {
	defer close(r.stopped)
	first := true
	backoff := 100 * time.Millisecond
	for {
		began := time.Now()
		err := r.Listen(ctx, func() {
			if first {
				first = false
				close(r.ready)
				return
			}
			r.hub.Reset() // streams open during the outage may have missed events
			r.log().Info("live events: subscription restored")
		}, func(payload []byte) {
			if r.hub.Len() == 0 {
				// No stream open here: nothing to decode the event for (a
				// fan-out's event names up to a batch of users; decoding
				// them was a share of a worker's CPU in a big fan-out worth
				// removing; BENCHMARKS.md, "Fan-out").
				return
			}
			ev, err := feed.UnmarshalEvent(payload)
			if err != nil {
				r.log().Warn("live events: bad message", "error", err)
				return
			}
			r.hub.Dispatch(ev)
		})
		if ctx.Err() != nil {
			return
		}
		r.log().Warn("live events: subscription lost; streams end and reconnect", "error", err)
		r.hub.Reset()
		if time.Since(began) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// Close ends the broker subscription and every stream. Idempotent.
func (r *Relay) Close() error {
	r.once.Do(func() {}) // never start after Close
	if r.cancel != nil {
		r.cancel()
		<-r.stopped
	}
	r.hub.Reset()
	return nil
}
