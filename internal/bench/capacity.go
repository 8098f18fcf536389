package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/capacity"
)

// CapacityOptions are `feedd bench capacity`'s: the graph and activity
// model, feedd's settings, what to run, and the costs to price it with.
type CapacityOptions struct {
	Graph capacity.GraphOptions // Users is set per run
	Sim   capacity.Options
	// Sizes are the users of each run; with two or more, every figure's
	// growth is fitted and planned at Plan.
	Sizes []int
	Plan  []int
	// Sweep lists pull thresholds to simulate at Sizes' last size, for
	// each multiplier of pages per visit in SweepReads.
	Sweep      []int
	SweepReads []float64
	// Check replays the activity of a run at Sizes' last size through the
	// real server (env) and compares (CheckCapacity).
	Check bool
	// Load returns the machine's load average, for the record of each run.
	Load func() string
}

// CapacityRun is one simulation priced.
type CapacityRun struct {
	capacity.Summary
	GraphSeconds float64 `json:"graph_seconds"`
	SimSeconds   float64 `json:"sim_seconds"`
	Load         string  `json:"load"` // at its end
}

// SweepRow is one threshold at one read multiplier.
type SweepRow struct {
	ReadRatio float64 `json:"read_ratio"` // pages per visit, times the model's
	CapacityRun
}

// CapacityResult is what `feedd bench capacity --json` prints.
type CapacityResult struct {
	Inputs struct {
		Graph      capacity.GraphOptions `json:"graph"`
		Activity   capacity.Activity     `json:"activity"`
		Settings   capacity.Settings     `json:"settings"`
		Days       float64               `json:"days"`
		WarmupDays int                   `json:"warmup_days"`
		Seed       uint64                `json:"seed"`
	} `json:"inputs"`
	Costs  *capacity.Costs   `json:"costs"`
	Runs   []CapacityRun     `json:"runs"`
	Plan   []int             `json:"plan,omitempty"`
	Growth []capacity.Growth `json:"growth,omitempty"`
	Sweep  []SweepRow        `json:"sweep,omitempty"`
	// Best is, for each read multiplier, the swept threshold with the
	// fewest core equivalents.
	Best  map[string]int `json:"best,omitempty"`
	Check *CheckResult   `json:"check,omitempty"`
}

// Capacity runs opt's simulations and prices them with costs.
func Capacity(ctx context.Context, env *Env, costs *capacity.Costs, opt CapacityOptions) (*CapacityResult, error) {
	if err := costs.Validate(); err != nil {
		return nil, err
	}
	if len(opt.Sizes) == 0 {
		return nil, fmt.Errorf("bench: capacity needs a number of users")
	}
	r := &CapacityResult{Costs: costs, Plan: opt.Plan}
	r.Inputs.Graph, r.Inputs.Activity, r.Inputs.Settings = opt.Graph, opt.Sim.Activity, opt.Sim.Settings
	r.Inputs.Days, r.Inputs.WarmupDays, r.Inputs.Seed = opt.Sim.Days, opt.Sim.WarmupDays, opt.Sim.Seed
	r.Inputs.Graph.Users = 0
	load := opt.Load
	if load == nil {
		load = func() string { return "?" }
	}
	var g *capacity.Graph
	var graphSeconds float64
	for _, n := range opt.Sizes {
		g = nil // the last size's graph stays for the sweep and the check
		var err error
		start := time.Now()
		if g, err = buildGraph(ctx, env, opt.Graph, n); err != nil {
			return nil, err
		}
		graphSeconds = time.Since(start).Seconds()
		run, err := simulate(ctx, env, g, opt.Sim, costs, load)
		if err != nil {
			return nil, err
		}
		run.GraphSeconds = round(graphSeconds, 1)
		r.Runs = append(r.Runs, run)
	}
	if len(r.Runs) >= 2 && len(opt.Plan) > 0 {
		sums := make([]capacity.Summary, len(r.Runs))
		for i, run := range r.Runs {
			sums[i] = run.Summary
		}
		r.Growth = capacity.Extrapolate(sums, opt.Plan)
	}
	if len(opt.Sweep) > 0 {
		r.Best = map[string]int{}
		ratios := opt.SweepReads
		if len(ratios) == 0 {
			ratios = []float64{1}
		}
		for _, ratio := range ratios {
			var rows []capacity.Summary
			for _, t := range opt.Sweep {
				o := opt.Sim
				o.Settings.PullThreshold = t
				o.Activity.PagesPerVisit *= ratio
				run, err := simulate(ctx, env, g, o, costs, load)
				if err != nil {
					return nil, err
				}
				run.GraphSeconds = round(graphSeconds, 1)
				r.Sweep = append(r.Sweep, SweepRow{ReadRatio: ratio, CapacityRun: run})
				rows = append(rows, run.Summary)
			}
			r.Best[fmt.Sprint(ratio)] = opt.Sweep[capacity.Cheapest(rows)]
		}
	}
	if opt.Check {
		c, err := CheckCapacity(ctx, env, g, opt.Sim, costs)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		r.Check = c
	}
	return r, nil
}

