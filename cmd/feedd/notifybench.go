package main

import (
	"flag"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/bench"
	"github.com/feedd/feedd/postgres"
	"github.com/feedd/feedd/sqlite"
)

// declareNotifyBenchFlags declares the flags of `feedd bench notify`.
func declareNotifyBenchFlags(fs *flag.FlagSet, o *bench.NotifyOptions) {
	fs.IntVar(&o.Likes, "notify-likes", 2000, "notify: likes of each measured phase, by distinct users")
	fs.IntVar(&o.Concurrency, "notify-concurrency", 8, "notify: likes in flight at once")
	fs.IntVar(&o.BigGroup, "notify-big-group", 100_000, "notify: actors of the big group whose page read is measured")
	fs.IntVar(&o.Reads, "notify-reads", 200, "notify: page reads of each of the two users")
}

// notifySwitch returns the function that turns the recording of
// notifications on or off in store (the service's), as --notify does at
// start; nil for a store that records none.
func notifySwitch(store feed.PostStore) func(on bool) {
	switch db := store.(type) {
	case *sqlite.DB:
		return func(on bool) { db.Notify.Off = !on }
	case *postgres.DB:
		return func(on bool) { db.Notify.Off = !on }
	}
	return nil
}
