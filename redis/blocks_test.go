package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/feedtest"
)

func TestBlocks(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestBlocks(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}
