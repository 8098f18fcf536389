package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// ErrUnavailable is what every command returns, at once, while the breaker
// is open: Redis failed recently and is being probed in the background.
// Callers treat it like any Redis failure (fall back to the database,
// snooze a fan-out job) without waiting out dial timeouts and retries.
// It carries feed.ErrUnavailable.
var ErrUnavailable = fmt.Errorf("redis: unavailable (circuit open; probing in the background): %w", feed.ErrUnavailable)

// DefaultProbeEvery is how often an open Breaker pings Redis.
const DefaultProbeEvery = time.Second

// Breaker is a circuit breaker on a Redis client. The first command that
// fails for want of Redis (a refused or broken connection, a timeout; not
// a reply error or redis.Nil) opens it; while it is open every command fails
// at once with ErrUnavailable, and one goroutine pings Redis every
// ProbeEvery. The first successful ping closes it, so feedd is back on
// Redis within ProbeEvery of its return; the outage's length is logged and
// handed to OnChange.
type Breaker struct {
	// ProbeEvery is the probe's interval (DefaultProbeEvery if zero).
	ProbeEvery time.Duration
	// Log receives a warning when the breaker opens and a line with the
	// outage's duration when it closes.
	Log *slog.Logger
	// OnChange, when set, is called when the breaker opens (open true,
	// outage 0) and when it closes (open false, the outage's length): the
	// metrics' hook.
	OnChange func(open bool, outage time.Duration)

	client goredis.UniversalClient
	open   atomic.Bool
	mu     sync.Mutex
	since  time.Time // when it opened
}

// NewBreaker installs a breaker on c. Set its fields before c is used.
func NewBreaker(c goredis.UniversalClient, log *slog.Logger) *Breaker {
	if log == nil {
		log = slog.Default()
	}
	b := &Breaker{client: c, Log: log}
	c.AddHook(b)
	return b
}

// Open reports whether the breaker is open (Redis taken as down).
func (b *Breaker) Open() bool { return b.open.Load() }

type probeKey struct{}

func (b *Breaker) refuse(ctx context.Context) bool {
	return b.open.Load() && ctx.Value(probeKey{}) == nil
}

// DialHook implements goredis.Hook. Dials are never refused: commands are
// refused before they need a connection, and the pool's own background
// dial, which has to succeed for the pool to hand out connections again
// after a run of failed dials, must reach Redis.
func (b *Breaker) DialHook(next goredis.DialHook) goredis.DialHook { return next }

// ProcessHook implements goredis.Hook.
func (b *Breaker) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if b.refuse(ctx) {
			cmd.SetErr(ErrUnavailable)
			return ErrUnavailable
		}
		err := next(ctx, cmd)
		b.observe(ctx, err)
		return err
	}
}

// ProcessPipelineHook implements goredis.Hook.
func (b *Breaker) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if b.refuse(ctx) {
			for _, c := range cmds {
				c.SetErr(ErrUnavailable)
			}
			return ErrUnavailable
		}
		err := next(ctx, cmds)
		b.observe(ctx, err)
		return err
	}
}

// outage reports whether err says Redis cannot be reached, as opposed to
// an answer (a reply error, redis.Nil) or the caller giving up.
func outage(ctx context.Context, err error) bool {
	var reply goredis.Error
	switch {
	case err == nil, errors.Is(err, goredis.Nil), errors.Is(err, goredis.ErrClosed), errors.Is(err, ErrUnavailable):
		return false
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &reply):
		return false
	}
	return true
}

// storeError is err of a command as the Inbox and Outbox return it: when
// Redis could not be reached or cannot serve now (outageOf), with
// feed.ErrUnavailable in its chain, so that fan-out waits it out; an
// answer (a reply error such as WRONGTYPE or a script's, redis.Nil, an
// entry refused) as it is.
func storeError(err error) error {
	if outageOf(err) && !errors.Is(err, feed.ErrUnavailable) {
		return fmt.Errorf("%w: %w", feed.ErrUnavailable, err)
	}
	return err
}

// outageOf reports whether err says that Redis was not reached (a dial, a
// lost or closed connection, a timeout, the pool exhausted, the breaker
// open), or answered that it cannot serve now: loading its data, a
// replica or a Cluster failing over, a script running too long, out of
// memory. The same command may succeed later unchanged.
func outageOf(err error) bool {
	var reply goredis.Error
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, goredis.Nil):
		return false
	case errors.As(err, &reply):
		for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM", "NOREPLICAS"} {
			if goredis.HasErrorPrefix(reply, p) {
				return true
			}
		}
		return false
	}
	return errors.Is(err, ErrUnavailable) || errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

func (b *Breaker) observe(ctx context.Context, err error) {
	if ctx.Value(probeKey{}) != nil || !outage(ctx, err) {
		return
	}
	if !b.open.CompareAndSwap(false, true) {
		return
	}
	b.mu.Lock()
	b.since = time.Now()
	b.mu.Unlock()
	b.Log.Warn("redis unavailable: serving degraded from the database, probing Redis in the background", "error", err)
	if b.OnChange != nil {
		b.OnChange(true, 0)
	}
	go b.probe()
}

// probe pings Redis until it answers, then closes the breaker. It stops
// when the client is closed.
func (b *Breaker) probe() {
	every := b.ProbeEvery
	if every <= 0 {
		every = DefaultProbeEvery
	}
	ctx := context.WithValue(context.Background(), probeKey{}, true)
	for {
		time.Sleep(every)
		pctx, cancel := context.WithTimeout(ctx, every)
		err := b.client.Ping(pctx).Err()
		cancel()
		if errors.Is(err, goredis.ErrClosed) {
			return
		}
		if err == nil {
			b.mu.Lock()
			d := time.Since(b.since)
			b.mu.Unlock()
			b.open.Store(false)
			b.Log.Info("redis back: serving from Redis again", "outage", d.Round(time.Millisecond).String(), "outage_s", d.Seconds())
			if b.OnChange != nil {
				b.OnChange(false, d)
			}
			return
		}
	}
}
