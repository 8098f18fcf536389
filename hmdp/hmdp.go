// Package hmdp imports a running instance of the tutorial's service
// ("hmdp", the Spring Boot + Redis design whose HTTP interface is feedd's
// compatible API) into feedd's store: its users, posts, follows, likes and
// comments, from its MySQL database and Redis (feedd import hmdp; docs/operations.md,
// "Moving from hmdp").
//
// Each phase reads one table (or, for likes, one sorted set per post) in
// key order, in batches, and writes each batch through feed.ImportStore
// together with its checkpoint: a run that is killed resumes after the
// last batch committed, and a run after a complete one imports only the
// rows added since. Rows that cannot come over are skipped and those that
// can once cleaned are cleaned, each counted by reason (clean.go), with a
// few samples logged. Inboxes are built last: from the follows, as fan-out
// and backfill would have built them, or from the tutorial's own feeds.
package hmdp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"time"

	feed "github.com/feedd/feedd"
)

// SourceName names this source's checkpoints in the store.
const SourceName = "hmdp"

// The phases, in the order they run: the tutorial's tables (likes: its
// blog:liked sorted sets, read post by post), then the inboxes, from the
// follows or (KeepFeeds) from its feed sorted sets.
const (
	PhaseUsers    = "tb_user"
	PhasePosts    = "tb_blog"
	PhaseFollows  = "tb_follow"
	PhaseLikes    = "blog:liked"
	PhaseComments = "tb_blog_comments"
	// PhaseLikesAgain reads every post's blog:liked set again
	// (Options.ResyncLikes), for the likes added to posts imported before.
	PhaseLikesAgain = "likes-resync"
	PhaseInboxes    = "inboxes"
	PhaseFeeds      = "feed"
)

// DefaultBatch is how many source rows a batch reads and writes by
// default. A batch is one transaction: the larger, the fewer times a page
// of the store's indexes is written (follows into SQLite,
// feedtest.BenchImportFollows: 400,000 at 20,000 a batch, 101,000 rows per
// CPU second against 62,000 at 5,000; 2M at 100,000 a batch, 81,600
// against 59,000 at 20,000). The batches of users, posts and likes hold at
// most wideBatch rows (posts and comments, their text; likes, the posts
// whose likers come in a batch).
const DefaultBatch = 100_000

// wideBatch bounds the batches of users, posts, likes and comments.
const wideBatch = 20_000

// Options say where the import goes and how.
type Options struct {
	// Store is feedd's store; nil for a dry run, which reads the whole
	// source and reports what would come over into an empty store,
	// writing nothing.
	Store feed.ImportStore
	// Inbox is where the inboxes go (the store's, or Redis).
	Inbox feed.Inbox
	// Outbox is the service's outboxes: when they are copies of the posts
	// (feed.OutboxCache, Redis), the import forgets those of the authors
	// whose posts it brought, each rebuilt with them at its next read.
	Outbox feed.Outbox
	// ResyncLikes reads the likes of every post again (PhaseLikesAgain):
	// a run imports the likes of the posts it reads for the first time
	// only, so likes added in the source to posts imported before come over
	// only so. Needs the source's Redis.
	ResyncLikes bool
	// KeepFeeds fills each inbox from the tutorial's feed:{userId} instead
	// of building it from the follows (needs the source's Redis).
	KeepFeeds bool
	// Batch is how many source rows one batch reads and writes
	// (DefaultBatch if 0).
	Batch int
	// Backfill, InboxCap and PullThreshold are feedd's (feed.Service's):
	// how inboxes are built, and who enters pull mode.
	Backfill, InboxCap, PullThreshold int
	// Now is the clock (time.Now if nil): imported users are active now.
	Now func() time.Time
	Log *slog.Logger
	// Progress gets a progress bar per phase on a terminal, plain lines
	// elsewhere (nil: none).
	Progress io.Writer
	// CPU, when set, is this process's CPU time so far: each phase's
	// share is reported (feedd bench import).
	CPU func() time.Duration
	// ImagesDir is the tutorial's IMAGE_UPLOAD_DIR: when set, the
	// pictures the notes name are copied from it into Images (images.go).
	ImagesDir string
	Images    ImageImporter
}

