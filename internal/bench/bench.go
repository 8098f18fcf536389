// Package bench measures feedd against the design it replaces and against the
// hardware it runs on: `feedd bench fanout`, `read`, `publish` and `memory`.
//
// Every measurement runs feedd's real code: the command wires the process
// exactly as `feedd serve` does (the same stores, inbox, River queue and
// workers, HTTP handler) and hands the result to this package as an Env.
// The "seed" figures are the tutorial design this service replaces, written
// faithfully on the same stores; the "limit" figures are what the inbox store
// takes with no application logic at all. All three run in one process, one
// after another, on the same data and the same servers, so their ratios hold
// even where absolute figures drift from run to run.
//
// A benchmark only touches data it made: users, posts and follows it loaded
// into a database of its own (a temporary SQLite file, or a temporary
// PostgreSQL database), and Redis keys under a prefix of its own, which it
// deletes afterwards.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// Env is a wired feedd process, as `feedd serve` builds it, plus what the
// benchmarks need around it.
type Env struct {
	// Service is feedd's service: publishes go through it.
	Service *feed.Service
	// Start and Stop start and stop the fan-out workers of this process.
	Start, Stop func(context.Context) error
	// Handler returns feedd's HTTP handler with extra routes mounted beside
	// the API (the seed read path).
	Handler func(extra map[string]http.Handler) http.Handler
	// Connected is the number of open timeline streams of Handler.
	Connected func() int64

	// Store loads data in bulk and checks inboxes, on the database the
	// service uses.
	Store Store
	// Redis is a client of the Redis node that holds the inboxes; nil when
	// the inboxes are in the database.
	Redis *goredis.Client
	// Prefix is the key prefix of the service's inboxes in Redis. It belongs
	// to the benchmark: everything under it is deleted afterwards.
	Prefix string
	// FanoutBatch is the service's --fanout-batch: followers per inbox write.
	FanoutBatch int
	// InboxCap is the service's --inbox-cap.
	InboxCap int
	// Layout is the service's --inbox-layout (Redis inboxes; "": the default).
	Layout redis.Layout

	// Gauges, when set, returns what the wired processes hold now, by name
	// (memory, goroutines, connections, job rows, table sizes), for the
	// samples of a long run.
	Gauges func(context.Context) (map[string]float64, error)

	// Jobs is the number of fan-out jobs not yet finished (waiting,
	// running or to be retried); nil where unknown.
	Jobs func(ctx context.Context) (int64, error)

	// Metric reads one of the wired process's metrics (metrics.Metrics.Value);
	// nil where there are none.
	Metric func(name string) (float64, error)

	// MediaDir is the directory of the image files (--media-dir); "" when
	// the images are in S3.
	MediaDir string

	// Progress receives progress lines (stderr); nil for none.
	Progress io.Writer
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// redisCPU is the Redis server's CPU time so far; 0 without Redis.
func (e *Env) redisCPU(ctx context.Context) time.Duration {
	if e.Redis == nil {
		return 0
	}
	return redisCPU(ctx, e.Redis)
}

// startCPUProfile writes a CPU profile of this process to path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// Backend names where the inboxes are, for reports.
func (e *Env) Backend() string {
	if e.Redis != nil {
		return "redis"
	}
	return e.Store.Engine()
}

// Store is the bulk side of a database: what a benchmark loads directly, and
// the checks it makes of the database inbox. Implementations: SQLiteStore,
// PostgresStore.
type Store interface {
	// Engine is "sqlite" or "postgres".
	Engine() string
	// CreateUsers inserts n users whose phones start with tag and returns
	// the id of the first; the ids are consecutive.
	CreateUsers(ctx context.Context, tag string, n int, progress func(done int)) (first int64, err error)
	// FollowRange makes the users first .. first+n-1 follow followee, and
	// keeps the users' counts in step.
	FollowRange(ctx context.Context, followee, first int64, n int, progress func(done int)) error
	// Follow inserts follows, each {follower, followee}; FixCounts must be
	// called afterwards.
	Follow(ctx context.Context, pairs [][2]int64) error
	// FixCounts recomputes the fans and followee counts of users first..last.
	FixCounts(ctx context.Context, first, last int64) error
	// LikeShare makes each user in first..last like the posts of the users
	// they follow whose id plus the user's id is a multiple of every, and
	// keeps the posts' like counts in step.
	LikeShare(ctx context.Context, first, last int64, every int) (int64, error)

	// InboxHolding counts the users among ids whose database inbox holds e.
	InboxHolding(ctx context.Context, e feed.Entry, ids []int64) (int, error)
	// InboxHoldingRange counts the users in first..last whose inbox holds e.
	InboxHoldingRange(ctx context.Context, e feed.Entry, first, last int64) (int, error)
	// InboxEntries counts the inbox entries of users first..last.
	InboxEntries(ctx context.Context, first, last int64) (int64, error)
	// InboxInsertOne writes e into one user's inbox: one statement, its own
	// transaction (the tutorial's loop, on the database).
	InboxInsertOne(ctx context.Context, e feed.Entry, userID int64) error
	// InboxInsertRange writes e into the inboxes of users first..first+n-1
	// in large statements, over several connections where the engine has
	// more than one writer: what the database takes.
	InboxInsertRange(ctx context.Context, e feed.Entry, first int64, n int) error
	// InboxDelete removes e from the inboxes of users first..last.
	InboxDelete(ctx context.Context, e feed.Entry, first, last int64) error

	Close() error
}

// ---- statistics

// Latencies is a set of measured durations.
type Latencies []time.Duration

// Quantile returns the q-quantile (0..1), nearest rank; 0 for none.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round keeps 3 significant decimals, for readable JSON.
func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// ---- progress

// progress writes a one-line progress bar to w, rewritten in place.
type progress struct {
	w     io.Writer
	label string
	total int
	start time.Time
	mu    sync.Mutex
	last  time.Time
	done  bool
	tty   bool // redraw in place; otherwise only the final line is written
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: total, start: time.Now(), tty: isTerminal(w)}
	p.set(0)
	return p
}

func (p *progress) set(done int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || (done < p.total && (!p.tty || time.Since(p.last) < 100*time.Millisecond)) {
		return
	}
	p.last = time.Now()
	done = min(done, p.total)
	const width = 30
	fill := width
	if p.total > 0 {
		fill = width * min(done, p.total) / p.total
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < fill {
			bar[i] = '='
		}
	}
	fmt.Fprintf(p.w, "\r%-28s [%s] %d/%d %5.1fs", p.label, bar, done, p.total, time.Since(p.start).Seconds())
	if done >= p.total {
		fmt.Fprintln(p.w)
		p.done = true
	}
}

// finish completes the line even if the total was not reached.
func (p *progress) finish() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		if !p.tty {
			fmt.Fprintf(p.w, "%-28s stopped at %.1fs", p.label, time.Since(p.start).Seconds())
		}
		fmt.Fprintln(p.w)
		p.done = true
	}
}

func (e *Env) logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// poll calls check every interval until it reports done, ctx ends or the
// timeout passes.
func poll(ctx context.Context, interval, timeout time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// benchPost is the content of every post a benchmark publishes.
func benchPost(i int) feed.PostInput {
	return feed.PostInput{
		Title:   fmt.Sprintf("bench post %d", i),
		Content: "A post published by feedd bench.\nIt has two lines & an ampersand.",
		Images:  "https://img.example/bench/1.jpg,https://img.example/bench/2.jpg",
	}
}

// parallel runs fn(0) .. fn(n-1) on at most workers goroutines and returns
// the first error; after an error the calls not yet started are skipped.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
