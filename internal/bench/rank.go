package bench

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// RankOptions shape the synthetic community of `feedd bench rank`.
type RankOptions struct {
	Seed       uint64  `json:"seed"`       // the world's random seed
	Viewers    int     `json:"viewers"`    // users whose feeds are scored
	Authors    int     `json:"authors"`    // users who publish
	Follows    int     `json:"follows"`    // authors each viewer follows
	Favourites int     `json:"favourites"` // of those, the viewer's hidden favourites
	Before     int     `json:"before"`     // posts per author in the first period (the likes' period)
	After      int     `json:"after"`      // posts per author in the second period (the one scored)
	PFav       float64 `json:"p_fav"`      // chance a viewer likes a first-period post of a favourite
	POther     float64 `json:"p_other"`    // chance a viewer likes any other first-period post it sees
	Rounds     int     `json:"rounds"`     // latency: pages of each kind read per viewer
	Limit      int     `json:"limit"`      // page size (NDCG@Limit)
	// Reposts is how many second-period posts of other authors each
	// author reposts in the second period; a post a viewer's favourite
	// reposted is relevant to the viewer too.
	Reposts int `json:"reposts"`
	// CPUProfile, when set, is the file that receives a CPU profile of
	// this process while the pages are read (the latency rounds).
	CPUProfile string `json:"-"`
}

// DefaultRankOptions is the world of BENCHMARKS.md.
func DefaultRankOptions() RankOptions {
	return RankOptions{Seed: 1, Viewers: 40, Authors: 60, Follows: 25, Favourites: 3, Before: 12, After: 6,
		PFav: 0.5, POther: 0.05, Rounds: 10, Limit: 10}
}

// RankResult is the outcome of `feedd bench rank`.
type RankResult struct {
	Backend string      `json:"backend"`
	Options RankOptions `json:"options"`
	// NDCGRanked and NDCGChrono are the mean NDCG@Limit over the viewers of
	// the first ranked and the first chronological page, against the
	// hidden interests: a post is relevant when its author is one of the
	// viewer's favourites and it was published in the second period.
	NDCGRanked float64 `json:"ndcg_ranked"`
	NDCGChrono float64 `json:"ndcg_chrono"`
	Ratio      float64 `json:"ratio"`
	// NDCGNoReposts is NDCGRanked with the reposts feature weighing 0
	// (with Reposts only): what the feature adds.
	NDCGNoReposts float64 `json:"ndcg_ranked_without_reposts,omitempty"`
	Reposts       int     `json:"reposts,omitempty"`
	Likes         int     `json:"likes"`
	Posts         int     `json:"posts"`
	// Page latencies, in ms, of Service calls (no HTTP): the first page of
	// each order, and a next page of a ranked scroll (a snapshot read). The
	// ranked page is judged in absolute time; the chronological figures
	// are context.
	ChronoP50     float64 `json:"chrono_p50_ms"`
	ChronoP99     float64 `json:"chrono_p99_ms"`
	RankedP50     float64 `json:"ranked_p50_ms"`
	RankedP99     float64 `json:"ranked_p99_ms"`
	RankedNextP50 float64 `json:"ranked_next_p50_ms"`
	RankedNextP99 float64 `json:"ranked_next_p99_ms"`
	// The p50 of each viewer's first page of each order (round 0): a
	// caller's first page after a while away.
	RankedFirstP50 float64 `json:"ranked_first_p50_ms"`
	ChronoFirstP50 float64 `json:"chrono_first_p50_ms"`
}

// Text is the human-readable result.
func (r *RankResult) Text() string {
	reposts := ""
	if r.Reposts > 0 {
		reposts = fmt.Sprintf("  with %d reposts: NDCG@%d ranked without the reposts feature %.3f\n", r.Reposts, r.Options.Limit, r.NDCGNoReposts)
	}
	return reposts + fmt.Sprintf("ranked timeline, %d viewers, %d posts, %d likes, inboxes in %s\n"+
		"  NDCG@%d  ranked %.3f   chronological %.3f   ratio %.2fx\n"+
		"  first page  ranked p50 %.2f ms p99 %.2f ms   chronological p50 %.2f ms p99 %.2f ms\n"+
		"  each viewer's first page  ranked p50 %.2f ms   chronological p50 %.2f ms\n"+
		"  next ranked page  p50 %.2f ms p99 %.2f ms\n",
		r.Options.Viewers, r.Posts, r.Likes, r.Backend, r.Options.Limit, r.NDCGRanked, r.NDCGChrono, r.Ratio,
		r.RankedP50, r.RankedP99, r.ChronoP50, r.ChronoP99,
		r.RankedFirstP50, r.ChronoFirstP50, r.RankedNextP50, r.RankedNextP99)
}

