package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/feedd/feedd/internal/bench"
)

// A benchStep is one benchmark of feedd bench: what it needs wired and the
// function that runs it once runBench has read the flags and wired it.
type benchStep struct {
	name string
	// prepare, if set, runs once the flags are read, before anything is
	// wired; done ends the run there.
	prepare func(ctx context.Context, r *benchRun) (done bool, err error)
	// redisOnly: the step needs Redis alone, no database and no feedd.
	redisOnly bool
	// pushService: a push service on loopback, wired as Web Push's.
	pushService bool
	// subscribe: with --events, the run subscribes to every event, as an
	// API process does.
	subscribe bool
	// run runs the benchmark: out is printed with --json, text without;
	// a nil out for a step that writes its own output.
	run func(ctx context.Context, r *benchRun) (out any, text string, err error)
}

// benchRun is what runBench hands a step: the flags as read, and the
// environment wired for it.
type benchRun struct {
	c              *config
	bf             *benchFlags
	set            map[string]bool // the flags given
	tag            string          // the run's own, in its keys' and databases' names
	env            *bench.Env
	capacity       bench.CapacityOptions
	stdout, stderr io.Writer
	closers        []func()
}

// atClose has close call f, after whatever is added after f.
func (r *benchRun) atClose(f func()) { r.closers = append(r.closers, f) }

