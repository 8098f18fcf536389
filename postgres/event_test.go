package postgres

import (
	"testing"

	feed "github.com/feedd/feedd"
)

// TestNotifyPayloads: an event for more users than a NOTIFY holds is split
// into payloads under the limit that together name every user once, and
// the pull-mode author once.
func TestNotifyPayloads(t *testing.T) {
	users := make([]int64, 5000)
	for i := range users {
		users[i] = 1_000_000_000 + int64(i)
	}
	ps, err := notifyPayloads(feed.Event{Kind: feed.EventPost, Entry: feed.Entry{PostID: 1, Score: 2}, Users: users, Author: 9})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	authors := 0
	for _, p := range ps {
		if len(p) > maxNotify {
			t.Fatalf("payload of %d bytes", len(p))
		}
		ev, err := feed.UnmarshalEvent([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ev.Users {
			seen[u]++
		}
		if ev.Author != 0 {
			authors++
		}
	}
	if len(seen) != len(users) || authors != 1 || len(ps) < 2 {
		t.Fatalf("%d payloads name %d users and %d authors", len(ps), len(seen), authors)
	}
	for u, n := range seen {
		if n != 1 {
			t.Fatalf("user %d named %d times", u, n)
		}
	}
}
