package rank

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Features names the model's features (Settings), in the order of
// Item.Features.
var Features = [...]string{"recency", "affinity", "follow_age", "engagement", "liked", "comments", "reposts"}

// Candidate is what the model reads of a candidate post.
type Candidate struct {
	PostID        int64
	AuthorID      int64
	Score         int64 // the post's creation, ms: its feed entry's score
	Likes         int
	LikedByViewer bool
	// Commenters is how many people the viewer interacts with commented
	// on the post (feed.RankStore.Commenters), its author left out.
	Commenters int
	// Reposters is how many people the viewer interacts with reposted the
	// post (feed.RankStore.Reposters), its author left out.
	Reposters int
}

// Affinity is what a viewer's history says about one author.
type Affinity struct {
	// Likes is the viewer's likes of the author's posts since the window
	// start, each weighted 2^(-age/halfLife).
	Likes float64
	// FollowedAt is when the viewer started following the author; zero if
	// the viewer does not.
	FollowedAt time.Time
}

// Rank is a post's place in a ranked timeline: its score and the features
// it was computed from, by name.
type Rank struct {
	Score    float64            `json:"score"`
	Features map[string]float64 `json:"features"`
}

// Item is one entry of a ranked order (a snapshot): no map, so that
// ranking hundreds of candidates and keeping them allocates one slice;
// View makes the Rank of the few a page shows.
type Item struct {
	PostID    int64
	Score     int64                  // the entry's feed score (creation ms)
	RankScore float64                // the model's score
	Features  [len(Features)]float64 // in Features' order
}

// View returns the item's Rank, its features by name.
func (it *Item) View() Rank {
	m := make(map[string]float64, len(it.Features))
	for i, name := range Features {
		m[name] = it.Features[i]
	}
	return Rank{Score: it.RankScore, Features: m}
}

// Order scores cands, given in feed order, for viewerID at now by the model
// of rs, aff holding the viewer's affinity to their authors (an author
// absent has none), and returns them best first; equal scores keep feed
// order. Nil for no candidate.
func Order(rs Settings, viewerID int64, aff map[int64]Affinity, now time.Time, cands []Candidate) []Item {
	if len(cands) == 0 {
		return nil
	}
	items := make([]Item, len(cands))
	for i, c := range cands {
		items[i] = rs.score(c, viewerID, aff[c.AuthorID], now)
	}
	slices.SortStableFunc(items, func(a, b Item) int { return cmp.Compare(b.RankScore, a.RankScore) })
	return items
}

// score is the Item of candidate c, whose author the viewer has affinity a
// to. The post's age is now.Sub of its creation, which saturates (in
// nanoseconds, scores an inbox accepts, up to ±2^47 ms, would overflow).
func (rs Settings) score(c Candidate, viewerID int64, a Affinity, now time.Time) Item {
	likes := float64(c.Likes + 1)
	it := Item{PostID: c.PostID, Score: c.Score, Features: [len(Features)]float64{
		Decay(now.Sub(time.UnixMilli(c.Score)), rs.RecencyHalfLife),
		a.Likes / (a.Likes + rs.AffinityPrior),
		0,
		likes / (likes + rs.EngagementPrior),
		0,
		float64(c.Commenters) / (float64(c.Commenters) + rs.CommentPrior),
		float64(c.Reposters) / (float64(c.Reposters) + rs.RepostPrior),
	}}
	if !a.FollowedAt.IsZero() && c.AuthorID != viewerID {
		it.Features[2] = 1 - Decay(now.Sub(a.FollowedAt), rs.FollowHalfLife)
	}
	if c.LikedByViewer {
		it.Features[4] = 1
	}
	f := &it.Features
	it.RankScore = rs.WRecency*f[0] + rs.WAffinity*f[1] + rs.WFollowAge*f[2] + rs.WEngagement*f[3] - rs.WLiked*f[4] + rs.WComments*f[5] + rs.WReposts*f[6]
	return it
}

// Decay is the weight of something age old under halfLife: 2^(-age/halfLife)
// (1 for a negative age). The one decay of the model: recency, the likes of
// affinity and follow age all use it.
func Decay(age, halfLife time.Duration) float64 {
	return math.Exp2(-max(age, 0).Hours() / halfLife.Hours())
}
