package rank

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// rankWorld is a random first page's inputs: candidates in feed order, the
// viewer's affinities, and the time of the page.
type rankWorld struct {
	rs     Settings
	viewer int64
	now    time.Time
	cands  []Candidate
	aff    map[int64]Affinity
}

func newRankWorld(r *rand.Rand, n int) rankWorld {
	rs := Default()
	if r.IntN(2) == 0 { // other settings, drawn
		rs.RecencyHalfLife = time.Duration(1+r.IntN(48)) * time.Hour
		rs.AffinityPrior = 0.5 + r.Float64()*4
		rs.FollowHalfLife = time.Duration(1+r.IntN(60)) * 24 * time.Hour
		rs.EngagementPrior = 1 + r.Float64()*20
		rs.WRecency, rs.WAffinity, rs.WFollowAge = r.Float64()*3, r.Float64()*3, r.Float64()
		rs.WEngagement, rs.WLiked = r.Float64()*2, r.Float64()*3
		rs.CommentPrior, rs.WComments = 0.5+r.Float64()*3, r.Float64()*2
		rs.RepostPrior, rs.WReposts = 0.5+r.Float64()*3, r.Float64()*2
	}
	// A time of day with nanoseconds: the model's ages are exact to the
	// nanosecond, not to the millisecond of the scores.
	now := time.UnixMilli(1_800_000_000_000).Add(time.Duration(r.Int64N(int64(time.Hour))))
	w := rankWorld{rs: rs, viewer: 1, now: now, aff: map[int64]Affinity{}}
	score := now.UnixMilli() + int64(r.IntN(5000)) // some posts from the future (clock skew)
	for i := range n {
		score -= int64(r.IntN(3)) * int64(r.IntN(3_600_000)) // equal scores too
		author := int64(1 + r.IntN(30))
		w.cands = append(w.cands, Candidate{PostID: int64(10_000 - i), AuthorID: author, Score: score,
			Likes: r.IntN(3) * r.IntN(40), LikedByViewer: r.IntN(8) == 0, Commenters: r.IntN(2) * r.IntN(5), Reposters: r.IntN(2) * r.IntN(4)})
		if _, ok := w.aff[author]; !ok && r.IntN(3) > 0 {
			var a Affinity
			if r.IntN(2) == 0 {
				a.Likes = float64(r.IntN(3)) * r.Float64() * 5
			}
			if r.IntN(3) > 0 {
				a.FollowedAt = now.Add(-time.Duration(r.Int64N(int64(400 * 24 * time.Hour))))
			}
			w.aff[author] = a
		}
	}
	if n > 3 { // equal ranks: the same author, score and likes
		w.cands[n-1] = w.cands[n-2]
		w.cands[n-1].PostID--
	}
	return w
}

// rank ranks w's candidates.
func (w rankWorld) rank() []Item { return Order(w.rs, w.viewer, w.aff, w.now, w.cands) }

