package fanout

import (
	"context"
	"sync"
)

// writesInFlight is how many inbox writes a batch job has under way at
// once: it reads the next batch of follower ids and sends its write while
// the previous write's replies are still to come, so that the inbox store
// never waits for the job's next step (a chain of read, write, wait,
// publish per batch left Redis idle half the time: BENCHMARKS.md
// "Fan-out"). The writes of one job go to disjoint sets of inboxes, so
// their order does not matter; each is idempotent, so a job that fails in
// the middle is retried as before.
const writesInFlight = 2

// flight runs a job's inbox writes, at most limit at once, and keeps the
// first error; after one, the others are cancelled and no more start,
// except after a refused write (refusedError), which is kept while the
// other writes go on.
type flight struct {
	ctx     context.Context
	cancel  context.CancelFunc
	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	refusal error // the first refused write's
}

func newFlight(ctx context.Context, limit int) *flight {
	ctx, cancel := context.WithCancel(ctx)
	return &flight{ctx: ctx, cancel: cancel, slots: make(chan struct{}, limit)}
}

// run starts f once fewer than limit writes are under way. It returns an
// error, and does not run f, when an earlier write failed or the job's
// context ended first.
func (g *flight) run(f func(ctx context.Context) error) error {
	select {
	case g.slots <- struct{}{}:
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
	if err := g.ctx.Err(); err != nil {
		<-g.slots
		return err
	}
	g.wg.Add(1)
	go func() {
		defer func() {
			<-g.slots
			g.wg.Done()
		}()
		if err := f(g.ctx); err != nil {
			g.fail(err)
		}
	}()
	return nil
}

func (g *flight) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if refused(err) {
		if g.refusal == nil {
			g.refusal = err
		}
		return
	}
	if g.err == nil {
		g.err = err
		g.cancel()
	}
}

// wait waits for the writes under way and returns the first error: err
// (the caller's own, which cancels the writes) or a write's, else the
// first refused write's.
func (g *flight) wait(err error) error {
	if err != nil {
		g.fail(err)
	}
	g.wg.Wait()
	g.cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	return g.refusal
}