// close undoes the wiring, the last of it first.
func (r *benchRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// benchSteps are the benchmarks, in the order the usage lists them.
var benchSteps = []benchStep{
	{name: "fanout", run: benchFanout, subscribe: true},
	{name: "read", run: benchRead},
	{name: "publish", run: benchPublish},
	{name: "memory", run: benchMemory, redisOnly: true},
	{name: "stream", run: benchStream},
	{name: "mixed", run: benchMixed},
	{name: "rank", run: benchRank},
	{name: "writes", run: benchWrites},
	{name: "notify", run: benchNotify},
	{name: "push", run: benchPush, pushService: true},
	{name: "comments", run: benchComments},
	{name: "server", run: benchServer},
	{name: "capacity", prepare: prepareCapacity, run: benchCapacity},
	{name: "import", run: benchImportStep},
	{name: "media", run: benchMedia},
}

func findBenchStep(name string) (benchStep, bool) {
	for _, s := range benchSteps {
		if s.name == name {
			return s, true
		}
	}
	return benchStep{}, false
}

// benchNames lists the benchmarks: "fanout, read, ... or media".
func benchNames() string {
	names := make([]string, len(benchSteps))
	for i, s := range benchSteps {
		names[i] = s.name
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

func benchFanout(ctx context.Context, r *benchRun) (any, string, error) {
	bf := r.bf
	res, err := bench.Fanout(ctx, r.env, bench.FanoutOptions{Followers: bf.followers, Runs: bf.runs, CPUProfile: bf.cpuProfile})
	if err != nil {
		return nil, "", err
	}
	seed, limit := "one ZADD per follower, each awaited, one connection", "the same ZADDs pipelined, 4 connections, no application logic"
	if res.Backend != "redis" {
		seed, limit = "one INSERT per follower, each its own statement", "the same rows in bulk INSERT ... SELECT statements"
	}
	text := fmt.Sprintf("fan-out of one post to %d followers, inboxes in %s (median of %d runs)\n"+
		"  seed   %12.0f deliveries/s   (the tutorial's loop: %s)\n"+
		"  feedd  %12.0f deliveries/s   (publish until the last inbox holds the post: %.3f s)\n"+
		"  repost %12.0f deliveries/s   (a repost by the same author until the last inbox holds it: %.3f s)\n"+
		"  limit  %12.0f deliveries/s   (%s)\n"+
		"  feedd/seed %.1fx, feedd/limit %.2f, repost/post %.3f\n",
		res.Followers, res.Backend, len(res.Runs), res.SeedPerS, seed, res.FeeddPerS, res.FeeddSeconds, res.RepostPerS, res.RepostSeconds, res.LimitPerS, limit,
		res.FeeddPerS/res.SeedPerS, res.FeeddPerS/res.LimitPerS, res.RepostRatio)
	return res, text, nil
}

func benchRead(ctx context.Context, r *benchRun) (any, string, error) {
	bf := r.bf
	res, err := bench.Read(ctx, r.env, bench.ReadOptions{
		Users: bf.users, Follows: bf.follows, Posts: bf.posts, Concurrency: bf.concurrency,
		Duration: bf.duration, Runs: bf.runs, PageSize: r.c.pageSize, CPUProfile: bf.cpuProfile, RepostShare: bf.repostShare,
	})
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchPublish(ctx context.Context, r *benchRun) (any, string, error) {
	res, err := bench.Publish(ctx, r.env, bench.PublishOptions{
		Followers: r.bf.followers, Publishes: r.bf.publishes, Interval: r.bf.interval,
	})
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchMemory(ctx context.Context, r *benchRun) (any, string, error) {
	res, err := bench.Memory(ctx, r.env.Redis, bench.MemoryOptions{
		Prefix: r.c.redisPrefix, Inboxes: r.bf.inboxes, Cap: r.c.inboxCap, Progress: r.stderr,
	})
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchStream(ctx context.Context, r *benchRun) (any, string, error) {
	bf := r.bf
	opt := bench.StreamOptions{Streams: bf.streams, PerUser: r.c.streamUser, Publishes: bf.publishes, Interval: bf.interval, WorkersApart: bf.workersApart}
	if bf.apart {
		opt.Hold = holdStreamsApart
	}
	res, err := bench.Stream(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchMixed(ctx context.Context, r *benchRun) (any, string, error) {
	bf := r.bf
	res, err := bench.Mixed(ctx, r.env, bench.MixedOptions{
		Users: bf.users, Follows: bf.follows, Rate: bf.rate, Duration: bf.duration,
		PublishShare: bf.pubShare, MaxInFlight: bf.maxInFlight, CPUProfile: bf.cpuProfile,
		SampleEvery: bf.sampleEvery, SoakWindow: bf.soakWindow,
	})
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchRank(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.rank
	opt.CPUProfile = r.bf.cpuProfile
	res, err := bench.Rank(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchWrites(ctx context.Context, r *benchRun) (any, string, error) {
	bf := r.bf
	sync := ""
	if r.c.databaseURL == "" {
		sync = r.c.synchronous
	}
	res, err := bench.Writes(ctx, r.env, bench.WritesOptions{
		Users: bf.users, Clients: bf.concurrency, Duration: bf.duration, Runs: bf.runs, Synchronous: sync, CPUProfile: bf.cpuProfile,
	})
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchNotify(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.notify
	opt.Runs, opt.SetNotify = r.bf.runs, notifySwitch(r.env.Service.Posts) // --notify, switched within the run
	res, err := bench.Notify(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchPush(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.push
	opt.Runs = r.bf.runs
	res, err := bench.Push(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchComments(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.comments
	opt.Runs = r.bf.runs
	res, err := bench.Comments(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchServer(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.server
	opt.Runs, opt.CPUProfile = r.bf.runs, r.bf.cpuProfile
	if r.set["concurrency"] {
		opt.Concurrency = r.bf.concurrency
	}
	res, err := bench.Server(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchMedia(ctx context.Context, r *benchRun) (any, string, error) {
	opt := r.bf.media
	opt.Duration, opt.CPUProfile = r.bf.duration, r.bf.cpuProfile
	res, err := bench.Media(ctx, r.env, opt)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

func benchImportStep(ctx context.Context, r *benchRun) (any, string, error) {
	res, err := benchImport(ctx, r.c, r.bf, r.env, r.tag)
	if err != nil {
		return nil, "", err
	}
	return res, res.Text(), nil
}

// prepareCapacity reads capacity's flags and, when --costs spares the
// servers, runs the simulation alone.
func prepareCapacity(ctx context.Context, r *benchRun) (bool, error) {
	var err error
	if r.capacity, err = capacitySettings(r.c, r.bf, r.set); err != nil {
		return true, err
	}
	if r.bf.capacity.needsServer() {
		return false, nil
	}
	fmt.Fprintf(r.stderr, "load average at start: %s\n", loadAverage())
	defer func() { fmt.Fprintf(r.stderr, "load average at end: %s\n", loadAverage()) }()
	return true, runCapacity(ctx, nil, r.bf, r.capacity, r.stdout, r.stderr)
}

// benchCapacity measures the costs on the wired servers and prints the
// plan itself.
func benchCapacity(ctx context.Context, r *benchRun) (any, string, error) {
	return nil, "", runCapacity(ctx, r.env, r.bf, r.capacity, r.stdout, r.stderr)
}
