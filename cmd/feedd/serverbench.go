package main

import (
	"flag"

	"github.com/feedd/feedd/internal/bench"
)

// declareServerBenchFlags declares the flags of `feedd bench server`,
// defaulting to bench.DefaultServerOptions (--runs and --concurrency are
// the common flags).
func declareServerBenchFlags(fs *flag.FlagSet, o *bench.ServerOptions) {
	d := bench.DefaultServerOptions()
	*o = d
	fs.IntVar(&o.Users, "server-users", d.Users, "server: users upserted, 1000 a call")
	fs.IntVar(&o.Pairs, "server-pairs", d.Pairs, "server: follow pairs of the one batch call of each run")
	fs.IntVar(&o.Publishes, "server-publishes", d.Publishes, "server: foreign ids published, each then retried once")
	fs.IntVar(&o.Retries, "server-retries", d.Retries, "server: concurrent publishes of one foreign id at the end (they must make one post)")
}
