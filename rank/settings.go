// Package rank is the ranked timeline's model: its settings, the features
// and score of a candidate post, the order of a first page's candidates,
// and the stored forms of a ranked scroll (snapshot items and cursors). It
// is computation only and imports nothing but the standard library; the
// root package reads the candidates and keeps the snapshots (rank.go).
package rank

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Settings are the knobs of the model. Every field is a setting of the
// command (cmd/feedd/rankflags.go) with the default of Default.
//
// The model is a weighted sum of seven features, each in [0, 1]:
//
//	recency     2^(-age/RecencyHalfLife): how fresh the post is
//	affinity    n/(n+AffinityPrior), n = the viewer's likes of the author's
//	            posts in the last AffinityWindow, each weighing
//	            2^(-age/AffinityHalfLife): who the viewer shows interest in
//	follow_age  1-2^(-d/FollowHalfLife), d = how long the viewer has
//	            followed the author (0 for the viewer's own posts)
//	engagement  (likes+1)/(likes+1+EngagementPrior): the post's likes, with
//	            a prior so that a new post is not buried
//	liked       1 when the viewer already likes the post
//	comments    n/(n+CommentPrior), n = the people the viewer interacts
//	            with (whose posts the viewer liked in the last
//	            AffinityWindow) who commented on the post in the last
//	            Window, its author left out: what they talk about
//	reposts     n/(n+RepostPrior), n = the people the viewer interacts
//	            with (as for comments) who reposted the post in the last
//	            Window, its author left out: what they pass on
//
// score = WRecency·recency + WAffinity·affinity + WFollowAge·follow_age +
// WEngagement·engagement − WLiked·liked + WComments·comments +
// WReposts·reposts. Ties keep feed order.
type Settings struct {
	Window           time.Duration // candidates: timeline entries at most this old
	Candidates       int           // at most this many entries are ranked
	SnapshotTTL      time.Duration // how long a ranked scroll's order is kept
	RecencyHalfLife  time.Duration
	AffinityWindow   time.Duration
	AffinityHalfLife time.Duration
	AffinityPrior    float64
	FollowHalfLife   time.Duration
	EngagementPrior  float64
	CommentPrior     float64
	RepostPrior      float64
	WRecency         float64
	WAffinity        float64
	WFollowAge       float64
	WEngagement      float64
	WLiked           float64
	WComments        float64
	WReposts         float64
}

// Default returns the documented defaults of the model.
func Default() Settings {
	return Settings{
		Window:           72 * time.Hour,
		Candidates:       150,
		SnapshotTTL:      30 * time.Minute,
		RecencyHalfLife:  12 * time.Hour,
		AffinityWindow:   30 * 24 * time.Hour,
		AffinityHalfLife: 7 * 24 * time.Hour,
		AffinityPrior:    2,
		FollowHalfLife:   30 * 24 * time.Hour,
		EngagementPrior:  10,
		CommentPrior:     1,
		RepostPrior:      1,
		WRecency:         1,
		WAffinity:        2,
		WFollowAge:       0.2,
		WEngagement:      0.5,
		WLiked:           1.5,
		WComments:        0.5,
		WReposts:         0.5,
	}
}

// MaxCandidates bounds Settings.Candidates (and so a ranked cursor's
// position).
const MaxCandidates = 2000

// Validate returns an error describing the first unusable setting.
func (rs Settings) Validate() error {
	switch {
	case rs.Window <= 0:
		return errors.New("rank window must be positive")
	case rs.Candidates < 1 || rs.Candidates > MaxCandidates:
		return fmt.Errorf("rank candidates must be from 1 to %d", MaxCandidates)
	case rs.SnapshotTTL < time.Second:
		return errors.New("rank snapshot TTL must be at least 1s")
	case rs.RecencyHalfLife <= 0 || rs.AffinityHalfLife <= 0 || rs.FollowHalfLife <= 0:
		return errors.New("rank half-lives must be positive")
	case rs.AffinityWindow <= 0:
		return errors.New("rank affinity window must be positive")
	case rs.AffinityPrior <= 0 || rs.EngagementPrior <= 0 || rs.CommentPrior <= 0 || rs.RepostPrior <= 0:
		return errors.New("rank priors must be positive")
	case rs.WRecency < 0 || rs.WAffinity < 0 || rs.WFollowAge < 0 || rs.WEngagement < 0 || rs.WLiked < 0 || rs.WComments < 0 || rs.WReposts < 0:
		return errors.New("rank weights must not be negative")
	}
	for _, x := range []float64{rs.AffinityPrior, rs.EngagementPrior, rs.CommentPrior, rs.RepostPrior, rs.WRecency, rs.WAffinity, rs.WFollowAge, rs.WEngagement, rs.WLiked, rs.WComments, rs.WReposts} {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return errors.New("rank priors and weights must be finite numbers")
		}
	}
	return nil
}
