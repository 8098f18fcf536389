package bench

// The freshness probes of Mixed: posts published during the run whose
// arrival in every follower's feed is timed.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
)

type probe struct {
	id       int64
	answered time.Time
	seen     []bool
	left     int
}

type probeTracker struct {
	c *mixClient
	w *mixedWorld

	mu       sync.Mutex
	pending  map[int64]*probe
	fresh    Latencies
	accepted int
	shedN    int
	errors   int
	err      error
	stopPub  chan struct{}
	stopOnce sync.Once
	pubDone  chan struct{}
}

type probeResult struct {
	accepted, lost, shed, errors int
	fresh                        Latencies
	err                          error
}

func newProbeTracker(c *mixClient, w *mixedWorld) *probeTracker {
	return &probeTracker{c: c, w: w, pending: map[int64]*probe{}, stopPub: make(chan struct{}), pubDone: make(chan struct{})}
}

func (p *probeTracker) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errors++
	if p.err == nil {
		p.err = err
	}
}

// run publishes a probe every probeEvery for d (or until stopPublishing) and
// polls the followers' first pages until ctx ends.
func (p *probeTracker) run(ctx context.Context, d time.Duration, _ io.Writer) {
	var wg sync.WaitGroup
	for k := range p.w.probeFans {
		wg.Add(1)
		go func() { defer wg.Done(); p.poll(ctx, k) }()
	}
	defer wg.Wait()
	defer close(p.pubDone)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	end := time.After(d)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stopPub:
			return
		case <-end:
			return
		case <-t.C:
		}
		req := &mixReq{method: http.MethodPost, path: "/blog", token: p.w.probeAuthor,
			body: []byte(`{"title":"probe","content":"A freshness probe of feedd bench mixed."}`)}
		out, err := p.c.do(ctx, req)
		switch {
		case err != nil && ctx.Err() == nil:
			p.fail(fmt.Errorf("publish: %w", err))
		case err != nil:
		case out == shed:
			p.mu.Lock()
			p.shedN++
			p.mu.Unlock()
		default:
			p.mu.Lock()
			p.accepted++
			p.pending[req.result] = &probe{id: req.result, answered: time.Now(), seen: make([]bool, len(p.w.probeFans)), left: len(p.w.probeFans)}
			p.mu.Unlock()
		}
	}
}

// poll reads follower k's first page, as often as every 5 ms, while a probe
// has not reached it.
func (p *probeTracker) poll(ctx context.Context, k int) {
	tok := p.w.probeFans[k]
	for ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		p.mu.Lock()
		waiting := false
		for _, pr := range p.pending {
			waiting = waiting || !pr.seen[k]
		}
		p.mu.Unlock()
		if !waiting {
			continue
		}
		req := &mixReq{method: http.MethodGet, token: tok,
			path: "/blog/of/follow?size=" + strconv.Itoa(feed.MaxPageSize) + "&lastId=" + strconv.FormatInt(time.Now().UnixMilli()+1, 10)}
		out, err := p.c.do(ctx, req)
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				p.fail(fmt.Errorf("follower feed: %w", err))
			}
			continue
		}
		if out == shed {
			continue // a read refused under load is retried
		}
		var page struct {
			Data *struct {
				List []struct {
					ID int64 `json:"id"`
				} `json:"list"`
			} `json:"data"`
		}
		if err := json.Unmarshal(req.body, &page); err != nil {
			p.fail(err)
			continue
		}
		if page.Data == nil {
			continue
		}
		p.mu.Lock()
		for _, b := range page.Data.List {
			pr := p.pending[b.ID]
			if pr == nil || pr.seen[k] {
				continue
			}
			pr.seen[k] = true
			if pr.left--; pr.left == 0 {
				p.fresh = append(p.fresh, now.Sub(pr.answered))
				delete(p.pending, b.ID)
			}
		}
		p.mu.Unlock()
	}
}

func (p *probeTracker) stopPublishing() {
	p.stopOnce.Do(func() { close(p.stopPub) })
	<-p.pubDone
}

// wait returns when no probe is pending or ctx ends.
func (p *probeTracker) wait(ctx context.Context) {
	poll(ctx, 10*time.Millisecond, time.Hour, func() (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.pending) == 0, nil
	})
}

// freshLen is how many probes have reached all their followers so far.
func (p *probeTracker) freshLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fresh)
}

func (p *probeTracker) result() probeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return probeResult{accepted: p.accepted, lost: len(p.pending), shed: p.shedN, errors: p.errors, fresh: p.fresh, err: p.err}
}
