package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// RateStore is feed.RateStore on Redis: one hash per counter (RateKey:
// count and window end, by the caller's clock), counted by one script and
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

// countScript adds to a counter, starting a new window when its window
// has ended.
//
//	KEYS[1] counter key
//	ARGV[1] add (0: a peek, which stores nothing; below 0: a refund, which
//	        changes only a live window, never below 0)
//	ARGV[2] now (ms)
//	ARGV[3] window (ms)
//	ARGV[4] time to live of a new key (ms): garbage collection
//
// Returns {count, window end (ms)}.
var countScript = goredis.NewScript(`
local add, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local c = redis.call('HMGET', KEYS[1], 'n', 'ends')
if c[1] and tonumber(c[2]) > now then
  if add == 0 then
    return {tonumber(c[1]), tonumber(c[2])}
  end
  local n = redis.call('HINCRBY', KEYS[1], 'n', add)
  if n < 0 then
    redis.call('HSET', KEYS[1], 'n', 0)
    n = 0
  end
  return {n, tonumber(c[2])}
end
local ends = now + tonumber(ARGV[3])
if add <= 0 then
  return {0, ends}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'n', add, 'ends', ends)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {add, ends}
`)

// Count implements feed.RateStore: one call of countScript.
func (s *RateStore) Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (int, time.Time, error) {
	gc := window + gcGrace
	res, err := countScript.Run(ctx, s.rdb, []string{RateKey(s.prefix, key)}, add, now.UnixMilli(), window.Milliseconds(), gc.Milliseconds()).Int64Slice()
	if err == nil && len(res) != 2 {
		err = errors.New("redis: unexpected rate counter reply")
	}
	if err != nil {
		if s.Durable != nil && ctx.Err() == nil {
			return s.Durable.Count(ctx, key, window, now, add)
		}
		return 0, time.Time{}, err
	}
	return int(res[0]), time.UnixMilli(res[1]), nil
}
