package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/bench"
	"github.com/feedd/feedd/internal/capacity"
)

// capacityFlags are feedd bench capacity's own flags: the graph and the
// activity model (docs/scaling.md), and what to run.
type capacityFlags struct {
	graph           string
	followsMean     float64
	followsSigma    float64
	maxFollows      int
	zipf            float64
	days            float64
	warmupDays      int
	dailyActive     float64
	pagesPerVisit   float64
	postsPerVisit   float64
	postsSigma      float64
	followsPerVisit float64
	diurnal         float64
	seed            uint64
	costs           string
	sizes           string
	plan            string
	sweep           string
	sweepReads      string
	check           bool
}

func declareCapacityBenchFlags(fs *flag.FlagSet, f *capacityFlags) {
	fs.StringVar(&f.graph, "graph", "zipf", "capacity: the follow graph: zipf (followees drawn by a power law of popularity) or uniform")
	fs.Float64Var(&f.followsMean, "follows-mean", 100, "capacity: mean number of users a user follows (log-normal counts)")
	fs.Float64Var(&f.followsSigma, "follows-sigma", 1, "capacity: sigma of the log-normal followee counts")
	fs.IntVar(&f.maxFollows, "max-follows", 5000, "capacity: most users one user follows")
	fs.Float64Var(&f.zipf, "zipf", 0.78, "capacity: exponent s of popularity by rank (r^-s); follower counts then follow a power law of exponent 1+1/s")
	fs.Float64Var(&f.days, "days", 1, "capacity: simulated days that are counted, after --warmup-days")
	fs.IntVar(&f.warmupDays, "warmup-days", 30, "capacity: simulated days before the counted ones, not counted (inboxes fill, users come and go)")
	fs.Float64Var(&f.dailyActive, "daily-active", 0.2, "capacity: mean daily visit probability of a user (each user's drawn from Beta(a,1))")
	fs.Float64Var(&f.pagesPerVisit, "pages-per-visit", 10, "capacity: mean feed pages a visit reads (log-normal)")
	fs.Float64Var(&f.postsPerVisit, "posts-per-visit", 2.5, "capacity: mean of the users' posting rates per visit (log-normal rates, Poisson posts)")
	fs.Float64Var(&f.postsSigma, "posts-sigma", 1.5, "capacity: sigma of the log-normal posting rates")
	fs.Float64Var(&f.followsPerVisit, "follows-per-visit", 0.1, "capacity: mean new follows a visit makes (Poisson, followee by popularity)")
	fs.Float64Var(&f.diurnal, "diurnal", 0.6, "capacity: amplitude of the daily cycle of visits (hour h weighs 1 + a·cos(2π(h-20)/24))")
	fs.Uint64Var(&f.seed, "sim-seed", 1, "capacity: random seed of the graph and the activity")
	fs.StringVar(&f.costs, "costs", "", "capacity: read the per-operation costs from this JSON file (an earlier run's --json output) instead of measuring them (which needs --redis-url and --database-url)")
	fs.StringVar(&f.sizes, "sizes", "", "capacity: comma-separated user counts to simulate, each figure's growth fitted over them and planned at --plan (empty: --users only)")
	fs.StringVar(&f.plan, "plan", "10000000,100000000", "capacity: comma-separated user counts the growth fitted over --sizes is planned at")
	fs.StringVar(&f.sweep, "sweep", "", "capacity: comma-separated --pull-threshold values simulated at the last size, the cheapest reported")
	fs.StringVar(&f.sweepReads, "sweep-reads", "1", "capacity: comma-separated multipliers of --pages-per-visit the sweep runs at")
	fs.BoolVar(&f.check, "check", false, "capacity: replay the simulated visits through the real server (needs --redis-url, --database-url and --costs) and compare")
}

// capacityNeedsServer reports whether the run wires feedd: to measure the
// costs, or to check against the real server.
func (f *capacityFlags) needsServer() bool { return f.costs == "" || f.check }

