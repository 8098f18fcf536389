package feedtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestRateStore runs the contract of feed.RateStore: fixed windows by the
// caller's clock, peeks that count nothing, independent keys and windows,
// and atomic counting under concurrent callers. open must return an empty
// store on every call.
func TestRateStore(t *testing.T, open func(t *testing.T) feed.RateStore) {
	t.Run("Windows", func(t *testing.T) { testRateWindows(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testRateConcurrent(t, open(t)) })
}

func testRateWindows(t *testing.T, rs feed.RateStore) {
	ctx := t.Context()
	const w = 10 * time.Minute
	start := time.UnixMilli(1_700_000_123_456) // not aligned to anything: windows start at a key's first event
	count := func(key string, at time.Duration, add int) (int, time.Time) {
		t.Helper()
		n, ends, err := rs.Count(ctx, key, w, start.Add(at), add)
		must(t, err, fmt.Sprintf("Count(%s, +%s, %d)", key, at, add))
		return n, ends
	}
	if n, _ := count("a", 0, 0); n != 0 {
		t.Fatalf("peek of a new key = %d, want 0", n)
	}
	// The first event starts the window: it ends w after it.
	first := 5 * time.Second
	if n, ends := count("a", first, 1); n != 1 || !ends.Equal(start.Add(first+w)) {
		t.Fatalf("first event = %d ending %v, want 1 ending %v", n, ends, start.Add(first+w))
	}
	for i := 2; i <= 3; i++ {
		if n, ends := count("a", first+time.Duration(i)*time.Second, 1); n != i || !ends.Equal(start.Add(first+w)) {
			t.Fatalf("count %d = %d ending %v", i, n, ends)
		}
	}
	if n, ends := count("a", time.Minute, 0); n != 3 || !ends.Equal(start.Add(first+w)) {
		t.Fatalf("peek = %d ending %v, want 3 (a peek counts nothing)", n, ends)
	}
	if n, _ := count("a", 2*time.Minute, 2); n != 5 {
		t.Fatalf("add 2 = %d, want 5", n)
	}
	if n, _ := count("b", time.Minute, 1); n != 1 {
		t.Fatalf("another key = %d, want 1", n)
	}
	// The last instant of the window still counts in it; then a new one starts.
	if n, _ := count("a", first+w-time.Millisecond, 1); n != 6 {
		t.Fatalf("last instant = %d, want 6", n)
	}
	if n, _ := count("a", first+w, 0); n != 0 {
		t.Fatalf("peek after the window = %d, want 0", n)
	}
	later := first + w + 30*time.Second
	if n, ends := count("a", later, 1); n != 1 || !ends.Equal(start.Add(later+w)) {
		t.Fatalf("after the window = %d ending %v, want 1 ending %v", n, ends, start.Add(later+w))
	}
	// Key b's window is its own.
	if n, _ := count("b", time.Minute+w, 1); n != 1 {
		t.Fatalf("key b after its window = %d, want 1", n)
	}
	// A refund takes one back from a live window, never below 0, and
	// stores nothing without one.
	if n, ends := count("a", later+time.Second, -1); n != 0 || !ends.Equal(start.Add(later+w)) {
		t.Fatalf("refund = %d ending %v, want 0 ending %v", n, ends, start.Add(later+w))
	}
	if n, _ := count("a", later+2*time.Second, -1); n != 0 {
		t.Fatalf("refund below 0 = %d, want 0", n)
	}
	if n, _ := count("a", later+3*time.Second, 1); n != 1 {
		t.Fatalf("count after refunds = %d, want 1", n)
	}
	if n, _ := count("c", time.Minute, -1); n != 0 {
		t.Fatalf("refund of a new key = %d, want 0", n)
	}
	if n, ends := count("c", 2*time.Minute, 1); n != 1 || !ends.Equal(start.Add(2*time.Minute+w)) {
		t.Fatalf("first event after a refund of nothing = %d ending %v, want 1 ending %v", n, ends, start.Add(2*time.Minute+w))
	}
}

func testRateConcurrent(t *testing.T, rs feed.RateStore) {
	ctx := t.Context()
	now := time.UnixMilli(1_700_000_000_000)
	const callers, each = 8, 10
	var wg sync.WaitGroup
	seen := make(chan int, callers*each)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, _, err := rs.Count(ctx, "c", time.Minute, now, 1)
				if err != nil {
					t.Error(err)
					return
				}
				seen <- n
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := map[int]bool{}
	for n := range seen {
		if got[n] {
			t.Fatalf("count %d returned twice: increments are not atomic", n)
		}
		got[n] = true
	}
	for i := 1; i <= callers*each; i++ {
		if !got[i] {
			t.Fatalf("count %d never returned (got %v)", i, got)
		}
	}
}
