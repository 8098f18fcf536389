package capacity

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	feed "github.com/feedd/feedd"
)

// Settings are feedd's settings that decide distribution: the serve flags
// of the same names.
type Settings struct {
	PullThreshold int           `json:"pull_threshold"` // --pull-threshold (0: pull mode off)
	ActiveWindow  time.Duration `json:"active_window"`  // --active-days (JSON: ns)
	InboxCap      int           `json:"inbox_cap"`      // --inbox-cap (0: feed.DefaultInboxCap)
	Backfill      int           `json:"backfill"`       // --backfill (0: feed.DefaultBackfill)
	SplitSize     int           `json:"split_size"`     // --fanout-split (0: 10000)
}

// Activity is how users behave: each user draws their own rates once, from
// heavy-tailed distributions around these means.
type Activity struct {
	// DailyActive is the mean of the users' daily visit probabilities, each
	// drawn from Beta(a, 1) with that mean: most users rarely come, a few
	// come every day.
	DailyActive float64 `json:"daily_active"`
	// PagesPerVisit is the mean number of feed pages a visit reads (each
	// visit's count log-normal, sigma 1, at least 1).
	PagesPerVisit float64 `json:"pages_per_visit"`
	// PostsPerVisit is the mean of the users' posting rates per visit (each
	// user's rate log-normal with PostsSigma, each visit's posts Poisson).
	PostsPerVisit float64 `json:"posts_per_visit"`
	PostsSigma    float64 `json:"posts_sigma"`
	// FollowsPerVisit is the mean number of new follows a visit makes
	// (Poisson), each of a followee drawn by popularity.
	FollowsPerVisit float64 `json:"follows_per_visit"`
	// Diurnal is the amplitude of the day's cycle: a visit falls in hour h
	// with weight 1 + Diurnal·cos(2π(h-20)/24), busiest at 20:00.
	Diurnal float64 `json:"diurnal"`
}

// Visit is one user's visit, as the simulation made it: a read of Pages
// pages, then Posts posts, then follows of Follows (user indexes). For
// replaying the same activity against a real server.
type Visit struct {
	At      int64 // seconds since the start of the simulation
	User    uint32
	Pages   int
	Posts   int
	Follows []uint32
}

// Counts are what the decision code did in one simulated hour.
type Counts struct {
	Visits         int64 `json:"visits"`
	Pages          int64 `json:"pages"`
	PullReads      int64 `json:"pull_reads"` // outboxes merged, summed over pages
	Posts          int64 `json:"posts"`
	Deliveries     int64 `json:"deliveries"`      // inbox entries written by fan-out (the author's own included)
	PostJobs       int64 `json:"post_jobs"`       // one per post
	BatchJobs      int64 `json:"batch_jobs"`      // a large audience's extra jobs
	Follows        int64 `json:"follows"`         // new follows (each a follow job)
	Backfilled     int64 `json:"backfilled"`      // entries copied by follow jobs
	Rebuilds       int64 `json:"rebuilds"`        // inboxes regenerated (first read, or back after --active-days)
	RebuiltEntries int64 `json:"rebuilt_entries"` // entries they were given
	OutboxBuilds   int64 `json:"outbox_builds"`   // outboxes rebuilt from the database on a first pull read
	Touches        int64 `json:"touches"`         // activity times written
	EnteredPull    int64 `json:"entered_pull"`    // authors put in pull mode
}

func (c *Counts) add(o Counts) {
	c.Visits += o.Visits
	c.Pages += o.Pages
	c.PullReads += o.PullReads
	c.Posts += o.Posts
	c.Deliveries += o.Deliveries
	c.PostJobs += o.PostJobs
	c.BatchJobs += o.BatchJobs
	c.Follows += o.Follows
	c.Backfilled += o.Backfilled
	c.Rebuilds += o.Rebuilds
	c.RebuiltEntries += o.RebuiltEntries
	c.OutboxBuilds += o.OutboxBuilds
	c.Touches += o.Touches
	c.EnteredPull += o.EnteredPull
}

