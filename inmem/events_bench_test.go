package inmem

import (
	"context"
	"testing"

	feed "github.com/feedd/feedd"
)

// BenchmarkDispatch is the in-process cost of one fan-out batch's event
// (1000 users) in a process holding 10,000 streams, one of them a user of
// the batch: what every inbox write adds on the embedded default, and
// what each API process spends per event it receives from Redis or
// PostgreSQL.
func BenchmarkDispatch(b *testing.B) {
	ctx := context.Background()
	var h Events
	for u := range int64(10_000) {
		s, _ := h.Subscribe(ctx, 1_000_000+u, nil)
		go func() {
			for range s.Events() {
			}
		}()
	}
	users := make([]int64, 1000)
	for i := range users {
		users[i] = int64(i) * 1000 // 0 .. 999000: user 1,000,000 is not among them
	}
	users[999] = 1_000_000 // one stream here
	ev := feed.Event{Kind: feed.EventPost, Entry: feed.Entry{PostID: 1, Score: 1}, Users: users}
	b.ReportAllocs()
	for b.Loop() {
		h.Dispatch(ev)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/user")
}
