package inmem

import (
	"context"
	"slices"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// SnapshotItems bounds the ranked items all of a Snapshots holds (64
// bytes each, so ~64 MiB): past it, the oldest snapshots are dropped
// first, and their cursors answer as expired ones do.
const SnapshotItems = 1 << 20

// Snapshots keeps the ranked timeline's snapshots in this process's memory:
// the feed.SnapshotStore of the embedded single-process default, where a
// SQLite write transaction per first ranked page would queue behind the
// one writer. It keeps the SQL stores' semantics: a snapshot lives until
// its expiry, and a user keeps the newest feed.SnapshotsKept. Processes do
// not share it: several API processes need the database's or Redis's
// (--rank-snapshots). The zero value is ready to use.
type Snapshots struct {
	// MaxItems overrides SnapshotItems when positive.
	MaxItems int

	mu    sync.Mutex
	users map[int64][]*snapshot // each user's, oldest first
	order []*snapshot           // every snapshot, oldest first (some already dropped)
	items int                   // items held by live snapshots
}

type snapshot struct {
	user    int64
	id      string
	items   []rank.Item
	expires time.Time
	gone    bool
}

var _ feed.SnapshotStore = (*Snapshots)(nil)

// SaveSnapshot implements feed.SnapshotStore. It drops the user's snapshots
// beyond the newest feed.SnapshotsKept, the expired ones, and the oldest
// ones while more than MaxItems items are held. items is kept as given:
// the caller must not change it afterwards.
func (s *Snapshots) SaveSnapshot(ctx context.Context, viewerID int64, id string, items []rank.Item, now, expires time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[int64][]*snapshot{}
	}
	sn := &snapshot{user: viewerID, id: id, items: items, expires: expires}
	mine := append(s.users[viewerID], sn)
	for len(mine) > feed.SnapshotsKept {
		s.drop(mine[0])
		mine = mine[1:]
	}
	s.users[viewerID] = mine
	s.order = append(s.order, sn)
	s.items += len(items)
	// The oldest first: expired, or over the bound.
	limit := s.MaxItems
	if limit <= 0 {
		limit = SnapshotItems
	}
	n := 0
	for _, old := range s.order {
		if !old.gone && (s.items <= limit || old == sn) && old.expires.After(now) {
			break
		}
		if !old.gone {
			s.dropUser(old)
		}
		n++
	}
	s.order = s.order[n:]
	if len(s.order) < cap(s.order)/4 {
		s.order = slices.Clip(s.order)
	}
	return nil
}

// drop marks sn gone (its user's list is the caller's to fix).
func (s *Snapshots) drop(sn *snapshot) {
	if !sn.gone {
		sn.gone = true
		s.items -= len(sn.items)
		sn.items = nil
	}
}

// dropUser drops sn and removes it from its user's list.
func (s *Snapshots) dropUser(sn *snapshot) {
	s.drop(sn)
	mine := slices.DeleteFunc(s.users[sn.user], func(x *snapshot) bool { return x == sn })
	if len(mine) == 0 {
		delete(s.users, sn.user)
	} else {
		s.users[sn.user] = mine
	}
}

// Snapshot implements feed.SnapshotStore.
func (s *Snapshots) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]rank.Item, bool, error) {
	s.mu.Lock()
	var items []rank.Item
	found := false
	for _, sn := range s.users[viewerID] {
		if sn.id == id && sn.expires.After(now) {
			items, found = sn.items, true
			break
		}
	}
	s.mu.Unlock()
	if !found {
		return nil, false, feed.ErrNotFound("snapshot")
	}
	if offset >= len(items) {
		return []rank.Item{}, false, nil
	}
	end := min(offset+limit, len(items))
	return slices.Clone(items[offset:end]), end < len(items), nil
}