func (o *Options) defaults() {
	o.Batch = cmp.Or(max(o.Batch, 0), DefaultBatch)
	o.InboxCap = cmp.Or(max(o.InboxCap, 0), feed.DefaultInboxCap)
	o.Backfill = min(cmp.Or(max(o.Backfill, 0), feed.DefaultBackfill), o.InboxCap)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Report is what an import did.
type Report struct {
	DryRun bool
	Phases []PhaseReport
	// LikersUnknown: there was no Redis to read likes from; posts keep
	// the like counts of tb_blog.liked, but who liked them is unknown.
	LikersUnknown bool
	// Pull is how many users are in pull mode after the import.
	Pull    int
	Elapsed time.Duration
}

// PhaseReport is one phase's line of the report.
type PhaseReport struct {
	Name string
	// Source is how many rows the source table has (-1: not counted, as
	// for Redis, whose entries are counted as they are read).
	Source int64
	// Counts are over every run of the import; RunRead and RunTime are
	// this run's rows read and the time it took.
	Counts  feed.ImportCounts
	RunRead int64
	RunTime time.Duration
	// RunCPU is this process's CPU time over the phase (Options.CPU; 0
	// when not measured).
	RunCPU time.Duration
}

// RowsPerSecond is the phase's rate in this run.
func (p PhaseReport) RowsPerSecond() float64 { return rate(p.RunRead, p.RunTime.Seconds()) }

// Skipped is the number of rows skipped in every phase, over every run.
func (r *Report) Skipped() int64 {
	var n int64
	for _, p := range r.Phases {
		n += p.Counts.SkippedTotal()
	}
	return n
}

// Phase returns the report of the phase named, nil if it did not run.
func (r *Report) Phase(name string) *PhaseReport {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// postRef is what the import keeps of a post: its author and score.
type postRef struct{ author, score int64 }

// run is one import run.
type run struct {
	src   *Source
	o     Options
	now   time.Time
	cps   map[string]feed.ImportCheckpoint
	users map[int64]bool    // users in the store that are the source's
	posts map[int64]postRef // posts in the store that are the source's
	reset bool              // the inbox phases were reset by this run's first batch
	// comments are the comments written in a dry run, which has no store
	// to look them up in.
	comments map[int64]commentRef
	report   *Report
	logged   map[string]int // samples logged, by phase and reason
}

// samplesPerReason bounds the rows logged for each phase and reason.
const samplesPerReason = 3

// Run imports src into o.Store (or, with no store, reports what would
// come over) and returns the report. It may be run again at any time: it
// resumes where the last run stopped and imports only what is missing.
func Run(ctx context.Context, src *Source, o Options) (*Report, error) {
	o.defaults()
	switch {
	case src == nil || src.MySQL == nil:
		return nil, errors.New("hmdp: no MySQL source")
	case o.KeepFeeds && src.Redis == nil:
		return nil, errors.New("keeping the tutorial's feeds needs its Redis (--redis)")
	case o.ResyncLikes && src.Redis == nil:
		return nil, errors.New("reading the likes again needs the tutorial's Redis (--redis)")
	case o.Store != nil && o.Inbox == nil:
		return nil, errors.New("hmdp: no inbox store")
	case o.Store != nil && o.ImagesDir != "" && o.Images == nil:
		return nil, errors.New("hmdp: no image store for the pictures")
	}
	start := time.Now()
	r := &run{src: src, o: o, now: o.Now(), cps: map[string]feed.ImportCheckpoint{}, users: map[int64]bool{}, posts: map[int64]postRef{}, comments: map[int64]commentRef{},
		report: &Report{DryRun: o.Store == nil, LikersUnknown: src.Redis == nil}, logged: map[string]int{}}
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	steps := []func(context.Context) error{r.importUsers, r.importPosts, r.importFollows}
	if src.Redis != nil {
		steps = append(steps, r.importLikes(PhaseLikes))
	}
	if o.ResyncLikes {
		steps = append(steps, r.importLikes(PhaseLikesAgain))
	}
	steps = append(steps, r.importComments)
	if o.ImagesDir != "" {
		steps = append(steps, r.importImages)
	}
	steps = append(steps, r.finish)
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return r.report, err
		}
	}
	r.report.Elapsed = time.Since(start)
	return r.report, nil
}

