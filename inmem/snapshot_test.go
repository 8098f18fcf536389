package inmem_test

import (
	"fmt"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/inmem"
	"github.com/feedd/feedd/rank"
)

func TestSnapshotStore(t *testing.T) {
	feedtest.TestSnapshotStore(t, func(t *testing.T) feed.SnapshotStore { return &inmem.Snapshots{} })
}

func items(n int) []rank.Item {
	out := make([]rank.Item, n)
	for i := range out {
		out[i] = rank.Item{PostID: int64(i + 1), Score: int64(i), RankScore: float64(n - i)}
	}
	return out
}

func found(t *testing.T, s *inmem.Snapshots, viewer int64, id string, now time.Time) bool {
	t.Helper()
	_, _, err := s.Snapshot(t.Context(), viewer, id, 0, 10, now)
	switch feed.ErrorCode(err) {
	case "":
		return true
	case feed.ENOTFOUND:
		return false
	}
	t.Fatalf("Snapshot(%d, %s): %v", viewer, id, err)
	return false
}

// TestSnapshotsKept checks the SQL stores' limit: a user keeps the newest
// feed.SnapshotsKept snapshots, whatever other users save.
func TestSnapshotsKept(t *testing.T) {
	s := &inmem.Snapshots{}
	now := time.Now()
	for i := range feed.SnapshotsKept + 2 {
		if err := s.SaveSnapshot(t.Context(), 1, fmt.Sprint("a", i), items(20), now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(t.Context(), 2, fmt.Sprint("b", i), items(20), now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range feed.SnapshotsKept + 2 {
		want := i >= 2
		if got := found(t, s, 1, fmt.Sprint("a", i), now); got != want {
			t.Errorf("user 1's snapshot %d of %d kept: %v, want %v", i, feed.SnapshotsKept+2, got, want)
		}
		if got := found(t, s, 2, fmt.Sprint("b", i), now); got != want {
			t.Errorf("user 2's snapshot %d of %d kept: %v, want %v", i, feed.SnapshotsKept+2, got, want)
		}
	}
}

// TestSnapshotsBound checks that the store drops the oldest snapshots
// beyond MaxItems items, and the expired ones, when a snapshot is saved.
func TestSnapshotsBound(t *testing.T) {
	s := &inmem.Snapshots{MaxItems: 100}
	now := time.Now()
	for u := range int64(5) {
		if err := s.SaveSnapshot(t.Context(), u, "x", items(30), now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// 5 x 30 items: the two oldest went to keep 100 at most.
	for u := range int64(5) {
		if got, want := found(t, s, u, "x", now), u >= 2; got != want {
			t.Errorf("user %d's snapshot kept: %v, want %v", u, got, want)
		}
	}
	// One larger than the bound is still kept, alone.
	if err := s.SaveSnapshot(t.Context(), 9, "big", items(150), now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !found(t, s, 9, "big", now) || found(t, s, 4, "x", now) {
		t.Error("a snapshot over the bound should replace every other one")
	}
	// An expired snapshot is gone on the next save.
	later := now.Add(2 * time.Hour)
	if err := s.SaveSnapshot(t.Context(), 10, "y", items(1), later, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if found(t, s, 9, "big", now) {
		t.Error("an expired snapshot survived a save after its expiry")
	}
}

// TestSnapshotCopies checks that a read page is the caller's: changing it
// does not change the snapshot.
func TestSnapshotCopies(t *testing.T) {
	s := &inmem.Snapshots{}
	now := time.Now()
	if err := s.SaveSnapshot(t.Context(), 1, "x", items(5), now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	page, more, err := s.Snapshot(t.Context(), 1, "x", 1, 2, now)
	if err != nil || len(page) != 2 || !more || page[0].PostID != 2 {
		t.Fatalf("Snapshot = %+v, %v, %v; want posts 2 and 3, more", page, more, err)
	}
	page[0].PostID = 99
	again, _, _ := s.Snapshot(t.Context(), 1, "x", 1, 1, now)
	if again[0].PostID != 2 {
		t.Fatalf("the snapshot changed with a page read from it: %+v", again)
	}
}
