package redis_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// TestWireDeliver: deliveries written on the wire path (wire.go) leave every
// inbox exactly as those sent through go-redis (InboxOptions.NoWire) do, on
// each layout (a sorted set's members and scores; a packed inbox's head and
// body, byte for byte), ties, amortised trims and compactions included, on
// one node and on the Cluster, and the wire path carried them all (no batch
// fell back).
func TestWireDeliver(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		const cap = 5
		goOpts, wireOpts := withPrefix(opts, prefix+"go:", cap), withPrefix(opts, prefix+"wire:", cap)
		goOpts.NoWire = true
		viaGo, viaWire := redis.NewInbox(rdb, goOpts), redis.NewInbox(rdb, wireOpts)
		if n := redis.WireFallbacks(viaWire); n != 0 {
			t.Fatalf("wire path not in use on this client (fallbacks %d)", n)
		}
		users := make([]int64, 300)
		for i := range users {
			users[i] = int64(7*i + 1)
			if i%2 == 0 { // built inboxes (with their sentinel) and fresh ones
				mustDo(t, viaGo.Restore(ctx, users[i], nil), "Restore")
				mustDo(t, viaWire.Restore(ctx, users[i], nil), "Restore")
			}
		}
		for id := int64(1); id <= 80; id++ {
			e := feed.Entry{PostID: id, Score: s0 + id/3} // ties of three posts
			batch := users[int(id)%50:]                   // batches of changing size
			mustDo(t, viaGo.Deliver(ctx, e, batch), "Deliver through go-redis")
			mustDo(t, viaWire.Deliver(ctx, e, batch), "Deliver on the wire path")
		}
		if n := redis.WireFallbacks(viaWire); n != 0 {
			t.Errorf("%d batches fell back to go-redis, want 0", n)
		}
		packed := opts.Layout == redis.LayoutPacked
		headKey := redis.InboxKey
		if packed {
			headKey = redis.PackedHeadKey
		}
		trimmed, bodies := 0, 0
		for _, u := range users {
			want, err := rdb.ZRangeWithScores(ctx, headKey(prefix+"go:", u), 0, -1).Result()
			mustDo(t, err, "ZRANGE")
			got, err := rdb.ZRangeWithScores(ctx, headKey(prefix+"wire:", u), 0, -1).Result()
			mustDo(t, err, "ZRANGE")
			if len(got) != len(want) {
				t.Fatalf("user %d: %d head entries on the wire path, %d through go-redis", u, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("user %d: entry %d is %v on the wire path, %v through go-redis", u, i, got[i], want[i])
				}
			}
			if !packed {
				if len(got) < 80-int(u%50) {
					trimmed++
				}
				continue
			}
			wantBody, err := rdb.Get(ctx, redis.BodyKey(prefix+"go:", u)).Result()
			if err != nil && err != goredis.Nil {
				t.Fatalf("GET body: %v", err)
			}
			gotBody, err := rdb.Get(ctx, redis.BodyKey(prefix+"wire:", u)).Result()
			if err != nil && err != goredis.Nil {
				t.Fatalf("GET body: %v", err)
			}
			if gotBody != wantBody {
				t.Fatalf("user %d: body of %d bytes on the wire path, %d through go-redis, or different bytes", u, len(gotBody), len(wantBody))
			}
			if gotBody != "" {
				bodies++
			}
		}
		if !packed && trimmed == 0 {
			t.Error("no inbox was trimmed: the test does not exercise the trims")
		}
		if packed && bodies == 0 {
			t.Error("no inbox has a body: the test does not exercise the compactions")
		}
	})
}

// TestWireKeys: the wire path builds the same keys as InboxKey,
// PackedHeadKey, BodyKey and OutboxKey.
func TestWireKeys(t *testing.T) {
	for _, id := range []int64{0, 7, 42, 1 << 40} {
		inbox, head, body, outbox := redis.AppendedKeys("p:", id)
		if want := redis.InboxKey("p:", id); inbox != want {
			t.Errorf("appended inbox key %q, want %q", inbox, want)
		}
		if want := redis.PackedHeadKey("p:", id); head != want {
			t.Errorf("appended head key %q, want %q", head, want)
		}
		if want := redis.BodyKey("p:", id); body != want {
			t.Errorf("appended body key %q, want %q", body, want)
		}
		if want := redis.OutboxKey("p:", id); outbox != want {
			t.Errorf("appended outbox key %q, want %q", outbox, want)
		}
	}
}

// TestWireBreaker: the wire path's failures reach the client's Breaker. With
// Redis unreachable, a delivery fails, falls back to go-redis and opens the
// breaker; while it is open, deliveries fail at once with ErrUnavailable
// without trying the wire path. A wire connection that Redis closes costs
// one fallback and no failure.
func TestWireBreaker(t *testing.T) {
	ctx := t.Context()
	e := feed.Entry{PostID: 1, Score: s0}
	users := []int64{1, 2, 3}

	t.Run("Down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		mustDo(t, err, "listen")
		addr := ln.Addr().String()
		ln.Close() // nothing listens there any more
		rdb := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		b := redis.NewBreaker(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
		ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: "wiretest:", Layout: redis.LayoutSortedSet})
		if err := ib.Deliver(ctx, e, users); err == nil {
			t.Fatal("Deliver to an unreachable Redis succeeded")
		}
		if n := redis.WireFallbacks(ib); n != 1 {
			t.Errorf("fallbacks %d after a failed wire delivery, want 1", n)
		}
		if !b.Open() {
			t.Fatal("breaker closed after a failed delivery")
		}
		if err := ib.Deliver(ctx, e, users); !errors.Is(err, redis.ErrUnavailable) {
			t.Errorf("Deliver with the breaker open: %v, want ErrUnavailable", err)
		}
		if n := redis.WireFallbacks(ib); n != 1 {
			t.Errorf("fallbacks %d: the wire path was tried with the breaker open", n)
		}
	})

	t.Run("ConnectionKilled", func(t *testing.T) {
		rdb, prefix := openSingle(t)
		b := redis.NewBreaker(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
		ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Layout: redis.LayoutSortedSet})
		mustDo(t, ib.Deliver(ctx, e, users), "Deliver")
		// Close the wire path's connections (named feedd-wire; others'
		// that this kills fall back too).
		list, err := rdb.ClientList(ctx).Result()
		mustDo(t, err, "CLIENT LIST")
		killed := 0
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(" "+line+" ", " name=feedd-wire ") {
				continue
			}
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			mustDo(t, rdb.Do(ctx, "CLIENT", "KILL", "ID", id).Err(), "CLIENT KILL")
			killed++
		}
		if killed == 0 {
			t.Fatal("no wire connection (name=feedd-wire) in CLIENT LIST")
		}
		e2 := feed.Entry{PostID: 2, Score: s0 + 1}
		mustDo(t, ib.Deliver(ctx, e2, users), "Deliver after the wire connection was killed")
		if n := redis.WireFallbacks(ib); n != 1 {
			t.Errorf("fallbacks %d, want 1", n)
		}
		if b.Open() {
			t.Error("breaker open after a delivery that succeeded")
		}
		for _, u := range users {
			n, err := rdb.ZCard(ctx, ib.HeadKey(u)).Result()
			mustDo(t, err, "ZCARD")
			if n != 2 {
				t.Errorf("inbox %d holds %d entries, want 2", u, n)
			}
		}
	})
}
