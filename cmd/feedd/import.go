package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/hmdp"
)

// importFlags are feedd import hmdp's own flags; the store's are serve's.
type importFlags struct {
	mysql       string
	redis       string
	redisPrefix string
	keepFeeds   bool
	dryRun      bool
	strict      bool
	batch       int
	resync      string
	images      string
}

// importFlagSet is feedd import's flag set: serve's (the store it writes
// to) and its own.
func importFlagSet(c *config, f *importFlags, getenv func(string) string, out io.Writer) (*flag.FlagSet, error) {
	fs, envErr := newFlagSet("import", c, getenv, out)
	fs.Init("feedd import hmdp", flag.ContinueOnError)
	var errs []error
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, "", fmt.Sprintf("%s (env %s)", usage, env))
		if err := envDefault(fs, name, env, getenv); err != nil {
			errs = append(errs, err)
		}
	}
	str(&f.mysql, "mysql", "FEED_IMPORT_MYSQL", "the tutorial's MySQL database, as a DSN user:password@tcp(host:3306)/hmdp (required; give a password by environment, not on a command line)")
	str(&f.redis, "redis", "FEED_IMPORT_REDIS", "redis:// URL of the tutorial's Redis: likes from blog:liked:*, feeds from feed:* (empty: like counts only, no likers)")
	str(&f.redisPrefix, "redis-key-prefix", "FEED_IMPORT_REDIS_KEY_PREFIX", "prefix of the tutorial's Redis keys, if it used one")
	str(&f.images, "images", "FEED_IMPORT_IMAGES", "the tutorial's IMAGE_UPLOAD_DIR: the pictures its notes name (/imgs/blogs/...) are copied from it into feedd's image store under the same paths (empty: notes keep their paths, served by whatever served them)")
	fs.BoolVar(&f.keepFeeds, "keep-feeds", false, "fill each inbox from the tutorial's feed:{userId} (needs --redis) instead of building it from the follows")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read the whole source and report what would come over into an empty store; write nothing")
	fs.BoolVar(&f.strict, "strict", false, "exit with status 1 when any row was skipped")
	fs.StringVar(&f.resync, "resync", "", "likes: read every post's likes again, for those added in the tutorial to posts an earlier run imported (a run reads the likes of the posts it brings only; needs --redis)")
	fs.IntVar(&f.batch, "batch", hmdp.DefaultBatch, "source rows read and written per batch, one transaction each (users, posts, likes and comments: at most 20000)")
	if getenv("FEED_LOG_LEVEL") == "" {
		// Progress and the report are the output; River's info lines are noise.
		fs.Set("log-level", "warn")
		fs.Lookup("log-level").DefValue = "warn"
	}
	return fs, errors.Join(append([]error{envErr}, errs...)...)
}

const importUsage = `feedd import hmdp: import a running instance of the tutorial's service
(its MySQL database, and its Redis for likes and feeds) into the store feedd
is configured with (--data, or --database-url and --redis-url), keeping its
ids. It only reads the source, in primary-key order and bounded batches, and
may be run again: it resumes where it stopped and imports only what is
missing. docs/operations.md, "Moving from hmdp", has the steps of a move.

Usage:
  feedd import hmdp --mysql DSN [--redis URL] [--keep-feeds] [--resync likes] [--dry-run] [--strict] [flags]

Flags:
`

