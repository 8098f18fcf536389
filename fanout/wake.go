package fanout

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	feed "github.com/feedd/feedd"
)

// Wake tells this process's workers at once that this process committed
// new jobs, on a database without LISTEN/NOTIFY (SQLite). Without it idle
// workers find new jobs only by polling for them, and polling often enough
// for a fresh feed (every 50 ms) keeps an idle process busy (a fetch is a
// write transaction on SQLite; BENCHMARKS.md, "Overload", has the idle
// figure); with it they poll rarely
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
		_, listening := l.topics[insertTopic]
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

// How often a listener reads River's table of notifications (on SQLite:
// a job cancelled from the job dashboard, say): every poll interval of
// WithWake, and every controlPoll for controlWindow after this process
// wrote one itself, so that a cancel made here reaches this process's
// workers at once. Read every 50 ms all the time, as River's own SQLite
// listener does, the table was most of an idle process's CPU
// (BENCHMARKS.md, "Against the previous release").
const (
	controlPoll   = 20 * time.Millisecond
	controlWindow = 5 * time.Second
)

// WithWake returns driver with a listener of feedd's own, which reads
// River's table of notifications every poll (a job cancelled by another
// process) and at once after this process wrote one (a job cancelled from
// this process's job dashboard), and delivers w's wake-ups at once. River,
// seeing a driver with a listener, subscribes its workers to it. The
// driver writes no notification of new jobs (SupportsListenNotify): this
// process's are w's, at once, and the workers poll for the others'.
func WithWake[TTx any](driver riverdriver.Driver[TTx], w *Wake, poll time.Duration) riverdriver.Driver[TTx] {
	return &wakeDriver[TTx]{Driver: driver, wake: w, poll: cmp.Or(poll, time.Second)}
}

type wakeDriver[TTx any] struct {
	riverdriver.Driver[TTx]
	wake *Wake
	poll time.Duration
}

func (d *wakeDriver[TTx]) SupportsListenNotify() bool { return false }

func (d *wakeDriver[TTx]) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	table := "river_notification"
	if params.Schema != "" {
		table = params.Schema + "." + table
	}
	return &wakeListener{exec: d.Driver.GetExecutor(), wake: d.wake, poll: d.poll, schema: params.Schema, table: table,
		topics: map[string]int64{}, pending: map[string]bool{}, c: make(chan struct{}, 1)}
}

// GetExecutor and UnwrapExecutor return River's executors with JobCancel
// telling the listeners of this process to read the table of
// notifications, where the cancel is written, until it commits.
func (d *wakeDriver[TTx]) GetExecutor() riverdriver.Executor {
	return &cancelExecutor{Executor: d.Driver.GetExecutor(), wake: d.wake}
}

func (d *wakeDriver[TTx]) UnwrapExecutor(tx TTx) riverdriver.ExecutorTx {
	return &cancelExecutorTx{ExecutorTx: d.Driver.UnwrapExecutor(tx), wake: d.wake}
}

type cancelExecutor struct {
	riverdriver.Executor
	wake *Wake
}

func (e *cancelExecutor) JobCancel(ctx context.Context, params *riverdriver.JobCancelParams) (*rivertype.JobRow, error) {
	e.wake.control()
	return e.Executor.JobCancel(ctx, params)
}

type cancelExecutorTx struct {
	riverdriver.ExecutorTx
	wake *Wake
}

func (e *cancelExecutorTx) JobCancel(ctx context.Context, params *riverdriver.JobCancelParams) (*rivertype.JobRow, error) {
	e.wake.control()
	return e.ExecutorTx.JobCancel(ctx, params)
}

// control has every listener of this process read the table of
// notifications every controlPoll for the next controlWindow.
func (w *Wake) control() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for l := range w.listeners {
		l.mu.Lock()
		l.fastUntil = time.Now().Add(controlWindow)
		l.readAt = time.Time{} // read at once
		l.mu.Unlock()
		select {
		case l.c <- struct{}{}:
		default:
		}
	}
}

// wakeListener reads River's table of notifications (as River's SQLite
// listener does, on a timer of its own) and merges w's wake-ups.
type wakeListener struct {
	exec          riverdriver.Executor
	wake          *Wake
	poll          time.Duration
	schema, table string

	c         chan struct{} // a wake-up: pending has queues, or fastUntil moved
	mu        sync.Mutex
	connected bool
	lastID    int64            // the newest notification read
	topics    map[string]int64 // topic -> the newest notification when it was subscribed
	pending   map[string]bool  // queues woken and not yet told
	fastUntil time.Time        // read every controlPoll until then
	readAt    time.Time        // the table's last read
}

func (l *wakeListener) lastNotification(ctx context.Context) (int64, error) {
	var id int64
	err := l.exec.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM `+l.table).Scan(&id)
	return id, err
}

func (l *wakeListener) Connect(ctx context.Context) error {
	id, err := l.lastNotification(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.connected, l.lastID = true, id
	l.mu.Unlock()
	l.wake.mu.Lock()
	l.wake.listeners[l] = struct{}{}
	l.wake.mu.Unlock()
	return nil
}

func (l *wakeListener) Close(ctx context.Context) error {
	l.wake.mu.Lock()
	delete(l.wake.listeners, l)
	l.wake.mu.Unlock()
	l.mu.Lock()
	l.connected = false
	l.mu.Unlock()
	return nil
}

func (l *wakeListener) Listen(ctx context.Context, topic string) error {
	id, err := l.lastNotification(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.topics[topic]; !ok {
		l.topics[topic] = max(l.lastID, id)
	}
	return nil
}

func (l *wakeListener) Unlisten(ctx context.Context, topic string) error {
	l.mu.Lock()
	delete(l.topics, topic)
	l.mu.Unlock()
	return nil
}

func (l *wakeListener) Ping(ctx context.Context) error { return l.exec.Exec(ctx, "SELECT 1") }
func (l *wakeListener) Schema() string                 { return l.schema }
func (l *wakeListener) SetAfterConnectExec(string)     {}

// WaitForNotification returns the next wake-up of w or notification of
// the table, which it reads when its timer says: every poll, or every
// controlPoll while fastUntil has not passed.
func (l *wakeListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		l.mu.Lock()
		if !l.connected {
			l.mu.Unlock()
			return nil, errors.New("fanout: listener not connected")
		}
		for q := range l.pending {
			delete(l.pending, q)
			l.mu.Unlock()
			return &riverdriver.Notification{Topic: insertTopic, Payload: fmt.Sprintf(`{"queue":%q}`, q)}, nil
		}
		every := l.poll
		if time.Now().Before(l.fastUntil) {
			every = controlPoll
		}
		wait := time.Until(l.readAt.Add(every))
		read := wait <= 0
		if read {
			l.readAt, wait = time.Now(), every
		}
		l.mu.Unlock()
		if read {
			n, err := l.next(ctx)
			if err != nil || n != nil {
				return n, err
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-l.c:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// next returns the oldest notification of the table after the last read
// whose topic was subscribed before it was written, nil when none.
func (l *wakeListener) next(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		l.mu.Lock()
		after := l.lastID
		l.mu.Unlock()
		var id int64
		var topic, payload string
		err := l.exec.QueryRow(ctx, `SELECT id, topic, payload FROM `+l.table+` WHERE id > ? ORDER BY id LIMIT 1`, after).Scan(&id, &topic, &payload)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.lastID = max(l.lastID, id)
		since, ok := l.topics[topic]
		l.mu.Unlock()
		if ok && id > since {
			return &riverdriver.Notification{Topic: topic, Payload: payload}, nil
		}
	}
}