// load reads the checkpoints and what the store holds that rows read
// later may refer to: the users and posts that earlier runs imported.
// Those are the store's users and posts that the source has (as far as its
// checkpoints went), by the same author, less those the store already had
// (ImportCounts.Taken): a user or post of feedd's own is never taken for
// the source's, whatever its id, and a source row that refers to a user
// missing from the source is skipped, never credited to feedd's user of
// that id.
func (r *run) load(ctx context.Context) error {
	st := r.o.Store
	if st == nil {
		return nil
	}
	cps, err := st.ImportProgress(ctx, SourceName)
	if err != nil {
		return fmt.Errorf("read the import's checkpoints: %w", err)
	}
	for _, cp := range cps {
		r.cps[cp.Phase] = cp
	}
	// The source's users and posts read so far, each confirmed once the
	// store is found to hold it.
	users := map[int64]bool{}
	if err := upTo(ctx, r.cp(PhaseUsers).Last, r.src.userIDs, func(id int64) int64 { return id }, func(id int64) { users[id] = false }); err != nil {
		return fmt.Errorf("read the source's users: %w", err)
	}
	if err := st.ImportedUsers(ctx, func(id int64) {
		if _, ok := users[id]; ok {
			users[id] = true
		}
	}); err != nil {
		return fmt.Errorf("read the store's users: %w", err)
	}
	for _, id := range r.cps[PhaseUsers].Counts.Taken {
		delete(users, id) // a user of the store's own, not the source's
	}
	for id, ok := range users {
		if ok {
			r.users[id] = true
		}
	}
	const unconfirmed = math.MinInt64
	if err := upTo(ctx, r.cp(PhasePosts).Last, r.src.postAuthors, func(p likedPost) int64 { return p.id }, func(p likedPost) {
		if r.users[p.author] {
			r.posts[p.id] = postRef{p.author, unconfirmed}
		}
	}); err != nil {
		return fmt.Errorf("read the source's posts: %w", err)
	}
	if err := st.ImportedPosts(ctx, func(id, author, score int64) {
		if p, ok := r.posts[id]; ok && p.author == author {
			r.posts[id] = postRef{author, score}
		}
	}); err != nil {
		return fmt.Errorf("read the store's posts: %w", err)
	}
	for _, id := range r.cps[PhasePosts].Counts.Taken {
		delete(r.posts, id)
	}
	maps.DeleteFunc(r.posts, func(_ int64, p postRef) bool { return p.score == unconfirmed })
	return nil
}

// upTo calls fn with each row that read returns in key order, up to the
// key last.
func upTo[T any](ctx context.Context, last int64, read func(ctx context.Context, after int64, n int) ([]T, error), key func(T) int64, fn func(T)) error {
	for after := int64(0); after < last; {
		rows, err := read(ctx, after, loadBatch)
		if err != nil || len(rows) == 0 {
			return err
		}
		for _, row := range rows {
			if key(row) > last {
				return nil
			}
			fn(row)
		}
		after = key(rows[len(rows)-1])
	}
	return nil
}

// loadBatch is how many source ids a read of load takes.
const loadBatch = 100_000

// cp returns phase's checkpoint.
func (r *run) cp(phase string) feed.ImportCheckpoint {
	cp, ok := r.cps[phase]
	if !ok {
		cp = feed.ImportCheckpoint{Source: SourceName, Phase: phase}
	}
	return cp
}

// sample logs a skipped or cleaned row, the first samplesPerReason of
// each phase and reason.
func (r *run) sample(phase, what, reason string, key int64, detail string) {
	k := phase + "/" + reason
	if r.logged[k] >= samplesPerReason {
		return
	}
	r.logged[k]++
	r.o.Log.Warn("row "+what, "table", phase, "reason", reason, "key", key, "detail", detail)
}

// batch is one batch of a phase on its way into the store.
type batch struct {
	phase string
	last  int64 // the key of its last source row
	read  int   // source rows read
	done  bool  // the source had no more rows
	// delta holds what the importer skipped and cleaned itself.
	delta feed.ImportCounts
	// written is how many rows went to the store; key(i) is the source
	// key of row i, for the store's skips.
	written int
	key     func(i int) int64
	// already is a reason the store skips a row for that means it is
	// there already: such rows are neither imported nor skipped ("": none).
	already string

	// Set by commit once the store committed.
	cp    feed.ImportCheckpoint
	skips []feed.ImportSkip
}