// Options of one simulation run.
type Options struct {
	Settings Settings
	Activity Activity
	// Days are simulated and counted after WarmupDays that are simulated
	// and not counted (inboxes fill, outboxes grow, users come and go).
	Days       float64
	WarmupDays int
	Seed       uint64
	// OnStart, when set, is told of the state before the first day:
	// each user's last activity (seconds, before 0) and mode. For loading
	// the same state into a real server; the slices are the run's own.
	OnStart func(lastActive []int32, mode []feed.Mode)
	// OnVisit, when set, is told of every counted visit in order.
	OnVisit func(Visit)
	// OnEnd, when set, is told of every user's keys in Redis at the end,
	// for building them in a real Redis; the slices are the run's own.
	OnEnd func(End)
	// Progress, when set, is told of the days done.
	Progress func(stage string, done, total int) `json:"-"`
}

// Result is what a run counted.
type Result struct {
	Hours []Counts `json:"-"` // each counted hour
	// PullsPerPage[k] is the number of pages that merged k outboxes (the
	// last slot: that many or more).
	PullsPerPage []int64 `json:"-"`
	// InboxSizes[n] is the number of built inboxes in Redis holding n
	// entries at the end, UnbuiltSizes of those never built (delivered to,
	// never read); OutboxSizes likewise for the outboxes.
	InboxSizes   []int64 `json:"-"`
	UnbuiltSizes []int64 `json:"-"`
	OutboxSizes  []int64 `json:"-"`
	PullAuthors  int     `json:"pull_authors"` // authors in pull mode at the end
	PullEdges    int64   `json:"pull_edges"`   // follows of them
	Edges        int64   `json:"edges"`        // follows at the end
}

// End is the state of the users' Redis keys at the end of a run. A
// built inbox holds Inbox[u] entries (-1: no inbox in Redis), of which
// Restored[u] its last rebuild wrote at once (Restore), the others came
// by deliveries; an inbox never built (Built[u] false) came by deliveries
// alone. Outbox[u] is the entries of u's outbox.
type End struct {
	Inbox, Restored []int16
	Built           []bool
	Outbox          []int16
}

const day = 24 * 3600

// maxPullSlot bounds PullsPerPage.
const maxPullSlot = 4096

// sim is one run's state: a few bytes a user, on top of the graph.
type sim struct {
	g   *Graph
	opt Options
	cap int
	rng *rand.Rand

	visitP     []float32 // daily visit probability
	postRate   []float32 // mean posts per visit
	lastActive []int32   // seconds, may be negative (before the start)
	inbox      []int16   // entries; -1: no inbox in Redis
	restored   []int16   // of them, written by the last rebuild
	built      []bool    // the inbox was built (Restore): reads find it
	posts      []uint32  // posts published (the outbox holds min(cap, posts))
	fans       []uint32
	mode       []feed.Mode
	outboxOK   []bool   // outbox built (holds its sentinel)
	unread     int      // authors in pull mode whose outbox is not built
	pulls      []uint16 // followees merged at read time
	extraIn    map[uint32][]uint32
	extraOut   map[uint32][]uint32
	extra      map[uint64]bool
	hours      []float64 // cumulative diurnal weights of the 24 hours
	res        *Result
	counting   bool
	now        *Counts
}

