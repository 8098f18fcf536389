package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/hmdp"
)

// ImportOptions configure feedd bench import.
type ImportOptions struct {
	// MySQL is an empty database of the benchmark's own, filled with a
	// synthetic instance of the tutorial's service (MakeHMDP).
	MySQL *sql.DB
	// Redis, when set, gets the tutorial's likes under Prefix (the
	// benchmark's own; the caller deletes it).
	Redis  goredis.UniversalClient
	Prefix string
	Data   HMDPOptions
	// Batch, Backfill, InboxCap and PullThreshold are the import's.
	Batch, Backfill, InboxCap, PullThreshold int
	// CPUProfile, when set, receives a CPU profile of the import.
	CPUProfile string
}

// ImportResult is the rate of each phase of one import.
type ImportResult struct {
	Backend string   `json:"backend"`
	Data    HMDPData `json:"data"`
	// MakeSeconds is how long the synthetic data took to make.
	MakeSeconds float64       `json:"make_seconds"`
	Phases      []ImportPhase `json:"phases"`
	Seconds     float64       `json:"seconds"` // the whole import
	Skipped     int64         `json:"skipped"`
}

// ImportPhase is one phase's rows and rate.
type ImportPhase struct {
	Name       string  `json:"name"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_s"`
	// CPUSeconds is the CPU time of the work over the phase: feedd's
	// process (the reads of MySQL and Redis, the cleaning, and on SQLite
	// the store's work) and, when it runs on this machine, PostgreSQL's.
	// RowsPerCPUSec is the rows per second of it: the rate one quiet core
	// would give, where a shared machine's load moves RowsPerSec.
	CPUSeconds    float64 `json:"cpu_seconds"`
	RowsPerCPUSec float64 `json:"rows_per_cpu_s"`
}

// Import makes a synthetic tutorial database (the MySQL of o, likes in
// Redis when o.Redis is set) and imports it with feedd import's code into
// env's store, timing each phase: tables in rows read per second, the
// inboxes in users per second.
func Import(ctx context.Context, env *Env, o ImportOptions) (*ImportResult, error) {
	st, ok := env.Service.Posts.(feed.ImportStore)
	if !ok {
		return nil, errors.New("bench: this store cannot import")
	}
	res := &ImportResult{Backend: env.Store.Engine()}
	if env.Redis != nil {
		res.Backend += ", inboxes in redis"
	}
	t0 := time.Now()
	data, err := MakeHMDP(ctx, o.MySQL, o.Redis, o.Prefix, o.Data)
	if err != nil {
		return nil, err
	}
	res.Data, res.MakeSeconds = data, time.Since(t0).Seconds()
	src := &hmdp.Source{MySQL: o.MySQL, Redis: o.Redis, Prefix: o.Prefix}
	// The work's CPU: this process's, and a local PostgreSQL's too (the
	// store's work is done there).
	cpu := ProcessCPU
	if pg, ok := env.Store.(*PostgresStore); ok {
		if server := pg.ServerCPU(ctx); server != nil {
			cpu = func() time.Duration { return ProcessCPU() + server() }
			res.Backend += " (CPU: feedd's and PostgreSQL's)"
		}
	}
	if o.CPUProfile != "" {
		stop, err := startCPUProfile(o.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	rep, err := hmdp.Run(ctx, src, hmdp.Options{Store: st, Inbox: env.Service.Inbox, Batch: o.Batch, Backfill: o.Backfill,
		InboxCap: o.InboxCap, PullThreshold: o.PullThreshold, Progress: env.Progress, CPU: cpu})
	if err != nil {
		return nil, err
	}
	res.Seconds, res.Skipped = rep.Elapsed.Seconds(), rep.Skipped()
	for _, p := range rep.Phases {
		res.Phases = append(res.Phases, ImportPhase{Name: p.Name, Rows: p.RunRead, Seconds: p.RunTime.Seconds(), RowsPerSec: p.RowsPerSecond(),
			CPUSeconds: p.RunCPU.Seconds(), RowsPerCPUSec: float64(p.RunRead) / max(p.RunCPU.Seconds(), 1e-9)})
	}
	return res, nil
}

// Text is the result as feedd bench import prints it.
func (r *ImportResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "import of a synthetic hmdp into %s: %d users, %d posts, %d follows (power law, top user %d followers), %d likes, %d comments; made in %.0f s\n",
		r.Backend, r.Data.Users, r.Data.Posts, r.Data.Follows, r.Data.TopFollowers, r.Data.Likes, r.Data.Comments, r.MakeSeconds)
	for _, p := range r.Phases {
		unit := "rows"
		if p.Name == hmdp.PhaseInboxes {
			unit = "users"
		}
		fmt.Fprintf(&b, "  %-16s %10d %-5s %8.1f s %10.0f %s/s   (CPU %6.1f s: %8.0f %s per CPU second)\n",
			p.Name, p.Rows, unit, p.Seconds, p.RowsPerSec, unit, p.CPUSeconds, p.RowsPerCPUSec, unit)
	}
	fmt.Fprintf(&b, "  whole import %.1f s, %d rows skipped\n", r.Seconds, r.Skipped)
	return b.String()
}
