package fanout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"

	feed "github.com/feedd/feedd"
)

// DefaultCompletedRetention is Config.CompletedRetention's default. A
// completed fan-out job is of no use but to look at in the job UI; River's
// own default (a day) kept ~4 million rows at 50 jobs/s, every one in the
// indexes that each fetch and each insert touch.
const DefaultCompletedRetention = 10 * time.Minute

// fetchCooldown is River's FetchCooldown for every client (New).
const fetchCooldown = 2 * time.Millisecond

// QueueFollow is the queue of follow jobs (FollowArgs); post jobs use
// River's default queue. A follow's job is small (a few reads and one
// inbox write) and nobody waits on it to the millisecond, so its queue
// takes followWorkersPer jobs per worker and fetches at most every
// followFetchCooldown: a burst of follows (a sign-up wave, an import) is
// fetched in batches, instead of a fetch per job or two, which on SQLite
// is a write transaction each on the one writer that the API's writes
// wait for (BENCHMARKS.md, "Small writes (group commit)"). Posts keep
// their own workers and fetchCooldown, whatever the follows do.
const (
	QueueFollow         = "follow"
	followWorkersPer    = 8
	followFetchCooldown = 20 * time.Millisecond
)

// queueOf returns the River queue of a feed job.
func queueOf(j feed.Job) string {
	switch j.(type) {
	case feed.FollowJob:
		return QueueFollow
	case feed.PushJob:
		return QueuePush
	}
	return river.QueueDefault
}

// priorityOf returns the River priority of a feed job.
func priorityOf(j feed.Job) int {
	if _, ok := j.(feed.EraseJob); ok {
		return priorityErase
	}
	return priorityPost
}

// Config sets up the queue of one process.
type Config struct {
	// Workers is how many jobs this process works at once; 0 makes an
	// insert-only queue (an API process that leaves the work to others).
	Workers int
	// PollInterval is how often workers look for new jobs when the driver
	// has no notifications (SQLite). Zero keeps River's default.
	PollInterval time.Duration
	// JobTimeout bounds one job's run (default 1 minute).
	JobTimeout time.Duration
	// RescueAfter is how long a job may stay running before it is taken to
	// belong to a dead process and retried (default 2 minutes; at least
	// JobTimeout).
	RescueAfter time.Duration
	// CompletedRetention is how long a completed job stays in the job
	// table (River's CompletedJobRetentionPeriod; default
	// DefaultCompletedRetention). Cancelled jobs stay River's default of a
	// day, discarded ones 7 days: they are the ones an operator looks at.
	CompletedRetention time.Duration
	Log                *slog.Logger
	// Wake, on a driver without LISTEN/NOTIFY, wakes this process's
	// workers when this process commits jobs (wake.go); nil: they poll.
	Wake *Wake
	// InsertUnread inserts jobs without reading their rows back (River's
	// InsertManyFastTx). On SQLite that is the same INSERT without its
	// RETURNING, and the API's small writes that insert a job (a follow)
	// run faster on the one writer (BENCHMARKS.md, "Small writes (group
	// commit)"). On PostgreSQL it would be a COPY, a round trip more for
	// a single job: leave it false there.
	InsertUnread bool
	// MaxAttempts is how many times a job that fails (other than for an
	// inbox store outage, which snoozes it) is tried before it is
	// discarded and reported (default 25).
	MaxAttempts int
}

// Queue is feedd's River client for one database driver.
type Queue[TTx any] struct {
	Client *river.Client[TTx]
	log    *slog.Logger
	work   bool
	unread bool // Config.InsertUnread
}

