package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/redis"
)

func TestRateStore(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestRateStore(t, func(t *testing.T) feed.RateStore {
			rdb, prefix := open(t)
			return redis.NewRateStore(rdb, prefix)
		})
	})
}