// commit is the batch's feed.ImportCommit: the phase's checkpoint moved
// past the batch with its counts, and, on this run's first batch, the
// inbox phases reset, so that the inboxes are built again with the rows
// the run brings.
func (r *run) commit(b *batch) feed.ImportCommit {
	base := r.cp(b.phase)
	return func(skips []feed.ImportSkip) []feed.ImportCheckpoint {
		cp := base
		cp.Counts = base.Counts.Clone()
		cp.Last, cp.Done = b.last, b.done
		cp.Counts.Read += int64(b.read)
		cp.Counts.Imported += int64(b.written - len(skips))
		for k, n := range b.delta.Skipped {
			cp.Counts.Skip(k, n)
		}
		for k, n := range b.delta.Cleaned {
			cp.Counts.Clean(k, n)
		}
		for _, s := range skips {
			if s.Reason == b.already {
				continue
			}
			cp.Counts.Skip(s.Reason, 1)
			if s.Reason == feed.SkipIDTaken {
				cp.Counts.Taken = append(cp.Counts.Taken, b.key(s.Index))
			}
		}
		b.cp, b.skips = cp, skips
		out := []feed.ImportCheckpoint{cp}
		if !r.reset {
			for _, p := range []string{PhaseInboxes, PhaseFeeds} {
				out = append(out, feed.ImportCheckpoint{Source: SourceName, Phase: p})
			}
		}
		return out
	}
}

// store writes a batch with write (nil in a dry run: the batch is counted
// as written) and keeps its checkpoint. It returns the indexes of the rows
// the store skipped.
func (r *run) store(b *batch, write func(feed.ImportCommit) error) (map[int]string, error) {
	c := r.commit(b)
	if r.o.Store == nil {
		c(nil)
	} else if err := write(c); err != nil {
		return nil, fmt.Errorf("write %s: %w", b.phase, err)
	}
	r.cps[b.phase] = b.cp
	if !r.reset && r.o.Store != nil {
		r.reset = true // commit saved the inbox phases reset
		delete(r.cps, PhaseInboxes)
		delete(r.cps, PhaseFeeds)
	}
	skipped := map[int]string{}
	for _, s := range b.skips {
		skipped[s.Index] = s.Reason
		r.sample(b.phase, "skipped", s.Reason, b.key(s.Index), "")
	}
	return skipped, nil
}

// table runs one phase over a source read in key order: read returns the
// rows after a key (at most n), last the key of a row, and write stores a
// batch (setting b.read, the source rows it stood for). Batches hold n
// rows. A reader goroutine keeps the next batch ready while one is
// written. total is the source's size, for the progress display (-1:
// unknown). end, if set, runs once the source is read to its end.
func table[T any](ctx context.Context, r *run, phase string, total int64, n int,
	read func(ctx context.Context, after int64, n int) ([]T, error), last func(T) int64,
	write func(ctx context.Context, rows []T, b *batch) error, end func(ctx context.Context) error) error {
	cp := r.cp(phase)
	p := newProgress(r.o.Progress, phase, cp.Counts.Read, total)
	started, readBefore, cpu := time.Now(), cp.Counts.Read, r.cpu()
	type chunk struct {
		rows []T
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan chunk, 2)
	go func() {
		defer close(ch)
		after := cp.Last
		for {
			rows, err := read(ctx, after, n)
			select {
			case ch <- chunk{rows, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(rows) < n {
				return
			}
			after = last(rows[len(rows)-1])
		}
	}()
	for c := range ch {
		if c.err != nil {
			return c.err
		}
		if len(c.rows) == 0 {
			if done := r.cp(phase); !done.Done && r.o.Store != nil && done.Last > 0 {
				done.Done = true
				if err := r.o.Store.SaveImportProgress(ctx, done); err != nil {
					return err
				}
				r.cps[phase] = done
			}
			break
		}
		b := &batch{phase: phase, last: last(c.rows[len(c.rows)-1]), done: len(c.rows) < n}
		if err := write(ctx, c.rows, b); err != nil {
			return err
		}
		p.add(b.read)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if end != nil {
		if err := end(ctx); err != nil {
			return err
		}
	}
	cp = r.cp(phase)
	p.done(cp.Counts.Read - readBefore)
	r.report.Phases = append(r.report.Phases, PhaseReport{Name: phase, Source: total, Counts: cp.Counts,
		RunRead: cp.Counts.Read - readBefore, RunTime: time.Since(started), RunCPU: r.cpu() - cpu})
	return nil
}

func (r *run) cpu() time.Duration {
	if r.o.CPU == nil {
		return 0
	}
	return r.o.CPU()
}
