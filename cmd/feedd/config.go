package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/fanout"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/internal/seed"
	"github.com/feedd/feedd/rank"
	"github.com/feedd/feedd/redis"
)

// config is everything feedd can be told. Only cmd/feedd reads flags and
// the environment.
type config struct {
	cmd          string
	addr         string
	dataDir      string
	logFormat    string
	logLevel     string
	workers      int
	pageSize     int
	pollInterval time.Duration
	jobTimeout   time.Duration
	rescueAfter  time.Duration
	jobRetention time.Duration
	fanoutBatch  int
	fanoutSplit  int
	databaseURL  string
	redisURL     string
	redisCluster string
	redisPrefix  string
	inboxCap     int
	inboxLayout  string
	pullAt       int
	activeDays   int
	backfill     int
	adminAddr    string // "off": no admin listener
	accessLog    bool
	streamUser   int
	streamMax    int
	seed         seed.Options // feedd seed's --users, --follows, --posts
	noEvents     bool         // feedd bench fanout --events=false: fan-out publishes no live events
	tracePosts   bool         // log each post's stages (docs/operations.md, "Tracing a post")

	// Abuse limits, code delivery and secrets (see abuse.go).
	limits         feed.LoginLimits
	trustedProxies string
	proxies        []netip.Prefix // parsed from trustedProxies
	codeSender     string
	webhookURL     string
	webhookSecret  string
	secret         string
	synchronous    string
	sqliteBulk     bool          // the writer tuned for a bulk load (feedd import; sqlite.Options.Bulk)
	maxReads       int           // shed.go
	maxWrites      int           // shed.go
	shedWait       time.Duration // shed.go
	maxLag         time.Duration // shed.go
	// The ranked timeline and the filters (rankflags.go).
	rank            rank.Settings
	rankSnapshots   string // auto, memory, database or redis
	reportThreshold int
	// Grouped notifications (notify.go).
	notifyOn bool
	notify   feed.NotifySettings
	// Web Push (push.go).
	push pushFlags

	// Reports and login codes against abuse by other users (docs/API.md,
	// "Reports"; docs/operations.md, "Login codes").
	reportMinAge time.Duration
	reportLimit  feed.Limit

	// The HTTP guards, per-user limits, admin token and secret files
	// (security.go).
	allowedOrigins    string
	origins           []string // parsed from allowedOrigins
	bodyTimeout       time.Duration
	bodyMemory        byteSize
	adminToken        string
	adminTokenFile    string
	secretFile        string
	webhookSecretFile string
	writeLimits       feed.WriteLimits
	args              []string // the command line, for the admin listener's redacted cmdline
	// Photos: where images live and the limits of uploads (media.go).
	media mediaConfig

	// An app's own users: its tokens, the server API, single sign-on
	// (identity.go).
	identity identityFlags

	// Parsed from redisURL by parseRedisURL: at most one is set.
	redisNode     *goredis.Options         // a single node
	redisFailover *goredis.FailoverOptions // Sentinels (?master_name=...)
}