// Run simulates opt over g and returns the counts.
func Run(g *Graph, opt Options) (*Result, error) {
	a := opt.Activity
	switch {
	case a.DailyActive <= 0 || a.DailyActive >= 1:
		return nil, fmt.Errorf("capacity: the daily active share must be in (0, 1)")
	case a.PagesPerVisit < 1 || a.PostsPerVisit < 0 || a.FollowsPerVisit < 0:
		return nil, fmt.Errorf("capacity: pages per visit must be at least 1, posts and follows per visit not negative")
	case a.Diurnal < 0 || a.Diurnal >= 1:
		return nil, fmt.Errorf("capacity: the diurnal amplitude must be in [0, 1)")
	case opt.Days <= 0 || opt.WarmupDays < 0:
		return nil, fmt.Errorf("capacity: days must be positive, warm-up days not negative")
	case opt.Settings.PullThreshold < 0:
		return nil, fmt.Errorf("capacity: the pull threshold must not be negative")
	}
	cap := feed.InboxCapOr(opt.Settings.InboxCap)
	if cap > math.MaxInt16 {
		return nil, fmt.Errorf("capacity: an inbox cap above %d", math.MaxInt16)
	}
	n := g.Users
	s := &sim{
		g: g, opt: opt, cap: cap,
		rng:        rand.New(rand.NewPCG(opt.Seed, 0xda942042e4dd58b5)),
		visitP:     make([]float32, n),
		postRate:   make([]float32, n),
		lastActive: make([]int32, n),
		inbox:      make([]int16, n),
		restored:   make([]int16, n),
		built:      make([]bool, n),
		posts:      make([]uint32, n),
		fans:       make([]uint32, n),
		mode:       make([]feed.Mode, n),
		outboxOK:   make([]bool, n),
		pulls:      make([]uint16, n),
		extraIn:    map[uint32][]uint32{},
		extraOut:   map[uint32][]uint32{},
		extra:      map[uint64]bool{},
		res: &Result{
			PullsPerPage: make([]int64, maxPullSlot+1),
			InboxSizes:   make([]int64, cap+1),
			UnbuiltSizes: make([]int64, cap+1),
			OutboxSizes:  make([]int64, cap+1),
		},
	}
	var sum float64
	for h := range 24 {
		sum += 1 + a.Diurnal*math.Cos(2*math.Pi*float64(h-20)/24)
		s.hours = append(s.hours, sum)
	}
	// Each user's rates, and when they were last seen before the start:
	// days since the last visit are geometric in the visit probability.
	beta := a.DailyActive / (1 - a.DailyActive)
	sigma := a.PostsSigma
	if sigma <= 0 {
		sigma = 1.5
	}
	mu := math.Log(max(a.PostsPerVisit, 1e-9)) - sigma*sigma/2
	for u := range n {
		p := math.Pow(s.rng.Float64(), 1/beta)
		s.visitP[u] = float32(max(p, 1e-6))
		s.postRate[u] = float32(math.Exp(mu + sigma*s.rng.NormFloat64()))
		if a.PostsPerVisit == 0 {
			s.postRate[u] = 0
		}
		away := min(math.Floor(math.Log(1-s.rng.Float64())/math.Log1p(-min(p, 0.999999))), 3650)
		s.lastActive[u] = -int32(away*day) - int32(s.rng.IntN(day))
		s.inbox[u] = -1
		s.fans[u] = uint32(len(g.Followers(uint32(u))))
	}
	// The graph was built by follows: each follow that crossed the
	// threshold put its followee in pull mode (Service.Follow).
	for u := range n {
		if feed.EntersPull(feed.PushMode, int(s.fans[u]), opt.Settings.PullThreshold) {
			s.setPull(uint32(u))
		}
	}
	if opt.OnStart != nil {
		opt.OnStart(s.lastActive, s.mode)
	}
	total := opt.WarmupDays + int(math.Ceil(opt.Days))
	end := int64(float64(opt.WarmupDays)*day + opt.Days*day)
	var visits []Visit
	for d := range total {
		s.counting = d >= opt.WarmupDays
		visits = s.dayVisits(d, visits[:0], end)
		for i := range visits {
			v := &visits[i]
			if s.counting {
				h := int((v.At - int64(opt.WarmupDays)*day) / 3600)
				for len(s.res.Hours) <= h {
					s.res.Hours = append(s.res.Hours, Counts{})
				}
				s.now = &s.res.Hours[h]
			} else {
				s.now = &Counts{}
			}
			s.visit(v)
			if s.counting && opt.OnVisit != nil {
				opt.OnVisit(*v)
			}
		}
		if opt.Progress != nil {
			opt.Progress("simulated days", d+1, total)
		}
	}
	// Hours of a fractional last day that saw no visit are still hours.
	for len(s.res.Hours) < int(math.Ceil(opt.Days*24)) {
		s.res.Hours = append(s.res.Hours, Counts{})
	}
	for u := range n {
		switch {
		case s.built[u]:
			s.res.InboxSizes[s.inbox[u]]++
		case s.inbox[u] >= 0:
			s.res.UnbuiltSizes[s.inbox[u]]++
		}
		if s.posts[u] > 0 {
			s.res.OutboxSizes[min(int(s.posts[u]), cap)]++
		}
		if s.mode[u] == feed.PullMode {
			s.res.PullAuthors++
			s.res.PullEdges += int64(s.fans[u])
		}
		s.res.Edges += int64(s.fans[u])
	}
	if opt.OnEnd != nil {
		outbox := make([]int16, n)
		for u := range n {
			outbox[u] = int16(min(int(s.posts[u]), cap))
		}
		opt.OnEnd(End{Inbox: s.inbox, Restored: s.restored, Built: s.built, Outbox: outbox})
	}
	return s.res, nil
}

