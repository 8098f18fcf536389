package fanout

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/riverqueue/river/riverdriver"

	feed "github.com/feedd/feedd"
)

// Wake tells this process's workers at once that this process committed
// new jobs, on a database without LISTEN/NOTIFY (SQLite). Without it idle
// workers find new jobs only by polling, and polling often enough for a
// fresh feed (every 50 ms) costs an idle process several percent of a core;
// with it they poll rarely (a job inserted by another process, or a retry
// coming due, waits for the next poll) and still start a job as soon as it
// is committed here.
//
// Jobs is to be called after the commit of a transaction that inserted
// jobs, with those jobs: only their queues' workers are woken (a fetch
// that finds nothing is a write transaction on SQLite all the same).
// WithWake wires a driver to it.
type Wake struct {
	mu        sync.Mutex
	listeners map[*wakeListener]struct{}
}

// NewWake returns a Wake with no listener yet.
func NewWake() *Wake { return &Wake{listeners: map[*wakeListener]struct{}{}} }

// insertTopic is River's notification of new jobs, as PostgreSQL's NOTIFY
// would deliver it; its payload names the queue.
const insertTopic = "river_insert"

// Jobs wakes the workers of this process listening for new jobs in the
// queues of jobs. It never blocks: a wake-up already pending covers this
// one too.
func (w *Wake) Jobs(jobs []feed.Job) {
	var queues []string
	for _, j := range jobs {
		if q := queueOf(j); !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	w.notify(queues...)
}

// notify wakes every listening worker of this process for queues.
func (w *Wake) notify(queues ...string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for l := range w.listeners {
		l.mu.Lock()
		listening := l.topics[insertTopic]
		if listening {
			for _, q := range queues {
				l.pending[q] = true
			}
		}
		l.mu.Unlock()
		if listening {
			select {
			case l.c <- struct{}{}:
			default:
			}
		}
	}
}

// WithWake returns driver with an in-process listener fed by w, so that
// River, seeing a driver with a listener, subscribes its workers to w's
// notifications instead of running in poll-only mode. The driver's own
// behaviour is otherwise unchanged.
func WithWake[TTx any](driver riverdriver.Driver[TTx], w *Wake) riverdriver.Driver[TTx] {
	return &wakeDriver[TTx]{Driver: driver, wake: w}
}

type wakeDriver[TTx any] struct {
	riverdriver.Driver[TTx]
	wake *Wake
}

func (d *wakeDriver[TTx]) SupportsListener() bool { return true }

// SupportsListenNotify is false: the driver's own notifications (River's
// SQLite driver writes each one as a row of river_notification, in the
// inserting transaction, for its polling listener) would go to no one, as
// this process's workers listen to its Wake instead.
func (d *wakeDriver[TTx]) SupportsListenNotify() bool { return false }

func (d *wakeDriver[TTx]) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return &wakeListener{wake: d.wake, schema: params.Schema, topics: map[string]bool{}, pending: map[string]bool{}, c: make(chan struct{}, 1)}
}

// wakeListener is a riverdriver.Listener that hears only its Wake.
type wakeListener struct {
	wake    *Wake
	schema  string
	c       chan struct{} // a wake-up: pending has queues
	mu      sync.Mutex
	topics  map[string]bool
	pending map[string]bool // queues woken and not yet told
}

func (l *wakeListener) Connect(ctx context.Context) error {
	l.wake.mu.Lock()
	l.wake.listeners[l] = struct{}{}
	l.wake.mu.Unlock()
	return nil
}

func (l *wakeListener) Close(ctx context.Context) error {
	l.wake.mu.Lock()
	delete(l.wake.listeners, l)
	l.wake.mu.Unlock()
	return nil
}

func (l *wakeListener) Listen(ctx context.Context, topic string) error {
	l.mu.Lock()
	l.topics[topic] = true
	l.mu.Unlock()
	return nil
}

func (l *wakeListener) Unlisten(ctx context.Context, topic string) error {
	l.mu.Lock()
	delete(l.topics, topic)
	l.mu.Unlock()
	return nil
}

func (l *wakeListener) Ping(ctx context.Context) error { return nil }
func (l *wakeListener) Schema() string                 { return l.schema }
func (l *wakeListener) SetAfterConnectExec(string)     {}

func (l *wakeListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		l.mu.Lock()
		for q := range l.pending {
			delete(l.pending, q)
			l.mu.Unlock()
			return &riverdriver.Notification{Topic: insertTopic, Payload: fmt.Sprintf(`{"queue":%q}`, q)}, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.c:
		}
	}
}