func intList(name, s string) ([]int, error) {
	var out []int
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--%s: %q is not a count", name, x)
		}
		out = append(out, n)
	}
	return out, nil
}

func floatList(name, s string) ([]float64, error) {
	var out []float64
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--%s: %q is not a positive number", name, x)
		}
		out = append(out, v)
	}
	return out, nil
}

// capacitySettings checks capacity's flags; pullAt is --pull-threshold as
// given or serve's default.
func capacitySettings(c *config, bf *benchFlags, set map[string]bool) (bench.CapacityOptions, error) {
	f := &bf.capacity
	var opt bench.CapacityOptions
	var err error
	if !set["users"] {
		bf.users = 100_000
	}
	if opt.Sizes, err = intList("sizes", f.sizes); err != nil {
		return opt, err
	}
	if len(opt.Sizes) == 0 {
		opt.Sizes = []int{bf.users}
	}
	if opt.Plan, err = intList("plan", f.plan); err != nil {
		return opt, err
	}
	if opt.Sweep, err = intList("sweep", f.sweep); err != nil {
		return opt, err
	}
	if opt.SweepReads, err = floatList("sweep-reads", f.sweepReads); err != nil {
		return opt, err
	}
	switch {
	case f.check && f.costs == "":
		return opt, errors.New("--check prices the simulation with --costs FILE (an earlier feedd bench capacity --json output)")
	case f.check && len(opt.Sizes) > 1:
		return opt, errors.New("--check runs at one size: give --users, not --sizes")
	case f.needsServer() && (c.redisURL == "" || c.databaseURL == ""):
		return opt, errors.New("feedd bench capacity measures its costs on --redis-url and --database-url; or give --costs FILE")
	case f.days <= 0 || f.warmupDays < 0:
		return opt, errors.New("--days must be positive and --warmup-days not negative")
	}
	opt.Graph = capacity.GraphOptions{Kind: f.graph, FollowsMean: f.followsMean, FollowsSigma: f.followsSigma, MaxFollows: f.maxFollows, ZipfS: f.zipf, Seed: f.seed}
	opt.Sim = capacity.Options{
		Settings: capacity.Settings{
			PullThreshold: c.pullAt, ActiveWindow: time.Duration(c.activeDays) * 24 * time.Hour,
			InboxCap: c.inboxCap, Backfill: c.backfill, SplitSize: c.fanoutSplit,
		},
		Activity: capacity.Activity{
			DailyActive: f.dailyActive, PagesPerVisit: f.pagesPerVisit, PostsPerVisit: f.postsPerVisit,
			PostsSigma: f.postsSigma, FollowsPerVisit: f.followsPerVisit, Diurnal: f.diurnal,
		},
		Days: f.days, WarmupDays: f.warmupDays, Seed: f.seed,
	}
	opt.Check = f.check
	opt.Load = loadAverage
	if !f.check && f.costs == "" {
		// The costs are measured on push fan-out: the world they build has
		// an author of 20,000 followers, whom the threshold would put in
		// pull mode. The simulation keeps the threshold given.
		c.pullAt = 0
	}
	return opt, nil
}

// runCapacity is feedd bench capacity once the flags are read: env is the
// wired server, or nil when --costs spares it.
func runCapacity(ctx context.Context, env *bench.Env, bf *benchFlags, opt bench.CapacityOptions, stdout, stderr io.Writer) error {
	var costs *capacity.Costs
	var err error
	if bf.capacity.costs != "" {
		costs, err = bench.ReadCosts(bf.capacity.costs)
	} else {
		costs, err = bench.MeasureCosts(ctx, env, bench.CostsOptions{})
	}
	if err != nil {
		return err
	}
	if env == nil {
		env = &bench.Env{Progress: stderr}
	}
	r, err := bench.Capacity(ctx, env, costs, opt)
	if err != nil {
		return err
	}
	if bf.json {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprint(stdout, r.Text())
	return nil
}