// dayVisits draws the visits of day d that start before end, in time
// order: each user visits with their probability, at an hour of the
// diurnal cycle.
func (s *sim) dayVisits(d int, out []Visit, end int64) []Visit {
	a := s.opt.Activity
	for u := range s.g.Users {
		if s.rng.Float32() >= s.visitP[u] {
			continue
		}
		h, _ := slices.BinarySearch(s.hours, s.rng.Float64()*s.hours[23])
		at := int64(d)*day + int64(h)*3600 + int64(s.rng.IntN(3600))
		pages := max(1, int(math.Round(math.Exp(math.Log(a.PagesPerVisit)-0.5+s.rng.NormFloat64()))))
		v := Visit{At: at, User: uint32(u), Pages: pages, Posts: poisson(s.rng, float64(s.postRate[u]))}
		for range poisson(s.rng, a.FollowsPerVisit) {
			v.Follows = append(v.Follows, s.g.DrawFollowee(s.rng))
		}
		if at < end {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b Visit) int { return int(a.At - b.At) })
	return out
}

// visit applies one visit: the reads (touching the user's activity, which
// may regenerate their inbox), the posts, then the follows.
func (s *sim) visit(v *Visit) {
	u, c := v.User, s.now
	c.Visits++
	st := s.opt.Settings
	prev, now := time.Unix(int64(s.lastActive[u]), 0), time.Unix(v.At, 0)
	if !s.built[u] || feed.Regenerates(prev, now, st.ActiveWindow) {
		// An inbox never built is rebuilt by the read that finds it
		// (ErrInboxLost), deliveries to it notwithstanding; a returning
		// user's before they read (Service.touch).
		s.rebuild(u)
	}
	if feed.TouchDue(prev, now) {
		s.lastActive[u] = int32(v.At)
		c.Touches++
	}
	if s.pulls[u] > 0 && s.unread > 0 {
		// The first read of a pull-mode outbox that was never read rebuilds
		// it from the database (redis.Outbox). (Once every such outbox
		// was read, no visit needs to look.)
		s.eachFollowee(u, func(f uint32) {
			if feed.Merged(s.mode[f]) && !s.outboxOK[f] {
				s.outboxOK[f] = true
				s.unread--
				c.OutboxBuilds++
			}
		})
	}
	c.Pages += int64(v.Pages)
	c.PullReads += int64(v.Pages) * int64(s.pulls[u])
	s.res.PullsPerPage[min(int(s.pulls[u]), maxPullSlot)] += int64(v.Pages)
	for range v.Posts {
		s.post(u, v.At)
	}
	for _, f := range v.Follows {
		s.follow(u, f)
	}
}

// post is a post job (fanout.postWorker): the mode is settled, the outbox
// written, the author's own inbox and, in push mode, every active
// follower's.
func (s *sim) post(u uint32, at int64) {
	c, st := s.now, s.opt.Settings
	c.Posts++
	c.PostJobs++
	if feed.EntersPull(s.mode[u], int(s.fans[u]), st.PullThreshold) {
		s.setPull(u)
		c.EnteredPull++
	}
	s.posts[u]++
	s.deliver(u)
	if !feed.Pushed(s.mode[u]) {
		return
	}
	split := cmp.Or(max(st.SplitSize, 0), 10000)
	if fans := int(s.fans[u]); fans > split {
		c.BatchJobs += int64((fans+split-1)/split - 1)
	}
	since := feed.ActiveSince(at*1000, st.ActiveWindow)
	s.eachFollower(u, func(f uint32) {
		if feed.IsActive(int64(s.lastActive[f])*1000, since) {
			s.deliver(f)
		}
	})
}

