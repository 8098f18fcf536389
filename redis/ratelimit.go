package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// RateStore is feed.RateStore on Redis: one string key per counter and
// window ({Prefix}rate:{<key>}:<window end ms>), counted with INCRBY and
// removed by Redis (PEXPIRE) gcGrace after its window. With Durable set
// (the wiring sets the SQL store), a Redis that cannot be reached falls
// through to it, so the limits keep holding.
type RateStore struct {
	rdb    goredis.UniversalClient
	prefix string

	Durable feed.RateStore
}

var _ feed.RateStore = (*RateStore)(nil)

// NewRateStore returns a RateStore on rdb whose keys start with prefix.
func NewRateStore(rdb goredis.UniversalClient, prefix string) *RateStore {
	return &RateStore{rdb: rdb, prefix: prefix}
}

// countScript adds to a counter and sets its expiry when it is created.
//
//	KEYS[1] counter key
//	ARGV[1] add
//	ARGV[2] time to live of the key (ms): garbage collection
//
// Returns the count after the addition.
var countScript = goredis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return n
`)

// Count implements feed.RateStore: one GET (a peek) or one call of
// countScript.
func (s *RateStore) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	ends := feed.WindowEnd(now, window)
	k := RateKey(s.prefix, key, ends)
	var n int
	var err error
	if add == 0 {
		n, err = s.rdb.Get(ctx, k).Int()
		if err == goredis.Nil {
			n, err = 0, nil
		}
	} else {
		gc := max(ends.Sub(now), 0) + gcGrace
		n, err = countScript.Run(ctx, s.rdb, []string{k}, add, gc.Milliseconds()).Int()
	}
	if err != nil && s.Durable != nil && ctx.Err() == nil {
		return s.Durable.Count(ctx, key, window, now, add)
	}
	return n, ends, err
}