func (o RankOptions) validate() error {
	switch {
	case o.Viewers < 1 || o.Authors < 1 || o.Limit < 1 || o.Rounds < 1:
		return fmt.Errorf("viewers, authors, limit and rounds must be at least 1")
	case o.Follows < 1 || o.Follows > o.Authors:
		return fmt.Errorf("follows must be from 1 to the number of authors")
	case o.Favourites < 1 || o.Favourites > o.Follows:
		return fmt.Errorf("favourites must be from 1 to follows")
	case o.Before < 1 || o.After < 1:
		return fmt.Errorf("before and after must be at least 1")
	case o.PFav < 0 || o.PFav > 1 || o.POther < 0 || o.POther > 1:
		return fmt.Errorf("like probabilities must be from 0 to 1")
	case o.Reposts < 0 || (o.Reposts > 0 && o.Authors < 2):
		return fmt.Errorf("reposts must not be negative, and need two authors")
	}
	return nil
}

// Rank builds a community feedd is told nothing about but its likes, and
// scores the ranked timeline against the chronological one.
//
// Each viewer follows Follows authors, Favourites of them its hidden
// favourites. In the first period (7 to 1 days ago) every author publishes
// Before posts and each viewer likes the posts it sees: a favourite's with
// probability PFav, anyone else's with POther. In the second period (the
// last day) every author publishes After posts, and reposts Reposts
// second-period posts of other authors. Then, at the end of the second
// period, each viewer's first ranked page and first chronological page
// are scored by NDCG@Limit, relevance 1 for a second-period post of a
// favourite or reposted by one; with Reposts, the first ranked pages are
// scored again with the reposts feature weighing 0. The world comes from
// Seed alone; the service's clock is the world's.
func Rank(ctx context.Context, env *Env, opt RankOptions) (*RankResult, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	rng := mrand.New(mrand.NewPCG(opt.Seed, 0x72616e6b))
	users := opt.Viewers + opt.Authors
	first, err := env.Store.CreateUsers(ctx, fmt.Sprintf("rank%d-", opt.Seed), users, func(int) {})
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	viewer := func(i int) int64 { return first + int64(i) }
	author := func(j int) int64 { return first + int64(opt.Viewers+j) }
	follows := make([][]int, opt.Viewers) // author indexes
	fav := make([]map[int64]bool, opt.Viewers)
	var pairs [][2]int64
	for i := range opt.Viewers {
		follows[i] = rng.Perm(opt.Authors)[:opt.Follows]
		fav[i] = map[int64]bool{}
		for k, j := range follows[i] {
			if k < opt.Favourites {
				fav[i][author(j)] = true
			}
			pairs = append(pairs, [2]int64{viewer(i), author(j)})
		}
	}
	if err := env.Store.Follow(ctx, pairs); err != nil {
		return nil, fmt.Errorf("load follows: %w", err)
	}
	if err := env.Store.FixCounts(ctx, first, first+int64(users)-1); err != nil {
		return nil, err
	}

	// The world's clock: the end of the second period is now.
	end := env.now().Truncate(time.Millisecond)
	var clock atomic.Int64
	svc := env.Service
	defer func(now func() time.Time) { svc.Now = now }(svc.Now)
	svc.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	type post struct {
		author int64
		at     time.Time
		after  bool
	}
	var posts []post
	for j := range opt.Authors {
		for range opt.Before {
			posts = append(posts, post{author(j), end.Add(-24*time.Hour - time.Duration(rng.Int64N(int64(6*24*time.Hour)))), false})
		}
		for range opt.After {
			posts = append(posts, post{author(j), end.Add(-time.Duration(rng.Int64N(int64(24 * time.Hour)))), true})
		}
	}
	slices.SortFunc(posts, func(a, b post) int { return a.at.Compare(b.at) })
	if err := env.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	ids := make([]int64, len(posts))
	for k, p := range posts {
		clock.Store(p.at.UnixMilli())
		created, err := svc.Publish(ctx, p.author, benchPost(k))
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		ids[k] = created.ID
	}
	// The reposts of the second period, each after its post.
	reposted := map[int64][]int64{} // post id -> the authors who reposted it
	var second []int
	for k, p := range posts {
		if p.after {
			second = append(second, k)
		}
	}
	type repost struct {
		author int64
		k      int
		at     time.Time
	}
	var reps []repost
	for j := range opt.Authors {
		for picked := map[int]bool{}; len(picked) < min(opt.Reposts, len(second)-opt.After); {
			k := second[rng.IntN(len(second))]
			if posts[k].author != author(j) && !picked[k] {
				picked[k] = true
				reps = append(reps, repost{author(j), k, posts[k].at.Add(time.Duration(rng.Int64N(int64(end.Sub(posts[k].at)) + 1)))})
			}
		}
	}
	slices.SortFunc(reps, func(a, b repost) int { return a.at.Compare(b.at) })
	for _, r := range reps {
		clock.Store(r.at.UnixMilli())
		if err := svc.Repost(ctx, r.author, ids[r.k], true); err != nil {
			return nil, fmt.Errorf("repost: %w", err)
		}
		reposted[ids[r.k]] = append(reposted[ids[r.k]], r.author)
	}
	// Wait for the fan-out: every viewer's inbox holds its followees' posts
	// and reposts, or --inbox-cap of them (an inbox over the cap is trimmed
	// to it, and may hold up to a quarter more until the next trim), and
	// the count has stopped changing.
	perAuthor := int64(opt.Before + opt.After + opt.Reposts)
	inboxCap := int64(svc.InboxCap)
	if inboxCap <= 0 {
		inboxCap = feed.DefaultInboxCap
	}
	want := int64(opt.Viewers)*min(int64(opt.Follows)*perAuthor, inboxCap) + int64(opt.Authors)*min(perAuthor, inboxCap)
	last := int64(-1)
	if err := poll(ctx, 50*time.Millisecond, 10*time.Minute, func() (bool, error) {
		n, err := inboxEntries(ctx, env, first, first+int64(users)-1)
		done := n >= want && n == last
		last = n
		return done, err
	}); err != nil {
		return nil, fmt.Errorf("waiting for the fan-out: %w", err)
	}
	// The likes of the first period, an hour at most after each post.
	res := &RankResult{Backend: env.Backend(), Options: opt, Posts: len(posts)}
	for i := range opt.Viewers {
		followed := map[int64]bool{}
		for _, j := range follows[i] {
			followed[author(j)] = true
		}
		for k, p := range posts {
			if p.after || !followed[p.author] {
				continue
			}
			pr := opt.POther
			if fav[i][p.author] {
				pr = opt.PFav
			}
			if rng.Float64() < pr {
				clock.Store(p.at.Add(time.Duration(rng.Int64N(int64(time.Hour)))).UnixMilli())
				if err := svc.SetLike(ctx, viewer(i), ids[k], true); err != nil {
					return nil, fmt.Errorf("like: %w", err)
				}
				res.Likes++
			}
		}
	}
	clock.Store(end.UnixMilli())

	after := map[int64]int64{} // second-period post id -> author
	for k, p := range posts {
		if p.after {
			after[ids[k]] = p.author
		}
	}
	// relevantTo reports whether post id is relevant to viewer i: a
	// second-period post of a favourite, or reposted by one.
	relevantTo := func(i int, id int64) bool {
		a, ok := after[id]
		return ok && (fav[i][a] || slices.ContainsFunc(reposted[id], func(r int64) bool { return fav[i][r] }))
	}
	var ranked, chrono []float64
	var tRanked, tChrono, tNext Latencies
	var tRankedFirst, tChronoFirst Latencies // round 0
	if opt.CPUProfile != "" {
		stop, err := startCPUProfile(opt.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	for i := range opt.Viewers {
		rel := func(vs []feed.PostView) []bool {
			out := make([]bool, len(vs))
			for k, v := range vs {
				out[k] = relevantTo(i, v.ID)
			}
			return out
		}
		relevant := 0
		for id := range after {
			if relevantTo(i, id) {
				relevant++
			}
		}
		var rp *feed.RankedPage
		var cp *feed.Page
		for n := range opt.Rounds {
			// Alternate the order of the two reads, so that neither always
			// runs on a warmer cache: by round, and by viewer, so that each
			// order makes half of the viewers' first (cold) reads.
			readRanked := func() error {
				t0 := time.Now()
				p, err := svc.RankedTimeline(ctx, viewer(i), nil, opt.Limit)
				d := time.Since(t0)
				tRanked = append(tRanked, d)
				if n == 0 {
					tRankedFirst = append(tRankedFirst, d)
				}
				if err == nil && p.Next != nil {
					t0 = time.Now()
					_, err = svc.RankedTimeline(ctx, viewer(i), p.Next, opt.Limit)
					tNext = append(tNext, time.Since(t0))
				}
				rp = p
				return err
			}
			readChrono := func() error {
				t0 := time.Now()
				p, err := svc.Timeline(ctx, viewer(i), nil, opt.Limit)
				d := time.Since(t0)
				tChrono = append(tChrono, d)
				if n == 0 {
					tChronoFirst = append(tChronoFirst, d)
				}
				cp = p
				return err
			}
			reads := []func() error{readRanked, readChrono}
			if (i+n)%2 == 1 {
				reads[0], reads[1] = reads[1], reads[0]
			}
			for _, read := range reads {
				if err := read(); err != nil {
					return nil, err
				}
			}
		}
		if relevant == 0 {
			continue
		}
		ranked = append(ranked, NDCG(rel(rp.List), relevant, opt.Limit))
		chrono = append(chrono, NDCG(rel(cp.List), relevant, opt.Limit))
	}
	if opt.Reposts > 0 {
		// The first ranked pages again, the reposts feature off.
		res.Reposts = len(reps)
		settings := rank.Default()
		if svc.Rank != nil {
			settings = *svc.Rank
		}
		defer func(rs *rank.Settings) { svc.Rank = rs }(svc.Rank)
		off := settings
		off.WReposts = 0
		svc.Rank = &off
		var without []float64
		for i := range opt.Viewers {
			relevant := 0
			for id := range after {
				if relevantTo(i, id) {
					relevant++
				}
			}
			if relevant == 0 {
				continue
			}
			p, err := svc.RankedTimeline(ctx, viewer(i), nil, opt.Limit)
			if err != nil {
				return nil, err
			}
			rel := make([]bool, len(p.List))
			for k, v := range p.List {
				rel[k] = relevantTo(i, v.ID)
			}
			without = append(without, NDCG(rel, relevant, opt.Limit))
		}
		res.NDCGNoReposts = round(mean(without), 3)
	}
	res.NDCGRanked, res.NDCGChrono = round(mean(ranked), 3), round(mean(chrono), 3)
	if res.NDCGChrono > 0 {
		res.Ratio = round(res.NDCGRanked/res.NDCGChrono, 2)
	}
	res.RankedP50, res.RankedP99 = round(ms(tRanked.Quantile(0.5)), 3), round(ms(tRanked.Quantile(0.99)), 3)
	res.ChronoP50, res.ChronoP99 = round(ms(tChrono.Quantile(0.5)), 3), round(ms(tChrono.Quantile(0.99)), 3)
	res.RankedNextP50, res.RankedNextP99 = round(ms(tNext.Quantile(0.5)), 3), round(ms(tNext.Quantile(0.99)), 3)
	res.RankedFirstP50, res.ChronoFirstP50 = round(ms(tRankedFirst.Quantile(0.5)), 3), round(ms(tChronoFirst.Quantile(0.5)), 3)
	return res, nil
}

// NDCG is the normalised discounted cumulative gain at k of a list with
// binary relevance rel, when relevant items exist in all.
func NDCG(rel []bool, relevant, k int) float64 {
	var dcg, ideal float64
	for i := range min(k, len(rel)) {
		if rel[i] {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := range min(k, relevant) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