// TestRankModel checks the ranked timeline's model against its
// documentation (Settings), computed here from the formulas, with
// random candidates, affinities and settings: every feature, the score,
// and the order (by score, best first; equal scores in feed order).
func TestRankModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 7))
	exp2 := func(age, halfLife time.Duration) float64 {
		return math.Pow(2, -math.Max(float64(age), 0)/float64(halfLife))
	}
	for range 300 {
		w := newRankWorld(r, r.IntN(200))
		got := w.rank()
		if len(got) != len(w.cands) {
			t.Fatalf("seed %d: %d items of %d candidates", seed, len(got), len(w.cands))
		}
		place := map[int64]int{}
		for i, c := range w.cands {
			place[c.PostID] = i
		}
		rs := w.rs
		for k, it := range got {
			i, ok := place[it.PostID]
			if !ok {
				t.Fatalf("seed %d: item %d is no candidate", seed, it.PostID)
			}
			c := w.cands[i]
			a := w.aff[c.AuthorID]
			want := [len(Features)]float64{
				exp2(w.now.Sub(time.UnixMilli(c.Score)), rs.RecencyHalfLife),
				a.Likes / (a.Likes + rs.AffinityPrior),
				0,
				float64(c.Likes+1) / (float64(c.Likes+1) + rs.EngagementPrior),
				0,
				float64(c.Commenters) / (float64(c.Commenters) + rs.CommentPrior),
				float64(c.Reposters) / (float64(c.Reposters) + rs.RepostPrior),
			}
			if !a.FollowedAt.IsZero() && c.AuthorID != w.viewer {
				want[2] = 1 - exp2(w.now.Sub(a.FollowedAt), rs.FollowHalfLife)
			}
			if c.LikedByViewer {
				want[4] = 1
			}
			score := rs.WRecency*want[0] + rs.WAffinity*want[1] + rs.WFollowAge*want[2] + rs.WEngagement*want[3] - rs.WLiked*want[4] + rs.WComments*want[5] + rs.WReposts*want[6]
			if it.Score != c.Score || math.Abs(it.RankScore-score) > 1e-12 {
				t.Fatalf("seed %d: item %+v of candidate %+v: score %v, want %v", seed, it, c, it.RankScore, score)
			}
			for f := range want {
				if math.Abs(it.Features[f]-want[f]) > 1e-12 {
					t.Fatalf("seed %d: candidate %+v: %s %v, want %v", seed, c, Features[f], it.Features[f], want[f])
				}
			}
			view := it.View()
			if view.Score != it.RankScore || view.Features["recency"] != it.Features[0] || len(view.Features) != len(Features) {
				t.Fatalf("seed %d: view %+v of item %+v", seed, view, it)
			}
			if k > 0 {
				prev := got[k-1]
				if prev.RankScore < it.RankScore || (prev.RankScore == it.RankScore && place[prev.PostID] > i) {
					t.Fatalf("seed %d: %+v ranked before %+v", seed, prev, it)
				}
			}
		}
	}
}

// BenchmarkOrder is the model's share of a first ranked page: scoring and
// sorting 150 candidates of 30 authors.
func BenchmarkOrder(b *testing.B) {
	w := newRankWorld(rand.New(rand.NewPCG(1, 2)), 150)
	for b.Loop() {
		w.rank()
	}
}

// TestSettingsValidate: the defaults are valid, and each unusable
// setting is refused (an infinite weight would make scores of NaN, which
// have no order).
func TestSettingsValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := map[string]func(*Settings){
		"window":          func(rs *Settings) { rs.Window = 0 },
		"candidates":      func(rs *Settings) { rs.Candidates = MaxCandidates + 1 },
		"snapshot TTL":    func(rs *Settings) { rs.SnapshotTTL = time.Millisecond },
		"half-life":       func(rs *Settings) { rs.RecencyHalfLife = 0 },
		"affinity window": func(rs *Settings) { rs.AffinityWindow = -time.Hour },
		"prior":           func(rs *Settings) { rs.EngagementPrior = 0 },
		"comment prior":   func(rs *Settings) { rs.CommentPrior = 0 },
		"comment weight":  func(rs *Settings) { rs.WComments = -0.5 },
		"repost prior":    func(rs *Settings) { rs.RepostPrior = 0 },
		"repost weight":   func(rs *Settings) { rs.WReposts = -0.5 },
		"infinite prior":  func(rs *Settings) { rs.AffinityPrior = math.Inf(1) },
		"negative weight": func(rs *Settings) { rs.WLiked = -1 },
		"infinite weight": func(rs *Settings) { rs.WRecency = math.Inf(1) },
		"NaN weight":      func(rs *Settings) { rs.WEngagement = math.NaN() },
	}
	for name, spoil := range bad {
		rs := Default()
		spoil(&rs)
		if err := rs.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", name)
		}
	}
}

// TestRankerExtremeScores ranks posts at the ends of the scores an inbox
// accepts (±2^47 ms, redis's packed layout): a post from the far future is
// as recent as can be (recency 1), one from the far past has recency 0,
// and neither's age wraps around.
func TestRankerExtremeScores(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	got := Order(Default(), 1, nil, now, []Candidate{
		{PostID: 2, AuthorID: 2, Score: -1 << 47},
		{PostID: 1, AuthorID: 2, Score: 1<<47 - 1},
	})
	if got[0].PostID != 1 || got[0].Features[0] != 1 || got[1].Features[0] != 0 {
		t.Fatalf("ranked %+v; want post 1 first with recency 1, post 2 with recency 0", got)
	}
}