// newFlagSet declares every flag with its FEED_* environment fallback. A
// variable that is set is the flag's default, parsed as the flag would
// parse it; the error names every malformed variable (nil if none). Help
// output shows the defaults in force, the environment's included.
func newFlagSet(cmd string, c *config, getenv func(string) string, out io.Writer) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("feedd "+cmd, flag.ContinueOnError)
	fs.SetOutput(out)
	var errs []error
	fromEnv := func(name, env string) {
		if err := envDefault(fs, name, env, getenv); err != nil {
			errs = append(errs, err)
		}
	}
	help := func(help, env string) string { return fmt.Sprintf("%s (env %s)", help, env) }
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	num := func(p *int, name, env string, def int, usage string) {
		fs.IntVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	str(&c.addr, "addr", "FEED_ADDR", "127.0.0.1:8081", "address the HTTP API listens on")
	str(&c.dataDir, "data", "FEED_DATA", "./data", "directory of the embedded SQLite files (feedd.db: users, posts, sessions, codes, jobs; inbox.db: the inboxes) and the generated secret, created if missing")
	str(&c.logFormat, "log-format", "FEED_LOG_FORMAT", "text", "log format: text or json")
	str(&c.logLevel, "log-level", "FEED_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	num(&c.workers, "workers", "FEED_WORKERS", 4, "post jobs worked at once by this process, and 8 times as many follow jobs (0: none)")
	num(&c.pageSize, "page-size", "FEED_PAGE_SIZE", feed.DefaultPageSize, fmt.Sprintf("default number of posts in a feed page (1-%d)", feed.MaxPageSize))
	dur(&c.pollInterval, "poll-interval", "FEED_POLL_INTERVAL", time.Second, "how often idle workers look for jobs and for cancels on SQLite (jobs this process commits or cancels reach its workers at once)")
	dur(&c.jobTimeout, "job-timeout", "FEED_JOB_TIMEOUT", 10*time.Second, "longest run of one fan-out job before it is cancelled and retried")
	dur(&c.rescueAfter, "rescue-after", "FEED_RESCUE_AFTER", 20*time.Second, "how long a job may stay running before it is taken as orphaned by a dead process and retried (at least --job-timeout)")
	dur(&c.jobRetention, "job-retention", "FEED_JOB_RETENTION", fanout.DefaultCompletedRetention, "how long completed fan-out jobs stay in the job table (and the job UI) before River's cleaner deletes them")
	str(&c.databaseURL, "database-url", "FEED_DATABASE_URL", "", "postgres:// URL of PostgreSQL, the source of truth (empty: SQLite in --data)")
	str(&c.redisURL, "redis-url", "FEED_REDIS_URL", "", "redis:// URL of a Redis node for inboxes, sessions and codes (empty: inboxes in the database); with ?master_name=NAME it names Sentinels (more with &addr=host:port)")
	str(&c.redisCluster, "redis-cluster", "FEED_REDIS_CLUSTER", "", "comma-separated seed addresses of a Redis Cluster (instead of --redis-url)")
	str(&c.redisPrefix, "redis-prefix", "FEED_REDIS_PREFIX", "", "prefix of every Redis key, to share one Redis between deployments")
	num(&c.inboxCap, "inbox-cap", "FEED_INBOX_CAP", feed.DefaultInboxCap, "entries kept in each inbox")
	str(&c.inboxLayout, "inbox-layout", "FEED_INBOX_LAYOUT", string(redis.LayoutPacked), "how Redis keeps an inbox: packed (a small sorted set plus a packed string, 7x less memory than zset; see BENCHMARKS.md) or zset (one sorted set)")
	num(&c.pullAt, "pull-threshold", "FEED_PULL_THRESHOLD", 10000, "authors with at least this many followers are not fanned out; readers merge their posts (0: never)")
	num(&c.activeDays, "active-days", "FEED_ACTIVE_DAYS", 30, "followers idle this many days are skipped by fan-out and regenerated on return (0: never skip)")
	num(&c.backfill, "backfill", "FEED_BACKFILL", feed.DefaultBackfill, "recent posts of a followed user copied into the follower's inbox (at most --inbox-cap)")
	adminDefault := "off" // a worker serves metrics only when asked to
	if cmd == "serve" {
		adminDefault = "127.0.0.1:8082"
	}
	str(&c.adminAddr, "admin-addr", "FEED_ADMIN_ADDR", adminDefault, "address of the admin listener (metrics, job dashboard, pprof); off: none")
	fs.BoolVar(&c.accessLog, "access-log", false, help("log one line per HTTP request (route, status, duration, user id)", "FEED_ACCESS_LOG"))
	fromEnv("access-log", "FEED_ACCESS_LOG")
	fs.BoolVar(&c.tracePosts, "trace-posts", false, help("log every post's way to live streams, one line per stage with its time: commit, job start, inbox writes, event publish, stream hydration and write", "FEED_TRACE_POSTS"))
	fromEnv("trace-posts", "FEED_TRACE_POSTS")
	num(&c.fanoutBatch, "fanout-batch", "FEED_FANOUT_BATCH", 1000, "followers written per inbox batch (one statement or pipeline)")
	num(&c.fanoutSplit, "fanout-split", "FEED_FANOUT_SPLIT", 10000, "most followers one fan-out job covers; larger audiences are split into jobs that all workers share")
	num(&c.streamUser, "stream-limit-user", "FEED_STREAM_LIMIT_USER", feedhttp.DefaultStreamsPerUser, "open live timeline streams (GET /v1/timeline/stream) one user may hold in this process")
	num(&c.streamMax, "stream-limit", "FEED_STREAM_LIMIT", feedhttp.DefaultStreams, "open live timeline streams this process holds")
	c.limits = feed.DefaultLoginLimits
	limit := func(p *feed.Limit, name, env, usage string) {
		fs.Var(p, name, help(usage+", written N/DURATION (0: off)", env))
		fromEnv(name, env)
	}
	limit(&c.limits.CodePerClient, "code-limit-client", "FEED_CODE_LIMIT_CLIENT", "login codes one client address may ask for")
	limit(&c.limits.CodeTotal, "code-limit-total", "FEED_CODE_LIMIT_TOTAL", "login codes sent in total")
	limit(&c.limits.CodePerPhone, "code-limit-phone", "FEED_CODE_LIMIT_PHONE", "login codes sent to one phone (besides one a minute)")
	limit(&c.limits.FailsPerClient, "login-fail-limit-client", "FEED_LOGIN_FAIL_LIMIT_CLIENT", "failed logins from one client address before its logins are refused")
	str(&c.trustedProxies, "trusted-proxies", "FEED_TRUSTED_PROXIES", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (the last address not in them)")
	str(&c.codeSender, "code-sender", "FEED_CODE_SENDER", "", "how login codes are sent: log or webhook (required with --database-url; default log on SQLite)")
	str(&c.webhookURL, "code-webhook-url", "FEED_CODE_WEBHOOK_URL", "", "URL the webhook code sender POSTs {phone, code, expires_at} to: https, or http to a loopback address; redirects are not followed")
	str(&c.webhookSecret, "code-webhook-secret", "FEED_CODE_WEBHOOK_SECRET", "", "key of the webhook's X-Feedd-Signature (HMAC-SHA256 of X-Feedd-Timestamp, \".\" and the body); give it by environment or --code-webhook-secret-file, never on a command line")
	str(&c.secret, "secret", "FEED_SECRET", "", "key of the stored login code hashes, shared by all processes (required with --database-url; on SQLite generated into --data); give it by environment or --secret-file, never on a command line")
	str(&c.synchronous, "sqlite-synchronous", "FEED_SQLITE_SYNCHRONOUS", "FULL", "SQLite synchronous level: FULL (an acknowledged write survives power loss) or NORMAL (faster; may lose the last writes)")
	num(&c.maxReads, "max-reads", "FEED_MAX_READS", defaultMaxReads, "most GET requests served at once; more wait up to --shed-wait, then get 503 (0: no limit)")
	num(&c.maxWrites, "max-writes", "FEED_MAX_WRITES", defaultMaxWrites, "most other requests served at once; more wait up to 10x --shed-wait, then get 503 (0: no limit)")
	dur(&c.shedWait, "shed-wait", "FEED_SHED_WAIT", defaultShedWait, "longest a GET waits for its turn before it is shed with 503 and Retry-After")
	dur(&c.maxLag, "max-lag", "FEED_MAX_LAG", defaultMaxLag, "fan-out lag (oldest new post not yet being delivered) above which a process that also works jobs tightens --max-reads and --max-writes until fan-out catches up (0: never)")
	declareRankFlags(fs, c, fromEnv, help)

	// Reports and login codes against abuse by other users.
	dur(&c.reportMinAge, "report-min-age", "FEED_REPORT_MIN_AGE", feed.DefaultReportMinAge, "reports count toward hiding a post only from accounts at least this old (0: any age)")
	c.reportLimit = feed.DefaultReportLimit
	limit(&c.reportLimit, "report-limit", "FEED_REPORT_LIMIT", "reports one user may file")
	limit(&c.limits.CodePerPhoneClient, "code-limit-phone-client", "FEED_CODE_LIMIT_PHONE_CLIENT", "login codes one client address may have sent to one phone")
	dur(&c.limits.CodeResendAfter, "code-resend-after", "FEED_CODE_RESEND_AFTER", feed.CodeResendAfter, "least time between two login codes of one phone, whoever asks for them (a burned code holds it too); sooner is refused with Retry-After")

	declareNotifyFlags(fs, c, fromEnv, help)
	declarePushFlags(fs, c, fromEnv, help)

	declareSecurityFlags(fs, c, fromEnv, help)
	declareIdentityFlags(fs, c, fromEnv, help)
	declareMediaFlags(fs, c, fromEnv, help)
	return fs, errors.Join(errs...)
}

// envDefault makes the value of the environment variable env, if set, the
// default of the flag name: parsed as the flag parses its argument, so a
// malformed value is an error that names the variable, like a malformed
// flag. The command line still overrides it.
func envDefault(fs *flag.FlagSet, name, env string, getenv func(string) string) error {
	v := getenv(env)
	if v == "" {
		return nil
	}
	f := fs.Lookup(name)
	if err := f.Value.Set(v); err != nil {
		return fmt.Errorf("invalid value %q for %s (--%s): %w", v, env, name, err)
	}
	f.DefValue = f.Value.String()
	return nil
}

// parseConfig returns nil, nil when only help was asked for.
func parseConfig(cmd string, args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{cmd: cmd, args: append([]string{"feedd", cmd}, args...)}
	var fs *flag.FlagSet
	var envErr error
	if cmd == "seed" {
		fs, envErr = seedFlagSet(c, getenv, stderr)
	} else {
		fs, envErr = newFlagSet(cmd, c, getenv, stderr)
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if envErr != nil {
		return nil, envErr
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.logFormat != "text" && c.logFormat != "json":
		return nil, fmt.Errorf("--log-format must be text or json")
	case c.workers < 0:
		return nil, fmt.Errorf("--workers must not be negative")
	case c.pageSize < 1 || c.pageSize > feed.MaxPageSize:
		return nil, fmt.Errorf("--page-size must be from 1 to %d", feed.MaxPageSize)
	case c.redisURL != "" && c.redisCluster != "":
		return nil, fmt.Errorf("set --redis-url or --redis-cluster, not both")
	case c.pullAt < 0 || c.activeDays < 0 || c.backfill < 0:
		return nil, fmt.Errorf("--pull-threshold, --active-days and --backfill must not be negative")
	case c.inboxCap < 1:
		return nil, fmt.Errorf("--inbox-cap must be at least 1")
	case c.fanoutBatch < 1 || c.fanoutSplit < 1:
		return nil, fmt.Errorf("--fanout-batch and --fanout-split must be at least 1")
	case c.streamUser < 1 || c.streamMax < 1:
		return nil, fmt.Errorf("--stream-limit-user and --stream-limit must be at least 1")
	case c.jobTimeout <= 0:
		return nil, fmt.Errorf("--job-timeout must be positive")
	case c.rescueAfter < c.jobTimeout:
		return nil, fmt.Errorf("--rescue-after must be at least --job-timeout")
	case c.jobRetention <= 0:
		return nil, fmt.Errorf("--job-retention must be positive")
	case c.adminAddr != "off" && !validHostPort(c.adminAddr):
		return nil, fmt.Errorf("--admin-addr must be host:port or off, not %q", c.adminAddr)
	case c.reportMinAge < 0:
		return nil, fmt.Errorf("--report-min-age must not be negative")
	case c.limits.CodeResendAfter <= 0:
		return nil, fmt.Errorf("--code-resend-after must be positive")
	case c.maxReads < 0 || c.maxWrites < 0 || c.shedWait < 0 || c.maxLag < 0:
		return nil, fmt.Errorf("--max-reads, --max-writes, --shed-wait and --max-lag must not be negative")
	}
	if _, err := redis.ParseLayout(c.inboxLayout); err != nil {
		return nil, fmt.Errorf("--inbox-layout: %w", err)
	}
	if err := c.validNotify(); err != nil {
		return nil, err
	}
	if err := c.validPush(); err != nil {
		return nil, err
	}
	if err := c.validRank(); err != nil {
		return nil, err
	}
	if err := c.parseRedisURL(); err != nil {
		return nil, err
	}
	if cmd == "seed" {
		if err := c.seed.Validate(); err != nil {
			return nil, err
		}
	}
	if err := c.checkSecurity(); err != nil {
		return nil, err
	}
	if err := c.checkIdentity(); err != nil {
		return nil, err
	}
	if err := c.checkAbuse(); err != nil {
		return nil, err
	}
	if err := c.checkMedia(); err != nil {
		return nil, err
	}
	if cmd == "worker" && c.workers == 0 {
		return nil, fmt.Errorf("feedd worker needs --workers of at least 1")
	}
	return c, nil
}

// parseRedisURL parses --redis-url, if set, into c.redisNode or, when it
// names Sentinels (a master_name parameter:
// redis://sentinel:26379?master_name=mymaster&addr=other:26379), into
// c.redisFailover.
func (c *config) parseRedisURL() error {
	c.redisNode, c.redisFailover = nil, nil
	if c.redisURL == "" {
		return nil
	}
	u, err := url.Parse(c.redisURL)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	if u.Query().Has("master_name") {
		c.redisFailover, err = goredis.ParseFailoverURL(c.redisURL)
	} else {
		c.redisNode, err = goredis.ParseURL(c.redisURL)
	}
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	return nil
}

// validHostPort reports whether addr is a listen address: host:port, the
// host possibly empty (all interfaces).
func validHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port != ""
}
