package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"riverqueue.com/riverui"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	"github.com/feedd/feedd/sqlite"
)

// TestWakeQueues: committed jobs wake the workers of their queues only (a
// fetch that finds nothing is a write transaction on SQLite), and a wake-up
// is never lost while another is pending.
func TestWakeQueues(t *testing.T) {
	w := fanout.NewWake()
	d := fanout.WithWake(riversqlite.New(newWorld(t, 0).db.Write), w, time.Second)
	if d.SupportsListenNotify() {
		t.Error("the wired driver would still write River's notifications to the database")
	}
	l := d.GetListener(&riverdriver.GetListenenerParams{})
	ctx := t.Context()
	if err := l.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if err := l.Listen(ctx, "river_insert"); err != nil {
		t.Fatal(err)
	}
	// heard returns the payloads delivered within a short wait.
	heard := func() []string {
		var out []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			n, err := l.WaitForNotification(wctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				slices.Sort(out)
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Topic != "river_insert" {
				t.Errorf("topic %q", n.Topic)
			}
			out = append(out, n.Payload)
		}
	}
	follow := `{"queue":"` + fanout.QueueFollow + `"}`
	const post = `{"queue":"default"}`
	for _, c := range []struct {
		name string
		jobs []feed.Job
		want []string
	}{
		{"follow", []feed.Job{feed.FollowJob{FollowerID: 1, FolloweeID: 2, Follow: true}}, []string{follow}},
		{"post", []feed.Job{feed.FanoutJob{PostID: 1}}, []string{post}},
		{"delete", []feed.Job{feed.RemoveJob{PostID: 1}}, []string{post}},
		{"both", []feed.Job{feed.RemoveJob{PostID: 1}, feed.FollowJob{FollowerID: 1, FolloweeID: 2}}, []string{post, follow}},
		{"none", nil, nil},
	} {
		w.Jobs(c.jobs)
		if got := heard(); !slices.Equal(got, c.want) {
			t.Errorf("%s: woke %q, want %q", c.name, got, c.want)
		}
	}
	// Several commits before the listener reads: each queue once.
	w.Jobs([]feed.Job{feed.FollowJob{FollowerID: 1, FolloweeID: 2}})
	w.Jobs([]feed.Job{feed.FanoutJob{PostID: 2}})
	w.Jobs([]feed.Job{feed.FollowJob{FollowerID: 3, FolloweeID: 2}})
	if got, want := heard(), []string{post, follow}; !slices.Equal(got, want) {
		t.Errorf("after three commits: woke %q, want %q", got, want)
	}
}

// blockedInbox holds the first delivery until its job's context ends, and
// keeps why it ended.
type blockedInbox struct {
	feed.Inbox
	running chan struct{} // closed when the first delivery starts
	cause   chan error
}

func (b *blockedInbox) Deliver(ctx context.Context, e feed.Entry, ids []int64) error {
	select {
	case <-b.running:
		return b.Inbox.Deliver(ctx, e, ids)
	default:
	}
	close(b.running)
	<-ctx.Done()
	b.cause <- context.Cause(ctx)
	return ctx.Err()
}

// TestCancelFromDashboard: on the embedded default (SQLite, workers woken
// by Wake), a running job cancelled from River's job dashboard (riverui's
// API, as the admin listener serves it) has its context cancelled at once,
// though the table of notifications is read only every minute otherwise
// (the poll interval here) and River's fallback poll for cancellations is
// a minute too, and ends cancelled, not to be retried.
func TestCancelFromDashboard(t *testing.T) {
	w := newWorld(t, 1)
	ib := &blockedInbox{Inbox: w.inbox, running: make(chan struct{}), cause: make(chan error, 1)}
	wake := fanout.NewWake()
	q, err := fanout.New(riversqlite.New(w.db.Write), fanout.Config{Workers: 1, Wake: wake, PollInterval: time.Minute},
		&fanout.Deps{Follows: w.db, Users: w.db, Social: w.db, Outbox: &sqlite.Outbox{DB: w.db}, Inbox: ib})
	if err != nil {
		t.Fatal(err)
	}
	w.db.Enqueue, w.db.Enqueued = q.EnqueueTx, wake.Jobs
	ctx := t.Context()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(context.Background())
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(q.Client, nil),
		Logger:    slog.New(slog.DiscardHandler),
		Prefix:    "/river",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dashboard := httptest.NewServer(ui)
	defer dashboard.Close()

	w.publish(t)
	select {
	case <-ib.running:
	case <-time.After(30 * time.Second):
		t.Fatal("the post job did not start")
	}
	var id int64
	if err := w.db.Read.QueryRow(`SELECT id FROM river_job WHERE state = 'running'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(dashboard.URL+"/river/api/jobs/cancel", "application/json", strings.NewReader(fmt.Sprintf(`{"ids":["%d"]}`, id)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	select {
	case cause := <-ib.cause:
		if cause == nil || !strings.Contains(cause.Error(), "cancel") {
			t.Errorf("the job's context ended with %v, want its cancellation", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the running job's context was not cancelled within 20 s of its cancellation (the table of notifications is read every minute)")
	}
	deadline := time.Now().Add(30 * time.Second)
	for state := ""; state != "cancelled"; time.Sleep(20 * time.Millisecond) {
		if err := w.db.Read.QueryRow(`SELECT state FROM river_job WHERE id = ?`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled job is %s, want cancelled", state)
		}
	}
}
