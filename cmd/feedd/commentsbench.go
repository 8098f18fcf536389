package main

import (
	"flag"

	"github.com/feedd/feedd/internal/bench"
)

// declareCommentsBenchFlags declares the flags of `feedd bench comments`,
// defaulting to bench.DefaultCommentsOptions (--runs is the common flag).
func declareCommentsBenchFlags(fs *flag.FlagSet, o *bench.CommentsOptions) {
	d := bench.DefaultCommentsOptions()
	fs.IntVar(&o.Comments, "comments-n", d.Comments, "comments: comments of each throughput run, on one post")
	fs.IntVar(&o.Users, "comments-users", d.Users, "comments: users who write them")
	fs.IntVar(&o.Concurrency, "comments-concurrency", d.Concurrency, "comments: comments in flight at once")
	fs.IntVar(&o.Big, "comments-big", d.Big, "comments: top-level comments of the big post (loaded in bulk)")
	fs.IntVar(&o.Small, "comments-small", d.Small, "comments: comments of the small post")
	fs.IntVar(&o.Reads, "comments-reads", d.Reads, "comments: first pages read of each post in each order")
}
