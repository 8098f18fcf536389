package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/bench"
)

// benchFlags are the flags of feedd bench on top of serve's.
type benchFlags struct {
	json         bool
	runs         int
	followers    int
	users        int
	follows      int
	posts        int
	repostShare  float64
	concurrency  int
	duration     time.Duration
	publishes    int
	interval     time.Duration
	inboxes      int
	timeout      time.Duration
	cpuProfile   string
	streams      int
	apart        bool
	events       bool
	rate         float64
	pubShare     float64
	maxInFlight  int
	workersApart bool
	sampleEvery  time.Duration
	soakWindow   time.Duration
	rank         bench.RankOptions
	notify       bench.NotifyOptions
	push         bench.PushOptions
	comments     bench.CommentsOptions
	server       bench.ServerOptions
	media        bench.MediaOptions
	mysql        string // import: the MySQL server
	hmdpRedis    string // import: the tutorial's Redis, for likes
	likes        int    // import: likes per post
	hmdpComments int    // import: comments per post
	capacity     capacityFlags
}

// newBenchFlagSet declares serve's flags and the benchmark's. explicit
// reports which flags the command line set; the error is newFlagSet's.
func newBenchFlagSet(sub string, c *config, bf *benchFlags, getenv func(string) string, out io.Writer) (*flag.FlagSet, func(*flag.FlagSet) map[string]bool, error) {
	fs, envErr := newFlagSet("bench "+sub, c, getenv, out)
	fs.Init("feedd bench "+sub, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(out, benchUsage)
		fs.PrintDefaults()
	}
	// A benchmark's own log is noise unless something goes wrong.
	if getenv("FEED_LOG_LEVEL") == "" {
		fs.Set("log-level", "warn")
		fs.Lookup("log-level").DefValue = "warn"
	}
	fs.Lookup("data").Usage = "directory in which the benchmark makes its temporary SQLite database (default: the system's temp dir)"
	fs.Lookup("data").DefValue = ""
	fs.BoolVar(&bf.json, "json", false, "print one JSON object")
	fs.IntVar(&bf.runs, "runs", 1, "measurements of each kind; medians are printed")
	fs.IntVar(&bf.followers, "followers", 100_000, "fanout, publish: followers of the author")
	fs.IntVar(&bf.users, "users", 3000, "read, mixed: users of the synthetic graph (mixed: 100 unless given); writes: users set up in each run (10000 unless given); capacity: users simulated (100000 unless given)")
	fs.IntVar(&bf.follows, "follows", 20, "read, mixed: users each user follows")
	fs.IntVar(&bf.posts, "posts", 3, "read: posts each user publishes")
	fs.Float64Var(&bf.repostShare, "repost-share", 0, "read: also measure feedd on a second graph of the same shape in which this share of each user's --posts are reposts (0: none)")
	fs.IntVar(&bf.concurrency, "concurrency", 64, "read, writes: concurrent clients (writes: 32 unless given)")
	fs.DurationVar(&bf.duration, "duration", 10*time.Second, "read: how long each path is measured, per run; mixed: how long arrivals are scheduled; writes: how long likes and follows are each measured, per run; media: how long previews are read from each server")
	fs.IntVar(&bf.publishes, "publishes", 100, "publish: posts each author publishes; stream: posts of each latency phase")
	fs.BoolVar(&bf.events, "events", true, "fanout: publish live timeline events, with this process subscribed as an API process would be (false: the baseline without streams)")
	fs.IntVar(&bf.streams, "streams", 10_000, "stream: idle streams held open at once")
	fs.BoolVar(&bf.apart, "clients-apart", true, "stream: hold the idle streams' client ends in a child process, so that only the server's memory is measured")
	fs.DurationVar(&bf.interval, "interval", 20*time.Millisecond, "publish, stream: pause between two publishes (stream: open loop, 20ms is 50 posts/s)")
	fs.Float64Var(&bf.rate, "rate", 500, "mixed: arrivals per second (open loop: sent whatever the server does)")
	fs.Float64Var(&bf.pubShare, "publish-share", 0.06, "mixed: share of publishes in the mix (feed reads take the rest of 80%+6%)")
	fs.IntVar(&bf.maxInFlight, "max-inflight", 512, "mixed: most requests outstanding; an arrival finding this many is not sent (counted unsent)")
	fs.BoolVar(&bf.workersApart, "apart", false, "mixed, stream: the workers apart, as 'feedd serve --workers 0' plus 'feedd worker': a River client that only inserts and another that works the jobs (needs --database-url)")
	fs.DurationVar(&bf.sampleEvery, "sample-every", 0, "mixed: sample memory, goroutines, open descriptors, pool connections, job rows, table sizes and each operation's p99 this often (in --json: samples); 0: never")
	fs.DurationVar(&bf.soakWindow, "soak-window", 5*time.Minute, "mixed, with --sample-every: the first and last windows compared (in --json: soak)")
	fs.IntVar(&bf.inboxes, "inboxes", 1000, "memory: inboxes filled to the cap")
	fs.StringVar(&bf.cpuProfile, "cpuprofile", "", "fanout, read, mixed, rank, writes, import, server, media: write a CPU profile (pprof) of feedd's part of the last run (mixed, writes: of the whole process, writes: of all runs; rank: of the page reads; import: of the import; server: of the follow batches; media: of the preview reads from feedd) to this file")
	fs.DurationVar(&bf.timeout, "timeout", 20*time.Minute, "the whole benchmark stops after this long (unless given: 20m, or --duration (read, writes: 2 × --runs × --duration) + 10m if longer; capacity: 3h)")
	fs.StringVar(&bf.mysql, "mysql", "", "import: DSN of a MySQL server (user:password@tcp(host:3306)/) on which the benchmark makes a database of its own, dropped afterwards (env FEED_BENCH_MYSQL)")
	if err := envDefault(fs, "mysql", "FEED_BENCH_MYSQL", getenv); err != nil {
		envErr = errors.Join(envErr, err)
	}
	fs.StringVar(&bf.hmdpRedis, "hmdp-redis", "", "import: redis:// URL of a Redis for the tutorial's likes, under a prefix of the run's own, deleted afterwards (empty: no likes)")
	fs.IntVar(&bf.likes, "likes", 5, "import: likes per post, on average")
	fs.IntVar(&bf.hmdpComments, "hmdp-comments", 3, "import: comments per post, on average (about half of them replies)")
	declareRankBenchFlags(fs, &bf.rank)
	declareNotifyBenchFlags(fs, &bf.notify)
	fs.IntVar(&bf.push.Groups, "push-groups", 1000, "push: notification groups opened per run, each pushed to every subscription (at most 1000, the groups a user keeps)")
	fs.IntVar(&bf.push.Subscriptions, "push-subscriptions", 2, fmt.Sprintf("push: push subscriptions of the author (1-%d)", feed.MaxPushSubscriptions))
	declareCommentsBenchFlags(fs, &bf.comments)
	declareServerBenchFlags(fs, &bf.server)
	declareMediaBenchFlags(fs, &bf.media)
	declareCapacityBenchFlags(fs, &bf.capacity)
	return fs, func(fs *flag.FlagSet) map[string]bool {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return set
	}, envErr
}