// runImport is feedd import.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "hmdp" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, importUsage)
			return nil
		}
		return errors.New("feedd import needs a source: feedd import hmdp --mysql DSN (see feedd import --help)")
	}
	c, f := &config{cmd: "import"}, &importFlags{}
	fs, envErr := importFlagSet(c, f, getenv, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, importUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if envErr != nil {
		return envErr
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.mysql == "":
		return errors.New("feedd import hmdp needs --mysql (or FEED_IMPORT_MYSQL): the tutorial's database, user:password@tcp(host:3306)/hmdp")
	case f.keepFeeds && f.redis == "":
		return errors.New("--keep-feeds reads the tutorial's feed:* sets: give its Redis with --redis")
	case f.resync != "" && f.resync != "likes":
		return fmt.Errorf("--resync %q: only likes can be read again (--resync likes)", f.resync)
	case f.resync != "" && f.redis == "":
		return errors.New("--resync likes reads the tutorial's blog:liked:* sets: give its Redis with --redis")
	case f.batch < 1 || f.batch > 1_000_000:
		return errors.New("--batch must be from 1 to 1000000")
	case c.inboxCap < 1 || c.backfill < 0 || c.pullAt < 0:
		return errors.New("--inbox-cap must be at least 1, --backfill and --pull-threshold not negative")
	case c.redisURL != "" && c.redisCluster != "":
		return errors.New("set --redis-url or --redis-cluster, not both")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if getenv("FEED_SQLITE_SYNCHRONOUS") != "" {
		set["sqlite-synchronous"] = true
	}
	importSettings(c, set)
	if c.synchronous != "FULL" && c.synchronous != "NORMAL" {
		return errors.New("--sqlite-synchronous must be FULL or NORMAL")
	}
	if err := c.parseRedisURL(); err != nil {
		return err
	}
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}

	src, closeSrc, err := openHMDP(ctx, f)
	if err != nil {
		return err
	}
	defer closeSrc()
	opts := hmdp.Options{KeepFeeds: f.keepFeeds, ResyncLikes: f.resync == "likes", Batch: f.batch, Backfill: c.backfill, InboxCap: c.inboxCap, PullThreshold: c.pullAt,
		Log: log, Progress: stderr, Now: clock, ImagesDir: f.images}
	where := "dry run"
	if !f.dryRun {
		c.workers = 0 // the import writes the store itself; no job is worked
		a, err := openApp(ctx, c, log)
		if err != nil {
			return err
		}
		defer a.close()
		st, ok := a.service.Posts.(feed.ImportStore)
		if !ok {
			return errors.New("this store cannot import")
		}
		opts.Store, opts.Inbox, opts.Outbox = st, a.service.Inbox, a.service.Outbox
		if f.images != "" {
			opts.Images = a.service
		}
		where = "SQLite in " + c.dataDir
		if c.databaseURL != "" {
			where = "PostgreSQL"
		}
		if c.redisConfigured() {
			where += ", inboxes in Redis"
		}
	}
	log.Info("importing", "source", describeDSN(f.mysql), "redis", f.redis != "", "into", where)
	rep, err := hmdp.Run(ctx, src, opts)
	if rep != nil && err == nil {
		fmt.Fprint(stdout, rep.Text())
	}
	if err != nil {
		return fmt.Errorf("import hmdp: %w (run it again to resume)", err)
	}
	if n := rep.Skipped(); n > 0 && f.strict {
		return fmt.Errorf("%d rows were skipped (--strict); the report above gives the reasons", n)
	}
	return nil
}

// importSettings are the store's settings for a bulk import (feedd import,
// feedd bench import); set names the flags given. Each batch is committed
// with its checkpoint, so a power loss can only lose the last batches,
// which a run resumed redoes: the import writes with synchronous=NORMAL
// unless --sqlite-synchronous says otherwise, and its SQLite writer is
// tuned for a bulk load (sqlite.Options.Bulk).
func importSettings(c *config, set map[string]bool) {
	c.synchronous = strings.ToUpper(c.synchronous)
	if !set["sqlite-synchronous"] {
		c.synchronous = "NORMAL"
	}
	c.sqliteBulk = true
}

// openHMDP connects to the tutorial's MySQL database and, when given, its
// Redis. The pool is small: the import reads one batch at a time, plus
// the count of each table.
func openHMDP(ctx context.Context, f *importFlags) (*hmdp.Source, func(), error) {
	cfg, err := mysql.ParseDSN(f.mysql)
	if err != nil {
		return nil, nil, fmt.Errorf("--mysql: %w", err)
	}
	if cfg.DBName == "" {
		return nil, nil, errors.New("--mysql names no database: user:password@tcp(host:3306)/hmdp")
	}
	cfg.ParseTime = false
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("connect to the tutorial's MySQL at %s: %w", describeDSN(f.mysql), err)
	}
	src := &hmdp.Source{MySQL: db, Prefix: f.redisPrefix}
	closers := []func() error{db.Close}
	if f.redis != "" {
		opts, err := goredis.ParseURL(f.redis)
		if err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("--redis: %w", err)
		}
		rdb := goredis.NewClient(opts)
		if err := rdb.Ping(ctx).Err(); err != nil {
			rdb.Close()
			db.Close()
			return nil, nil, fmt.Errorf("connect to the tutorial's Redis: %w", err)
		}
		src.Redis = rdb
		closers = append(closers, rdb.Close)
	}
	return src, func() {
		for _, c := range closers {
			c()
		}
	}, nil
}

// describeDSN names a MySQL DSN's server and database, without its
// credentials, for logs and errors.
func describeDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return cfg.Addr + "/" + cfg.DBName
}
