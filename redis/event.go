package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/inmem"
)

// EventsChannel is the Pub/Sub channel of live timeline events under
// prefix. Every API process subscribes to it once; every event names the
// users (up to a fan-out batch of them) whose streams it concerns, so a
// fan-out of N followers costs N/batch PUBLISHes, not N.
func EventsChannel(prefix string) string { return prefix + "events" }

// Events is the feed.EventService of a deployment with Redis: workers
// PUBLISH, and each API process keeps one SUBSCRIBE (a Cluster broadcasts
// a PUBLISH to every node) and hands the events to its own streams. On a
// Cluster every PUBLISH goes to one node (the channel's slot's master), so
// that events keep their order.
type Events struct {
	inmem.Relay
	rdb     goredis.UniversalClient
	channel string
}

var _ feed.EventService = (*Events)(nil)

// NewEvents returns the events of rdb under prefix. Close it to end its
// subscription.
func NewEvents(rdb goredis.UniversalClient, prefix string, log *slog.Logger) *Events {
	e := &Events{rdb: rdb, channel: EventsChannel(prefix)}
	e.Relay = inmem.Relay{Listen: e.listen, Log: log}
	return e
}

// Publish implements feed.EventService: one PUBLISH.
func (e *Events) Publish(ctx context.Context, ev feed.Event) error {
	b, err := feed.MarshalEvent(ev)
	if err != nil {
		return err
	}
	var to goredis.Cmdable = e.rdb
	if cc, ok := e.rdb.(*goredis.ClusterClient); ok {
		// A Cluster client sends PUBLISH (which names no key) to any node,
		// and messages published on different nodes reach a subscriber in
		// any order: every PUBLISH goes to the node of the channel's slot,
		// so events arrive in the order they were published.
		if to, err = cc.MasterForKey(ctx, e.channel); err != nil {
			return err
		}
	}
	return to.Publish(ctx, e.channel, b).Err()
}

func (e *Events) listen(ctx context.Context, ready func(), deliver func([]byte)) error {
	ps := e.rdb.Subscribe(ctx, e.channel)
	defer ps.Close()
	// A receive waits on the connection, not on ctx: closing the
	// subscription when ctx ends is what ends the wait (Close, at
	// shutdown, would otherwise wait for the next message or timeout).
	defer context.AfterFunc(ctx, func() { ps.Close() })()
	for {
		msg, err := ps.ReceiveTimeout(ctx, 30*time.Second)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			// Quiet for a while: a PING finds a dead connection.
			if err := ps.Ping(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				ready()
			}
		case *goredis.Message:
			deliver([]byte(m.Payload))
		case *goredis.Pong:
		default:
			return fmt.Errorf("redis events: unexpected message %T", msg)
		}
	}
}