// benchSettings checks the flags of benchmark sub and sets the defaults
// that differ from serve's; set names the flags given.
func benchSettings(sub string, c *config, bf *benchFlags, set map[string]bool) error {
	c.synchronous = strings.ToUpper(c.synchronous)
	switch {
	case c.synchronous != "FULL" && c.synchronous != "NORMAL":
		return errors.New("--sqlite-synchronous must be FULL or NORMAL")
	case c.redisCluster != "":
		return errors.New("feedd bench runs against one Redis node: use --redis-url")
	case sub == "memory" && c.redisURL == "":
		return errors.New("feedd bench memory needs --redis-url")
	case c.workers < 1:
		return errors.New("feedd bench needs --workers of at least 1")
	case c.fanoutBatch < 1 || c.fanoutSplit < 1 || c.inboxCap < 1:
		return errors.New("--fanout-batch, --fanout-split and --inbox-cap must be at least 1")
	case c.pageSize < 1 || c.pageSize > feed.MaxPageSize:
		return fmt.Errorf("--page-size must be from 1 to %d", feed.MaxPageSize)
	case bf.runs < 1:
		return errors.New("--runs must be at least 1")
	case bf.workersApart && (sub != "mixed" && sub != "stream" || c.databaseURL == ""):
		return errors.New("--apart is for feedd bench mixed and stream with --database-url")
	}
	if sub == "mixed" && !set["users"] {
		bf.users = 100
	}
	if sub == "writes" {
		if !set["users"] {
			bf.users = 10_000
		}
		if !set["concurrency"] {
			bf.concurrency = 32
		}
		// One client address signs up every user: the login limits would
		// refuse it, and they are not what is measured.
		for name, l := range map[string]*feed.Limit{"code-limit-client": &c.limits.CodePerClient, "code-limit-total": &c.limits.CodeTotal,
			"code-limit-phone": &c.limits.CodePerPhone, "login-fail-limit-client": &c.limits.FailsPerClient} {
			if !set[name] {
				*l = feed.Limit{}
			}
		}
	}
	// A benchmark's few users write far more often than a person does (in
	// writes and mixed, back to back): the per-user write limits would
	// refuse them, and they are not what is measured.
	for name, l := range map[string]*feed.Limit{"post-limit-user": &c.writeLimits.Posts, "follow-limit-user": &c.writeLimits.Follows,
		"like-limit-user": &c.writeLimits.Likes, "comment-limit-user": &c.writeLimits.Comments,
		"repost-limit-user": &c.writeLimits.Reposts,

		"media-limit-user": &c.writeLimits.Media, "media-bytes-limit-user": &c.writeLimits.MediaBytes} {
		if !set[name] {
			*l = feed.Limit{}
		}
	}
	if sub == "server" && !set["server-limit-key"] {
		c.identity.serverLimit = feed.Limit{} // one key does all the work measured
	}
	if sub == "import" {
		if bf.mysql == "" {
			return errors.New("feedd bench import needs --mysql, a MySQL server to make the tutorial's database on")
		}
		if !set["users"] {
			bf.users = 100_000
		}
		if !set["posts"] {
			bf.posts = 2
		}
		importSettings(c, set)
	}
	if !set["pull-threshold"] && sub != "capacity" && sub != "import" {
		// The benchmarks measure push: fan-out to every follower. With the
		// default threshold an author this large would be in pull mode.
		// (capacity simulates the threshold: see capacitySettings; import
		// keeps serve's, as feedd import does.)
		c.pullAt = 0
	}
	if sub != "mixed" {
		// A benchmark measures its server's work, so it runs it without
		// load shedding, which would answer part of the benchmark's own
		// load with 503 (feedd bench mixed measures shedding: it counts
		// the 503s). Limits given on the command line apply.
		if !set["max-reads"] {
			c.maxReads = 0
		}
		if !set["max-writes"] {
			c.maxWrites = 0
		}
		if !set["max-lag"] {
			c.maxLag = 0
		}
	}
	if c.rescueAfter < c.jobTimeout {
		c.rescueAfter = c.jobTimeout
	}
	if err := c.parseRedisURL(); err != nil {
		return err
	}
	if err := c.checkMedia(); err != nil { // reads --media-s3-secret-key-file
		return err
	}
	if c.redisFailover != nil {
		return errors.New("feedd bench runs against one Redis node: use --redis-url without master_name")
	}
	if !set["timeout"] {
		bf.timeout = defaultBenchTimeout(sub, bf.timeout, bf.duration, bf.runs)
	}
	return nil
}

// defaultBenchTimeout is --timeout when it is not given: def, or longer when
// --duration and --runs ask for it, so that a 30-minute soak is not cut off
// at 20. read and writes measure two things a run for --duration each.
func defaultBenchTimeout(sub string, def, duration time.Duration, runs int) time.Duration {
	if sub == "capacity" {
		// 1M users at three sizes, or a sweep, takes longer than 20m.
		return max(def, 3*time.Hour)
	}
	need := duration
	if sub == "read" || sub == "writes" {
		need = 2 * time.Duration(max(runs, 1)) * duration
	}
	return max(def, need+10*time.Minute)
}
