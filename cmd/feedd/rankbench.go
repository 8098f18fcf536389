package main

import (
	"flag"

	"github.com/feedd/feedd/internal/bench"
)

// declareRankBenchFlags declares the flags of `feedd bench rank`: the shape
// of its synthetic community, defaulting to bench.DefaultRankOptions.
func declareRankBenchFlags(fs *flag.FlagSet, o *bench.RankOptions) {
	d := bench.DefaultRankOptions()
	fs.Uint64Var(&o.Seed, "rank-seed", d.Seed, "rank: random seed of the community")
	fs.IntVar(&o.Viewers, "rank-viewers", d.Viewers, "rank: viewers whose first pages are scored")
	fs.IntVar(&o.Authors, "rank-authors", d.Authors, "rank: authors who publish")
	fs.IntVar(&o.Follows, "rank-follows", d.Follows, "rank: authors each viewer follows")
	fs.IntVar(&o.Favourites, "rank-favourites", d.Favourites, "rank: of those, the viewer's hidden favourites")
	fs.IntVar(&o.Before, "rank-before", d.Before, "rank: posts per author in the first period, whose likes feedd learns from")
	fs.IntVar(&o.After, "rank-after", d.After, "rank: posts per author in the scored second period")
	fs.Float64Var(&o.PFav, "rank-p-fav", d.PFav, "rank: chance a viewer likes a favourite's post")
	fs.Float64Var(&o.POther, "rank-p-other", d.POther, "rank: chance a viewer likes another followee's post")
	fs.IntVar(&o.Rounds, "rank-rounds", d.Rounds, "rank: pages of each order read per viewer for the latencies")
	fs.IntVar(&o.Limit, "rank-limit", d.Limit, "rank: page size, the k of NDCG@k")
	fs.IntVar(&o.Reposts, "rank-reposts", d.Reposts, "rank: second-period posts of others each author reposts; a post a viewer's favourite reposted is relevant too, and the first pages are scored again without the reposts feature")
}