func buildGraph(ctx context.Context, env *Env, o capacity.GraphOptions, n int) (*capacity.Graph, error) {
	o.Users = n
	bar := newProgress(env.Progress, fmt.Sprintf("follow graph, %d users", n), n)
	o.Progress = func(_ string, done, _ int) { bar.set(done) }
	g, err := capacity.NewGraph(o)
	bar.finish()
	if err == nil {
		err = ctx.Err()
	}
	return g, err
}

func simulate(ctx context.Context, env *Env, g *capacity.Graph, o capacity.Options, costs *capacity.Costs, load func() string) (CapacityRun, error) {
	total := o.WarmupDays + int(o.Days+0.999999)
	bar := newProgress(env.Progress, fmt.Sprintf("simulate, threshold %d", o.Settings.PullThreshold), total)
	o.Progress = func(_ string, done, _ int) { bar.set(done) }
	start := time.Now()
	res, err := capacity.Run(g, o)
	bar.finish()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return CapacityRun{}, err
	}
	return CapacityRun{
		Summary:    costs.Summarize(res, g.Users, o.Settings.PullThreshold),
		SimSeconds: round(time.Since(start).Seconds(), 1),
		Load:       load(),
	}, nil
}

// ReadCosts reads the costs of a capacity JSON output (its "costs"), or a
// bare costs object, from path.
func ReadCosts(path string) (*capacity.Costs, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var wrapped struct {
		Costs *capacity.Costs `json:"costs"`
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := wrapped.Costs
	if c == nil {
		c = &capacity.Costs{}
		if err := json.Unmarshal(b, c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

// Text is the result as tables.
func (r *CapacityResult) Text() string {
	var b strings.Builder
	k := r.Costs
	fmt.Fprintf(&b, "costs (%s): Redis %.2f µs a delivery, %.1f µs a page + %.1f µs an outbox merged; API %.0f µs a page + %.1f µs an outbox, %.0f µs a write; worker %.2f µs a delivery, %.0f µs a job\n",
		k.Source, k.RedisUsPerDelivery, k.RedisUsPerPage, k.RedisUsPerPull, k.APIUsPerPage, k.APIUsPerPull, k.APIUsPerWrite, k.WorkerUsPerDelivery, k.WorkerUsPerJob)
	fmt.Fprintf(&b, "  PostgreSQL: %.1f rows a post, %.1f a batch job, %.1f a follow, %.1f statements a page; Redis bytes of a full inbox %.0f, of a full outbox %.0f\n",
		k.PGRowsPerPost, k.PGRowsPerBatchJob, k.PGRowsPerFollow, k.PGQueriesPerPage, k.InboxBytes[len(k.InboxBytes)-1].Bytes, k.OutboxBytes[len(k.OutboxBytes)-1].Bytes)
	row := func(label string, f func(CapacityRun) string, runs []CapacityRun) {
		fmt.Fprintf(&b, "%-34s", label)
		for _, run := range runs {
			fmt.Fprintf(&b, " %14s", f(run))
		}
		b.WriteString("\n")
	}
	table := func(runs []CapacityRun, head func(CapacityRun) string) {
		row("", head, runs)
		row("follows", func(x CapacityRun) string { return si(float64(x.Edges)) }, runs)
		row("pull-mode authors (share of follows)", func(x CapacityRun) string {
			return fmt.Sprintf("%d (%.0f%%)", x.PullAuthors, 100*x.PullEdgeShare)
		}, runs)
		row("deliveries/s, day / peak hour", func(x CapacityRun) string {
			return si(x.Day.DeliveriesPerS) + " / " + si(x.PeakHour.DeliveriesPerS)
		}, runs)
		row("pages/s, day / peak hour", func(x CapacityRun) string { return si(x.Day.PagesPerS) + " / " + si(x.PeakHour.PagesPerS) }, runs)
		row("pull reads a page, mean / p99", func(x CapacityRun) string {
			return fmt.Sprintf("%.1f / %d", x.Day.PullReadsPerPage, x.PullsPerPageP99)
		}, runs)
		row("Redis memory", func(x CapacityRun) string { return si(x.RedisBytes) + "B" }, runs)
		row("Redis cores, peak", func(x CapacityRun) string { return fmt.Sprintf("%.3g", x.PeakHour.RedisCores) }, runs)
		row("API cores, peak", func(x CapacityRun) string { return fmt.Sprintf("%.3g", x.PeakHour.APICores) }, runs)
		row("worker cores (processes), peak", func(x CapacityRun) string {
			return fmt.Sprintf("%.3g (%d)", x.PeakHour.WorkerCores, x.PeakHour.WorkerProcesses)
		}, runs)
		row("PostgreSQL rows written/s, peak", func(x CapacityRun) string { return si(x.PeakHour.PGWritesPerS) }, runs)
		row("PostgreSQL statements/s, peak", func(x CapacityRun) string { return si(x.PeakHour.PGReadsPerS) }, runs)
		row("core equivalents (+GB/4)", func(x CapacityRun) string { return fmt.Sprintf("%.3g", x.CoreEquivalents) }, runs)
		row("simulated in (load)", func(x CapacityRun) string {
			return fmt.Sprintf("%.0fs+%.0fs (%s)", x.GraphSeconds, x.SimSeconds, strings.Fields(x.Load + " ?")[0])
		}, runs)
	}
	fmt.Fprintf(&b, "\nsimulation: %.3g days after %d days of warm-up, --pull-threshold %d\n", r.Inputs.Days, r.Inputs.WarmupDays, r.Inputs.Settings.PullThreshold)
	table(r.Runs, func(x CapacityRun) string { return si(float64(x.Users)) + " users" })
	if len(r.Growth) > 0 {
		fmt.Fprintf(&b, "\ngrowth (figure = a·users^b, fitted on the runs above)\n%-28s %8s", "", "b")
		for _, n := range r.Plan {
			fmt.Fprintf(&b, " %12s", si(float64(n)))
		}
		b.WriteString("\n")
		for _, g := range r.Growth {
			fmt.Fprintf(&b, "%-28s %8.2f", g.Name, g.Exponent)
			for _, p := range g.Planned {
				fmt.Fprintf(&b, " %12s", si(p))
			}
			b.WriteString("\n")
		}
	}
	if len(r.Sweep) > 0 {
		fmt.Fprintf(&b, "\n--pull-threshold sweep at %d users: core equivalents at the peak hour (cores + Redis GB/%.0f)\n%-14s", r.Sweep[0].Users, capacity.GBPerCore, "threshold")
		var ratios []float64
		for _, s := range r.Sweep {
			if len(ratios) == 0 || ratios[len(ratios)-1] != s.ReadRatio {
				ratios = append(ratios, s.ReadRatio)
			}
		}
		for _, x := range ratios {
			fmt.Fprintf(&b, " %22s", fmt.Sprintf("reads x%g", x))
		}
		b.WriteString("\n")
		per := len(r.Sweep) / len(ratios)
		for i := range per {
			fmt.Fprintf(&b, "%-14d", r.Sweep[i].PullThreshold)
			for j := range ratios {
				s := r.Sweep[j*per+i]
				fmt.Fprintf(&b, " %22s", fmt.Sprintf("%.3g (%.1f pulls, %sB)", s.CoreEquivalents, s.Day.PullReadsPerPage, si(s.RedisBytes)))
			}
			b.WriteString("\n")
		}
		for _, x := range ratios {
			fmt.Fprintf(&b, "cheapest at reads x%g: --pull-threshold %d\n", x, r.Best[fmt.Sprint(x)])
		}
	}
	if r.Check != nil {
		b.WriteString("\n" + r.Check.Text())
	}
	return b.String()
}

// si writes x with an SI suffix and three significant digits.
func si(x float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if x >= u.f {
			return fmt.Sprintf("%.3g%s", x/u.f, u.s)
		}
	}
	return fmt.Sprintf("%.3g", x)
}
