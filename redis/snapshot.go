package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// SnapshotKey is the key of userID's ranked snapshot id (a string holding
// rank.EncodeSnapshot's JSON, PEXPIRE'd) under prefix.
func SnapshotKey(prefix string, userID int64, id string) string {
	return prefix + "rank:{" + strconv.FormatInt(userID, 10) + "}:" + id
}

// Snapshots keeps the ranked timeline's snapshots in Redis, expired by
// Redis itself: feed.SnapshotStore.
type Snapshots struct {
	rdb    goredis.UniversalClient
	prefix string
}

var _ feed.SnapshotStore = (*Snapshots)(nil)

// NewSnapshots returns the snapshot store on rdb under key prefix.
func NewSnapshots(rdb goredis.UniversalClient, prefix string) *Snapshots {
	return &Snapshots{rdb: rdb, prefix: prefix}
}

// SaveSnapshot implements feed.SnapshotStore: one SET with a TTL of
// expires-now.
func (s *Snapshots) SaveSnapshot(ctx context.Context, viewerID int64, id string, items []rank.Item, now, expires time.Time) error {
	body := rank.EncodeSnapshot(items)
	return s.rdb.Set(ctx, SnapshotKey(s.prefix, viewerID, id), body, max(expires.Sub(now), time.Millisecond)).Err()
}

// Snapshot implements feed.SnapshotStore. Expiry is Redis's TTL; now is
// not used.
func (s *Snapshots) Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]rank.Item, bool, error) {
	body, err := s.rdb.Get(ctx, SnapshotKey(s.prefix, viewerID, id)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, feed.ErrNotFound("snapshot")
	} else if err != nil {
		return nil, false, err
	}
	return rank.SnapshotSlice(body, offset, limit)
}