func (s *sim) deliver(u uint32) {
	s.now.Deliveries++
	s.add(u, 1)
}

// add puts k newer entries in u's inbox; past the cap, the oldest (the
// restored ones first) are trimmed. Delivering to a missing inbox writes
// the entry anyway (redis.Inbox.Deliver).
func (s *sim) add(u uint32, k int) {
	n := int(max(s.inbox[u], 0)) + k
	if over := n - s.cap; over > 0 {
		s.restored[u] = int16(max(int(s.restored[u])-over, 0))
	}
	s.inbox[u] = int16(min(n, s.cap))
}

// follow is Service.Follow and its follow job (fanout.followWorker): a new
// follow counts, may put the followee in pull mode, and otherwise copies
// the followee's newest posts into the follower's inbox.
func (s *sim) follow(u, f uint32) {
	key := uint64(u)<<32 | uint64(f)
	if u == f || s.g.Follows(u, f) || s.extra[key] {
		return // SetFollow is idempotent: no change, no job
	}
	c, st := s.now, s.opt.Settings
	s.extra[key] = true
	s.extraIn[f] = append(s.extraIn[f], u)
	s.extraOut[u] = append(s.extraOut[u], f)
	s.fans[f]++
	c.Follows++
	if feed.EntersPull(s.mode[f], int(s.fans[f]), st.PullThreshold) {
		s.setPull(f) // counts u too
		c.EnteredPull++
	} else if feed.Merged(s.mode[f]) {
		s.pulls[u]++
	}
	if feed.Merged(s.mode[f]) {
		return // merged at read time; nothing to copy
	}
	// The outbox holds the newest cap posts; the copy takes the newest
	// BackfillSize of them.
	k := min(int(s.posts[f]), s.cap, feed.BackfillSize(st.Backfill, st.InboxCap))
	if k > 0 {
		c.Backfilled += int64(k)
		s.add(u, k)
	}
}

// rebuild regenerates u's inbox (Service.rebuild): the newest cap posts of
// u and of the authors u follows who are not merged at read time.
func (s *sim) rebuild(u uint32) {
	n := int(s.posts[u])
	for _, fs := range [][]uint32{s.g.Followees(u), s.extraOut[u]} {
		for _, f := range fs {
			if n >= s.cap {
				break
			}
			if !feed.Merged(s.mode[f]) {
				n += int(s.posts[f])
			}
		}
	}
	n = min(n, s.cap)
	s.inbox[u] = int16(max(int(s.inbox[u]), n)) // Restore merges
	s.restored[u] = int16(n)
	s.built[u] = true
	s.now.Rebuilds++
	s.now.RebuiltEntries += int64(n)
}

// setPull puts u in pull mode: every follower now merges u's outbox.
func (s *sim) setPull(u uint32) {
	s.mode[u] = feed.PullMode
	if !s.outboxOK[u] {
		s.unread++
	}
	s.eachFollower(u, func(f uint32) {
		if s.pulls[f] < math.MaxUint16 {
			s.pulls[f]++
		}
	})
}

func (s *sim) eachFollower(u uint32, fn func(uint32)) {
	for _, f := range s.g.Followers(u) {
		fn(f)
	}
	for _, f := range s.extraIn[u] {
		fn(f)
	}
}

func (s *sim) eachFollowee(u uint32, fn func(uint32)) {
	for _, f := range s.g.Followees(u) {
		fn(f)
	}
	for _, f := range s.extraOut[u] {
		fn(f)
	}
}

// poisson draws from a Poisson distribution of mean m (Knuth's method for
// small means, a rounded normal for large ones).
func poisson(rng *rand.Rand, m float64) int {
	switch {
	case m <= 0:
		return 0
	case m > 30:
		return max(0, int(math.Round(m+math.Sqrt(m)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-m), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