// Migrate applies River's own schema migrations to the database of driver.
func Migrate[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// New returns a queue on driver whose workers use deps.
func New[TTx any](driver riverdriver.Driver[TTx], cfg Config, deps *Deps) (*Queue[TTx], error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if deps.Log == nil {
		deps.Log = log
	}
	if cfg.Wake != nil {
		driver = WithWake(driver, cfg.Wake, cfg.PollInterval)
		deps.wake = cfg.Wake
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &postWorker[TTx]{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &batchWorker{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &followWorker{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &pushWorker{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &eraseWorker{deps: deps}); err != nil {
		return nil, err
	}
	if deps.Media != nil {
		if err := river.AddWorkerSafely(workers, &mediaSweepWorker{deps: deps}); err != nil {
			return nil, err
		}
	}
	rc := &river.Config{
		Workers:      workers,
		Logger:       log.With("component", "river"),
		ErrorHandler: &errorHandler{log: log, observe: deps.Observe},
		MaxAttempts:  cmp.Or(max(cfg.MaxAttempts, 0), 25),
		JobTimeout:   cmp.Or(max(cfg.JobTimeout, 0), time.Minute),
	}
	rc.RescueStuckJobsAfter = max(cmp.Or(max(cfg.RescueAfter, 0), 2*time.Minute), rc.JobTimeout)
	// River's cleaner, run every 30 s by the elected leader among the
	// processes that work jobs, deletes completed jobs older than this.
	rc.CompletedJobRetentionPeriod = cmp.Or(max(cfg.CompletedRetention, 0), DefaultCompletedRetention)
	if driver.DatabaseName() == riverdriver.DatabaseNamePostgres {
		// River's reindexer rebuilds the job table's indexes (REINDEX
		// CONCURRENTLY, on the leader), by default once a day. A GIN index
		// never frees the pages of its entry tree, and every job's args
		// are new keys in river_job_args_index: it grew with every job
		// however few rows the cleaner left, a day's jobs before each
		// rebuild (docs/operations.md, "What may grow"; BENCHMARKS.md,
		// "Soak").
		// Hourly, a rebuild reads a table of --job-retention's completed
		// jobs plus the backlog; River cancels one that takes over a minute.
		rc.ReindexerSchedule = river.PeriodicInterval(time.Hour)
	}
	// FetchCooldown is two things in River. In a process that works jobs it
	// is the least time between two fetches: River fetches at most
	// MaxWorkers jobs per FetchCooldown, so its default (100 ms) held short
	// jobs to 10 per worker per second, which a burst of posts waits on
	// (feedd bench read fans out its posts before it reads). In every
	// client, one that only inserts too, it is the least time between two
	// NOTIFYs of new jobs: an insert within 100 ms of the last notified one
	// sent none, and its job waited for the next NOTIFY or the workers' 1 s
	// poll, so API processes apart from their workers (serve --workers 0)
	// delivered posts late and out of order (feedd bench stream --apart).
	// At 2 ms every post's commit wakes the workers (docs/operations.md,
	// "From a post to its followers' streams"; BENCHMARKS.md, "Freshness
	// (workers apart)").
	rc.FetchCooldown = fetchCooldown
	if cfg.Workers > 0 {
		followCooldown := followFetchCooldown
		if cfg.PollInterval > 0 {
			rc.FetchPollInterval = cfg.PollInterval
			followCooldown = min(followCooldown, cfg.PollInterval) // River wants cooldown <= poll
		}
		rc.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.Workers},
			QueueFollow:        {MaxWorkers: min(cfg.Workers*followWorkersPer, river.QueueNumWorkersMax), FetchCooldown: followCooldown},
			QueuePush:          {MaxWorkers: min(cfg.Workers*pushWorkersPer, river.QueueNumWorkersMax), FetchCooldown: followCooldown},
		}
	}
	if deps.Media != nil && cfg.Workers > 0 {
		rc.PeriodicJobs = append(rc.PeriodicJobs, mediaSweepJob(cmp.Or(max(deps.MediaSweepEvery, 0), 5*time.Minute)))
	}
	client, err := river.NewClient(driver, rc)
	if err != nil {
		return nil, err
	}
	return &Queue[TTx]{Client: client, log: log, work: cfg.Workers > 0, unread: cfg.InsertUnread}, nil
}

// Start starts working jobs (a no-op for an insert-only queue).
func (q *Queue[TTx]) Start(ctx context.Context) error {
	if !q.work {
		return nil
	}
	return q.Client.Start(ctx)
}

// Stop lets running jobs finish until ctx is done, then cancels them; a
// cancelled job is retried later from where its writes left off.
func (q *Queue[TTx]) Stop(ctx context.Context) error {
	if !q.work {
		return nil
	}
	err := q.Client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return q.Client.StopAndCancel(cctx)
	}
	return err
}

// EnqueueTx inserts the River jobs of feed jobs in tx. It is the stores'
// Enqueue hook.
func (q *Queue[TTx]) EnqueueTx(ctx context.Context, tx TTx, jobs ...feed.Job) error {
	params := make([]river.InsertManyParams, 0, len(jobs))
	for _, j := range jobs {
		args, err := argsOf(j)
		if err != nil {
			return err
		}
		params = append(params, river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{Priority: priorityOf(j), Queue: queueOf(j)}})
	}
	if len(params) == 0 {
		return nil
	}
	if q.unread {
		_, err := q.Client.InsertManyFastTx(ctx, tx, params)
		return err
	}
	_, err := q.Client.InsertManyTx(ctx, tx, params)
	return err
}

// argsOf returns the River job of a feed job. feed.Job is a closed set, so
// the error is only for a type added there and not here.
func argsOf(j feed.Job) (river.JobArgs, error) {
	switch j := j.(type) {
	case feed.FanoutJob:
		return PostArgs{Op: OpAdd, PostID: j.PostID, AuthorID: j.AuthorID, Score: j.Score}, nil
	case feed.RemoveJob:
		return PostArgs{Op: OpRemove, PostID: j.PostID, AuthorID: j.AuthorID, Score: j.Score}, nil
	case feed.FollowJob:
		return FollowArgs{FollowerID: j.FollowerID, FolloweeID: j.FolloweeID, Follow: j.Follow}, nil
	case feed.PushJob:
		return PushArgs{SubscriptionID: j.SubscriptionID, UserID: j.UserID, GroupID: j.GroupID}, nil
	case feed.EraseJob:
		return EraseArgs{ErasureID: j.ErasureID}, nil
	}
	return nil, fmt.Errorf("fanout: no River job for %T", j)
}
