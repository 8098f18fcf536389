package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

// TestStoresDurable runs the store suite on the AuthStore layered over a
// durable SQL store, as feedd wires it.
func TestStoresDurable(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestStores(t, func(t *testing.T) *feedtest.Backend {
			b := openBackend(t, open)
			b.Auth.(*redis.AuthStore).Durable = b.Users.(*sqlite.DB)
			return b
		})
	})
}

// TestSessionsSurviveRedisLoss: sessions written through a layered store
// outlive a flush of Redis and an unreachable Redis, and a logout during an
// outage is caught at the next durable check.
func TestSessionsSurviveRedisLoss(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rdb, prefix := openSingle(t)
	auth := redis.NewAuthStore(rdb, prefix)
	auth.Durable = db
	now := time.Now()
	u, err := db.FindOrCreateUser(ctx, "13800000001", "u", now)
	if err != nil {
		t.Fatal(err)
	}
	ttl := 30 * time.Minute
	mustDo(t, auth.CreateSession(ctx, "tok", u.ID, now, now.Add(ttl)), "CreateSession")

	// Lost from Redis: found in the durable store and cached again.
	deleteKeys(t, rdb, prefix)
	if id, err := auth.Session(ctx, "tok", now.Add(time.Minute), ttl); err != nil || id != u.ID {
		t.Fatalf("after a flush: %d, %v", id, err)
	}
	if n, _ := rdb.Exists(ctx, redis.SessionKey(prefix, "tok")).Result(); n != 1 {
		t.Fatalf("session not cached again after the flush")
	}

	// Used for 50 minutes through Redis alone: the durable copy is slid too.
	for m := 2; m <= 50; m++ {
		if _, err := auth.Session(ctx, "tok", now.Add(time.Duration(m)*time.Minute), ttl); err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
	}
	// Redis unreachable: the durable store answers, and it is still live.
	down := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer down.Close()
	outage := redis.NewAuthStore(down, prefix)
	outage.Durable = db
	if id, err := outage.Session(ctx, "tok", now.Add(70*time.Minute), ttl); err != nil || id != u.ID {
		t.Fatalf("during an outage, 20 min after the last use: %d, %v", id, err)
	}
	// Codes and new sessions work during the outage.
	mustDo(t, outage.SaveCode(ctx, "13800000002", "h", now, 2*time.Minute, time.Minute), "SaveCode")
	mustDo(t, outage.ConsumeCode(ctx, "13800000002", "h", now, 5), "ConsumeCode")
	mustDo(t, outage.CreateSession(ctx, "tok2", u.ID, now, now.Add(ttl)), "CreateSession")

	// A logout during the outage only reaches the durable store; the cached
	// copy dies at the next durable check.
	if err := outage.DeleteSession(ctx, "tok"); err == nil {
		t.Fatal("DeleteSession during an outage reported no error")
	}
	late := now.Add(70*time.Minute + 6*time.Minute)
	if _, err := auth.Session(ctx, "tok", late, ttl); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Fatalf("session logged out during the outage still works: %v", err)
	}
}
