package capacity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Graph is a follow graph in compressed sparse rows of uint32 user
// indexes (0..Users-1): for every user, the users they follow (Followees)
// and the users who follow them (Followers), each list ascending. 100M
// edges take 800 MB both ways.
type Graph struct {
	Users     int
	outStart  []uint64 // user u follows outEdges[outStart[u]:outStart[u+1]]
	outEdges  []uint32
	inStart   []uint64 // user u is followed by inEdges[inStart[u]:inStart[u+1]]
	inEdges   []uint32
	rankOf    []uint32 // popularity rank of each user (0: the most followed by design)
	followees *aliasTable
}

// Followees returns the users u follows, ascending (do not modify).
func (g *Graph) Followees(u uint32) []uint32 { return g.outEdges[g.outStart[u]:g.outStart[u+1]] }

// Followers returns the users who follow u, ascending (do not modify).
func (g *Graph) Followers(u uint32) []uint32 { return g.inEdges[g.inStart[u]:g.inStart[u+1]] }

// Edges is the number of follows.
func (g *Graph) Edges() int { return len(g.outEdges) }

// Follows reports whether u follows v in the graph as built.
func (g *Graph) Follows(u, v uint32) bool {
	_, ok := slices.BinarySearch(g.Followees(u), v)
	return ok
}

// GraphOptions shape a synthetic follow graph.
type GraphOptions struct {
	Users int `json:"users,omitempty"`
	// Kind is "zipf" (the default) or "uniform".
	Kind string `json:"kind"`
	// FollowsMean is the mean number of users a user follows; the counts
	// are log-normal with FollowsSigma (0: 1.0) around it, at least 1 and
	// at most MaxFollows (0: 5000) and half the users.
	FollowsMean  float64 `json:"follows_mean"`
	FollowsSigma float64 `json:"follows_sigma"`
	MaxFollows   int     `json:"max_follows"`
	// ZipfS is the exponent of the followee's popularity by rank, rank
	// r (from 1) drawn with weight r^-ZipfS: follower counts then fall
	// off as a power law of exponent 1+1/ZipfS (0.78: 2.28).
	ZipfS float64 `json:"zipf_s"`
	Seed  uint64  `json:"seed"`
	// Progress, when set, is told of the users done.
	Progress func(stage string, done, total int) `json:"-"`
}

// NewGraph builds the graph that opt describes: every user draws their
// number of followees, then that many distinct followees by popularity
// (zipf) or uniformly. Deterministic for a seed.
func NewGraph(opt GraphOptions) (*Graph, error) {
	n := opt.Users
	switch {
	case n < 2 || n > math.MaxUint32-1:
		return nil, fmt.Errorf("capacity: users must be from 2 to %d", uint32(math.MaxUint32-1))
	case opt.FollowsMean < 1:
		return nil, fmt.Errorf("capacity: the mean followee count must be at least 1")
	case opt.Kind != "" && opt.Kind != "zipf" && opt.Kind != "uniform":
		return nil, fmt.Errorf("capacity: graph %q: want zipf or uniform", opt.Kind)
	case opt.ZipfS < 0:
		return nil, fmt.Errorf("capacity: the zipf exponent must not be negative")
	}
	sigma := opt.FollowsSigma
	if sigma <= 0 {
		sigma = 1.0
	}
	maxF := opt.MaxFollows
	if maxF <= 0 {
		maxF = 5000
	}
	maxF = max(1, min(maxF, n/2))
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	g := &Graph{Users: n, rankOf: make([]uint32, n)}
	// Ranks are a random permutation, so that popularity has nothing to do
	// with the order of ids.
	for i, r := range rng.Perm(n) {
		g.rankOf[i] = uint32(r)
	}
	weights := make([]float64, n)
	for u := range n {
		weights[u] = 1
		if opt.Kind != "uniform" {
			weights[u] = math.Pow(float64(g.rankOf[u])+1, -opt.ZipfS)
		}
	}
	g.followees = newAlias(weights)
	weights = nil

	// Out-degrees, then the edges, each user's list sorted and distinct.
	mu := math.Log(opt.FollowsMean) - sigma*sigma/2
	g.outStart = make([]uint64, n+1)
	for u := range n {
		d := int(math.Round(math.Exp(mu + sigma*rng.NormFloat64())))
		g.outStart[u+1] = g.outStart[u] + uint64(min(max(d, 1), maxF))
	}
	g.outEdges = make([]uint32, g.outStart[n])
	for u := range n {
		list := g.outEdges[g.outStart[u]:g.outStart[u+1]:g.outStart[u+1]]
		g.drawFollowees(rng, uint32(u), list)
		if opt.Progress != nil && (u%65536 == 0 || u == n-1) {
			opt.Progress("follow graph", u+1, n)
		}
	}
	// Followers: the same edges by followee.
	g.inStart = make([]uint64, n+1)
	for _, v := range g.outEdges {
		g.inStart[v+1]++
	}
	for u := range n {
		g.inStart[u+1] += g.inStart[u]
	}
	g.inEdges = make([]uint32, len(g.outEdges))
	fill := slices.Clone(g.inStart[:n])
	for u := range n {
		for _, v := range g.Followees(uint32(u)) {
			g.inEdges[fill[v]] = uint32(u)
			fill[v]++
		}
	}
	return g, nil
}

// drawFollowees fills list with distinct followees of u (not u), sorted.
func (g *Graph) drawFollowees(rng *rand.Rand, u uint32, list []uint32) {
	have := 0
	for have < len(list) {
		for i := have; i < len(list); i++ {
			list[i] = g.followees.draw(rng)
		}
		slices.Sort(list)
		// Keep distinct values other than u, at the front.
		k := 0
		for i, v := range list {
			if v == u || (k > 0 && list[k-1] == v) {
				continue
			}
			list[k] = list[i]
			k++
		}
		have = k
	}
}

// DrawFollowee draws a followee by popularity, as the graph's edges were.
func (g *Graph) DrawFollowee(rng *rand.Rand) uint32 { return g.followees.draw(rng) }

// aliasTable draws indexes with given weights in O(1) (Walker's alias
// method): 8 bytes an index.
type aliasTable struct {
	prob  []float32
	alias []uint32
}

func newAlias(w []float64) *aliasTable {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	t := &aliasTable{prob: make([]float32, n), alias: make([]uint32, n)}
	scaled := make([]float64, n)
	var small, large []uint32
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, uint32(i))
		} else {
			large = append(large, uint32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.prob[s], t.alias[s] = float32(scaled[s]), l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		t.prob[i], t.alias[i] = 1, i
	}
	return t
}

func (t *aliasTable) draw(rng *rand.Rand) uint32 {
	i := uint32(rng.IntN(len(t.prob)))
	if rng.Float32() < t.prob[i] {
		return i
	}
	return t.alias[i]
}
