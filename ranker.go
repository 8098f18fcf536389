package feed

import (
	"math"
	"slices"
	"sync"
	"time"
)

// The ranked timeline's model (documented on RankSettings): the features,
// the score, and the order of one first page's candidates.

// RankFeatures names the model's features, in the order of Rank.Features'
// stored form.
var RankFeatures = [...]string{"recency", "affinity", "follow_age", "engagement", "liked"}

// authorFeatures returns the features that depend only on the author of
// a candidate of viewerID: affinity and follow_age (the rest of the model
// is ranker.add).
func (rs RankSettings) authorFeatures(author, viewerID int64, a Affinity, now time.Time) [2]float64 {
	f := [2]float64{a.Likes / (a.Likes + rs.AffinityPrior), 0}
	if !a.FollowedAt.IsZero() && author != viewerID {
		f[1] = 1 - Decay(now.Sub(a.FollowedAt), rs.FollowHalfLife)
	}
	return f
}

// ranker scores one first page's candidates, given in feed order (add),
// and returns them best first (sorted). An author's features are computed
// once, not once per post, and the sort moves 16-byte keys, not items;
// its scratch space is reused from page to page (rankers).
type ranker struct {
	rs      RankSettings
	viewer  int64
	now     time.Time
	aff     map[int64]Affinity
	authors map[int64][2]float64
	items   []RankedItem // scored, in feed order
	keys    []rankKey
}

// rankKey is an item's place in the sort: its score as an integer that
// sorts the other way (rankOrder), then its index in feed order (equal
// scores keep feed order).
type rankKey struct {
	k uint64
	i int
}

// rankOrder maps a score to an integer that sorts in the opposite order
// (the best score first, ascending): the IEEE 754 bits, made to sort as
// unsigned integers (negative scores' bits all flipped, the others' sign
// bit set), then inverted. (Scores are finite, and never -0: the settings
// are finite and the features in [0, 1], so each term is +0 or more.)
func rankOrder(score float64) uint64 {
	b := math.Float64bits(score)
	if b>>63 == 1 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return ^b
}

var rankers = sync.Pool{New: func() any { return &ranker{authors: map[int64][2]float64{}} }}

func newRanker(rs RankSettings, viewerID int64, aff map[int64]Affinity, now time.Time) *ranker {
	r := rankers.Get().(*ranker)
	r.rs, r.viewer, r.now, r.aff = rs, viewerID, now, aff
	return r
}

// release returns r to rankers; r and what sorted did not return must not
// be used afterwards.
func (r *ranker) release() {
	clear(r.authors)
	r.aff, r.items, r.keys = nil, r.items[:0], r.keys[:0]
	rankers.Put(r)
}

// add scores candidate c, of feed score entryScore, by the model of
// RankSettings, given its author's features (authorFeatures, once per
// author). The age is now.Sub of the post's creation, which saturates: a
// score in ns (ms*1e6) would overflow for scores an inbox accepts (up to
// ±2^47 ms).
func (r *ranker) add(c RankCandidate, entryScore int64) {
	af, ok := r.authors[c.AuthorID]
	if !ok {
		af = r.rs.authorFeatures(c.AuthorID, r.viewer, r.aff[c.AuthorID], r.now)
		r.authors[c.AuthorID] = af
	}
	rs := &r.rs
	likes := float64(c.Likes + 1)
	it := RankedItem{PostID: c.PostID, Score: entryScore, Features: [len(RankFeatures)]float64{
		Decay(r.now.Sub(time.UnixMilli(c.Score)), rs.RecencyHalfLife),
		af[0],
		af[1],
		likes / (likes + rs.EngagementPrior),
		0,
	}}
	if c.LikedByViewer {
		it.Features[4] = 1
	}
	f := &it.Features
	it.RankScore = rs.WRecency*f[0] + rs.WAffinity*f[1] + rs.WFollowAge*f[2] + rs.WEngagement*f[3] - rs.WLiked*f[4]
	r.keys = append(r.keys, rankKey{rankOrder(it.RankScore), len(r.items)})
	r.items = append(r.items, it)
}

// sorted returns the items added, best first, in a new slice (kept by the
// snapshot); nil for none.
func (r *ranker) sorted() []RankedItem {
	if len(r.items) == 0 {
		return nil
	}
	slices.SortFunc(r.keys, func(a, b rankKey) int {
		if a.k != b.k {
			if a.k < b.k {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	out := make([]RankedItem, len(r.items))
	for k, key := range r.keys {
		out[k] = r.items[key.i]
	}
	return out
}

func newRank(score float64, f [len(RankFeatures)]float64) Rank {
	m := make(map[string]float64, len(f))
	for i, name := range RankFeatures {
		m[name] = f[i]
	}
	return Rank{Score: score, Features: m}
}

// Decay is the weight of something age old under halfLife: 2^(-age/halfLife)
// (1 for a negative age). The one decay of the model: recency, the likes of
// affinity and follow age all use it.
func Decay(age, halfLife time.Duration) float64 {
	return math.Exp2(-max(age, 0).Hours() / halfLife.Hours())
}
