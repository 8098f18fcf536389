package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// The periodic samples of a long Mixed run (a soak): what the process
// holds (memory, goroutines, connections, rows) and each operation's p99,
// so that the first minutes can be compared with the last.

// MixedSample is one sample of a Mixed run.
type MixedSample struct {
	ElapsedS float64 `json:"elapsed_s"`
	// Gauges are Env.Gauges's figures at the sample (rss_mb, goroutines,
	// pool connections, job rows, table sizes ...).
	Gauges map[string]float64 `json:"gauges"`
	// P99ms is the p99 of each operation's requests answered since the
	// previous sample ("fresh": the probes that reached their followers).
	P99ms map[string]float64 `json:"p99_ms"`
	N     map[string]int     `json:"n"`

	offs map[string]int // lengths of the latency lists at the sample
}

// SoakCompare sets the first window of a run against its last.
type SoakCompare struct {
	WindowS float64 `json:"window_s"`
	// Gauges at the end of the first window and at the end of the run.
	FirstGauges map[string]float64 `json:"first_gauges"`
	LastGauges  map[string]float64 `json:"last_gauges"`
	// p99 of each operation over the first window and over the last.
	FirstP99ms map[string]float64 `json:"first_p99_ms"`
	LastP99ms  map[string]float64 `json:"last_p99_ms"`
}

// sampler takes MixedSamples every opt.SampleEvery while a run lasts.
type sampler struct {
	env     *Env
	every   time.Duration
	lengths func() map[string]int // current lengths of the latency lists
	// held is the bytes the latency lists hold: the load generator's own
	// memory, which grows with the run in the process that serves it.
	held    func() int64
	mu      sync.Mutex
	samples []MixedSample
	errs    int
}

func (s *sampler) take(ctx context.Context, start time.Time) {
	var g map[string]float64
	if s.env.Gauges != nil {
		var err error
		if g, err = s.env.Gauges(ctx); err != nil {
			s.env.logf("soak sample: %v", err)
			s.mu.Lock()
			s.errs++
			s.mu.Unlock()
		}
	}
	if g != nil && s.held != nil {
		g["bench_latencies_mb"] = float64(s.held()) / (1 << 20)
	}
	smp := MixedSample{ElapsedS: round(time.Since(start).Seconds(), 1), Gauges: g, offs: s.lengths()}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// run samples at start and every s.every until ctx ends.
func (s *sampler) run(ctx context.Context, start time.Time) {
	s.take(ctx, start)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.take(ctx, start)
		}
	}
}

// finish fills in each sample's p99s from lists (the latencies of each
// operation in the order answered) and compares the first window with the
// last.
func (s *sampler) finish(lists map[string]Latencies, window time.Duration) ([]MixedSample, *SoakCompare) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return nil, nil
	}
	prev := map[string]int{}
	for i := range s.samples {
		smp := &s.samples[i]
		smp.P99ms, smp.N = map[string]float64{}, map[string]int{}
		for op, l := range lists {
			hi := min(smp.offs[op], len(l))
			lo := min(prev[op], hi)
			smp.P99ms[op] = round(ms(l[lo:hi].Quantile(0.99)), 2)
			smp.N[op] = hi - lo
		}
		prev = smp.offs
	}
	last := s.samples[len(s.samples)-1]
	end := last.ElapsedS
	w := window.Seconds()
	if w <= 0 || 2*w > end {
		return s.samples, nil
	}
	// The first window ends at the last sample within it; the last begins
	// at the first sample within it.
	first, from := s.samples[0], s.samples[0]
	for _, smp := range s.samples {
		if smp.ElapsedS <= w {
			first = smp
		}
	}
	for i := len(s.samples) - 1; i >= 0; i-- {
		if s.samples[i].ElapsedS <= end-w {
			from = s.samples[i]
			break
		}
	}
	c := &SoakCompare{WindowS: round(w, 0), FirstGauges: first.Gauges, LastGauges: last.Gauges,
		FirstP99ms: map[string]float64{}, LastP99ms: map[string]float64{}}
	for op, l := range lists {
		c.FirstP99ms[op] = round(ms(l[:min(first.offs[op], len(l))].Quantile(0.99)), 2)
		c.LastP99ms[op] = round(ms(l[min(from.offs[op], len(l)):min(last.offs[op], len(l))].Quantile(0.99)), 2)
	}
	return s.samples, c
}

// Text renders the comparison as a table, one row per figure.
func (c *SoakCompare) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  first %.0f s against last %.0f s:\n", c.WindowS, c.WindowS)
	fmt.Fprintf(&b, "    %-40s %14s %14s\n", "figure", "first", "last")
	for _, k := range slices.Sorted(maps.Keys(c.LastGauges)) {
		fmt.Fprintf(&b, "    %-40s %14.1f %14.1f\n", k, c.FirstGauges[k], c.LastGauges[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.LastP99ms)) {
		fmt.Fprintf(&b, "    %-40s %14.2f %14.2f\n", "p99 ms "+k, c.FirstP99ms[k], c.LastP99ms[k])
	}
	return b.String()
}
