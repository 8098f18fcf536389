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
// workers find new jobs only by polling for them, and polling often enough
// for a fresh feed (every 50 ms) costs an idle process several percent of a
// core (a fetch is a write transaction on SQLite); with it they poll rarely
// (a job inserted by another process, or a retry coming due, waits for the
// next poll) and still start a job as soon as it is committed here.
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

// WithWake returns driver with its own listener (which on SQLite polls
// River's table of notifications: a job cancelled from the job dashboard,
// for one) merged with w's wake-ups, which it delivers at once. River,
// seeing a driver with a listener, subscribes its workers to both. The
// driver writes no notification of new jobs (SupportsListenNotify): this
// process's are w's, at once, and the workers poll for the others'.
func WithWake[TTx any](driver riverdriver.Driver[TTx], w *Wake) riverdriver.Driver[TTx] {
	return &wakeDriver[TTx]{Driver: driver, wake: w}
}

type wakeDriver[TTx any] struct {
	riverdriver.Driver[TTx]
	wake *Wake
}

func (d *wakeDriver[TTx]) SupportsListenNotify() bool { return false }

func (d *wakeDriver[TTx]) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return &wakeListener{Listener: d.Driver.GetListener(params), wake: d.wake, topics: map[string]bool{}, pending: map[string]bool{}, c: make(chan struct{}, 1)}
}

// wakeListener is the driver's listener with its Wake merged in. A
// goroutine of its own waits on the driver's listener from Connect to
// Close, so that a wake-up does not interrupt (and restart) its polling.
type wakeListener struct {
	riverdriver.Listener
	wake *Wake

	heard chan heard // from the driver's listener
	stop  func()     // ends the goroutine
	ended chan struct{}

	c       chan struct{} // a wake-up: pending has queues
	mu      sync.Mutex
	topics  map[string]bool
	pending map[string]bool // queues woken and not yet told
}

type heard struct {
	n   *riverdriver.Notification
	err error
}

func (l *wakeListener) Connect(ctx context.Context) error {
	if err := l.Listener.Connect(ctx); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(context.Background())
	l.heard, l.stop, l.ended = make(chan heard), stop, make(chan struct{})
	go func() {
		defer close(l.ended)
		for {
			n, err := l.Listener.WaitForNotification(wctx)
			select {
			case l.heard <- heard{n, err}:
			case <-wctx.Done():
				return
			}
			if err != nil {
				return // River closes the listener and connects again
			}
		}
	}()
	l.wake.mu.Lock()
	l.wake.listeners[l] = struct{}{}
	l.wake.mu.Unlock()
	return nil
}

func (l *wakeListener) Close(ctx context.Context) error {
	l.wake.mu.Lock()
	delete(l.wake.listeners, l)
	l.wake.mu.Unlock()
	if l.stop != nil {
		l.stop()
		<-l.ended
		l.stop = nil
	}
	return l.Listener.Close(ctx)
}

func (l *wakeListener) Listen(ctx context.Context, topic string) error {
	l.mu.Lock()
	l.topics[topic] = true
	l.mu.Unlock()
	return l.Listener.Listen(ctx, topic)
}

func (l *wakeListener) Unlisten(ctx context.Context, topic string) error {
	l.mu.Lock()
	delete(l.topics, topic)
	l.mu.Unlock()
	return l.Listener.Unlisten(ctx, topic)
}

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
		case h := <-l.heard:
			return h.n, h.err
		case <-l.c:
		}
	}
}
