package postgres

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/inmem"
)

// EventsChannel is the LISTEN/NOTIFY channel of live timeline events.
const EventsChannel = "feed_events"

// maxNotify is the most bytes one NOTIFY payload carries (PostgreSQL's
// limit is 8000).
const maxNotify = 7900

// Events is the feed.EventService of a deployment on PostgreSQL without
// Redis: workers NOTIFY, and each API process keeps one connection
// LISTENing and hands the events to its own streams. An event for more
// users than one payload holds is split into several, sent in one round
// trip.
type Events struct {
	inmem.Relay
	db *DB
}

var _ feed.EventService = (*Events)(nil)

// NewEvents returns the events of db. Close it to end its subscription.
func NewEvents(db *DB, log *slog.Logger) *Events {
	e := &Events{db: db}
	e.Relay = inmem.Relay{Listen: e.listen, Log: log}
	return e
}

// Publish implements feed.EventService.
func (e *Events) Publish(ctx context.Context, ev feed.Event) error {
	payloads, err := notifyPayloads(ev)
	if err != nil {
		return err
	}
	if len(payloads) == 1 {
		_, err := e.db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, EventsChannel, payloads[0])
		return err
	}
	var b pgx.Batch
	for _, p := range payloads {
		b.Queue(`SELECT pg_notify($1, $2)`, EventsChannel, p)
	}
	return e.db.Pool.SendBatch(ctx, &b).Close()
}

// notifyPayloads splits ev by its users into payloads that fit a NOTIFY.
func notifyPayloads(ev feed.Event) ([]string, error) {
	b, err := feed.MarshalEvent(ev)
	if err != nil {
		return nil, err
	}
	if len(b) <= maxNotify || len(ev.Users) <= 1 {
		return []string{string(b)}, nil
	}
	half := len(ev.Users) / 2
	a, bv := ev, ev
	a.Users, bv.Users = ev.Users[:half], ev.Users[half:]
	bv.Author = 0 // once is enough
	pa, err := notifyPayloads(a)
	if err != nil {
		return nil, err
	}
	pb, err := notifyPayloads(bv)
	return append(pa, pb...), err
}

func (e *Events) listen(ctx context.Context, ready func(), deliver func([]byte)) error {
	// A connection of its own, not the pool's: it stays LISTENing.
	conn, err := pgx.ConnectConfig(ctx, e.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+EventsChannel); err != nil {
		return err
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		deliver([]byte(n.Payload))
	}
}
