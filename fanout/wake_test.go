package fanout_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
)

// TestWakeQueues: committed jobs wake the workers of their queues only (a
// fetch that finds nothing is a write transaction on SQLite), and a wake-up
// is never lost while another is pending.
func TestWakeQueues(t *testing.T) {
	w := fanout.NewWake()
	d := fanout.WithWake(riversqlite.New(nil), w)
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
