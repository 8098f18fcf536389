package capacity_test

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/capacity"
)

func graph(t *testing.T, users int, mean float64) *capacity.Graph {
	t.Helper()
	g, err := capacity.NewGraph(capacity.GraphOptions{Users: users, FollowsMean: mean, ZipfS: 0.78, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGraphShape: the lists are distinct, sorted, never the user, the two
// directions hold the same edges, the mean is near the asked one, and the
// follower counts are heavy-tailed: the most followed user has hundreds of
// times the median.
func TestGraphShape(t *testing.T) {
	g := graph(t, 20000, 50)
	var in []int
	edges := 0
	for u := range uint32(g.Users) {
		out := g.Followees(u)
		if !slices.IsSorted(out) || slices.Contains(out, u) || len(slices.Compact(slices.Clone(out))) != len(out) {
			t.Fatalf("followees of %d: %v", u, out)
		}
		for _, v := range out {
			if _, ok := slices.BinarySearch(g.Followers(v), u); !ok {
				t.Fatalf("%d follows %d but is not among its followers", u, v)
			}
		}
		edges += len(out)
		in = append(in, len(g.Followers(u)))
	}
	if edges != g.Edges() {
		t.Fatalf("edges %d, Edges() %d", edges, g.Edges())
	}
	if mean := float64(edges) / float64(g.Users); math.Abs(mean-50) > 5 {
		t.Errorf("mean followees %.1f, want about 50", mean)
	}
	slices.Sort(in)
	median, top := in[len(in)/2], in[len(in)-1]
	if top < 200*max(median, 1) {
		t.Errorf("follower counts: median %d, top %d: not heavy-tailed", median, top)
	}
}

func options(threshold int, window time.Duration) capacity.Options {
	return capacity.Options{
		Settings: capacity.Settings{PullThreshold: threshold, ActiveWindow: window},
		Activity: capacity.Activity{DailyActive: 0.3, PagesPerVisit: 5, PostsPerVisit: 1, FollowsPerVisit: 0.2, Diurnal: 0.6},
		Days:     2, WarmupDays: 3, Seed: 3,
	}
}

// TestRunRules: the counts follow the decision rules. With pull mode and
// activity off, a post reaches its author and every follower; with a
// threshold of 1, every followed author is in pull mode from the start and
// a post reaches its author alone (the few authors nobody follows push).
// Pull reads happen only with pull mode on. The same seed gives the same
// counts.
func TestRunRules(t *testing.T) {
	g := graph(t, 5000, 20)
	var fanout, posts int64
	opt := options(0, 0)
	opt.Activity.FollowsPerVisit = 0 // the audience stays the graph's
	opt.OnVisit = nil
	push, err := capacity.Run(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Replay to know who posted: the counted visits, in order.
	opt.OnVisit = func(v capacity.Visit) {
		posts += int64(v.Posts)
		fanout += int64(v.Posts) * int64(1+len(g.Followers(v.User)))
	}
	again, err := capacity.Run(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sum2 capacity.Counts
	for i := range push.Hours {
		sum.Deliveries += push.Hours[i].Deliveries
		sum.PullReads += push.Hours[i].PullReads
		sum2.Deliveries += again.Hours[i].Deliveries
	}
	if sum.Deliveries != fanout || sum2.Deliveries != fanout || posts == 0 {
		t.Fatalf("push, everyone active: %d deliveries (again %d), want %d for %d posts", sum.Deliveries, sum2.Deliveries, fanout, posts)
	}
	if sum.PullReads != 0 {
		t.Fatalf("pull reads with pull mode off: %d", sum.PullReads)
	}
	// No inbox is built before the first day: each user's first read
	// rebuilds theirs, and only that read (no activity window).
	opt.WarmupDays = 0
	visitors := map[uint32]bool{}
	opt.OnVisit = func(v capacity.Visit) { visitors[v.User] = true }
	fresh, err := capacity.Run(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	var rebuilds int64
	for _, h := range fresh.Hours {
		rebuilds += h.Rebuilds
	}
	if rebuilds != int64(len(visitors)) {
		t.Fatalf("%d rebuilds for %d users who visited", rebuilds, len(visitors))
	}
	if !reflect.DeepEqual(push.InboxSizes, again.InboxSizes) {
		t.Fatal("the same seed gave other inboxes")
	}

	opt = options(1, 0)
	opt.Activity.FollowsPerVisit = 0
	var lone int64
	opt.OnVisit = func(v capacity.Visit) {
		if len(g.Followers(v.User)) == 0 {
			lone += int64(v.Posts)
		}
	}
	pull, err := capacity.Run(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	var d, p, reads int64
	for _, h := range pull.Hours {
		d, p, reads = d+h.Deliveries, p+h.Posts, reads+h.PullReads
	}
	if d != p || reads == 0 || lone > p {
		t.Fatalf("threshold 1: %d deliveries for %d posts, %d pull reads", d, p, reads)
	}
}

// TestRunActivityWindow: with a window, fan-out skips followers idle past
// it, so deliveries fall; a wider window delivers to more.
func TestRunActivityWindow(t *testing.T) {
	g := graph(t, 5000, 20)
	total := func(window time.Duration) int64 {
		r, err := capacity.Run(g, options(0, window))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, h := range r.Hours {
			n += h.Deliveries
		}
		return n
	}
	all, month, week := total(0), total(30*24*time.Hour), total(7*24*time.Hour)
	if !(week < month && month < all) {
		t.Fatalf("deliveries: window off %d, 30 days %d, 7 days %d: want fewer with a shorter window", all, month, week)
	}
}
