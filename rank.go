package feed

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// RankSettings are the knobs of the ranked timeline's model. Every field is
// a setting of the command (cmd/feedd/config.go) with the default of
// DefaultRankSettings.
//
// The model is a weighted sum of five features, each in [0, 1]:
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
//
// score = WRecency·recency + WAffinity·affinity + WFollowAge·follow_age +
// WEngagement·engagement − WLiked·liked. Ties keep feed order.
type RankSettings struct {
	Window           time.Duration // candidates: timeline entries at most this old
	Candidates       int           // at most this many entries are ranked
	SnapshotTTL      time.Duration // how long a ranked scroll's order is kept
	RecencyHalfLife  time.Duration
	AffinityWindow   time.Duration
	AffinityHalfLife time.Duration
	AffinityPrior    float64
	FollowHalfLife   time.Duration
	EngagementPrior  float64
	WRecency         float64
	WAffinity        float64
	WFollowAge       float64
	WEngagement      float64
	WLiked           float64
}

// DefaultRankSettings returns the documented defaults of the ranked
// timeline.
func DefaultRankSettings() RankSettings {
	return RankSettings{
		Window:           72 * time.Hour,
		Candidates:       300,
		SnapshotTTL:      30 * time.Minute,
		RecencyHalfLife:  12 * time.Hour,
		AffinityWindow:   30 * 24 * time.Hour,
		AffinityHalfLife: 7 * 24 * time.Hour,
		AffinityPrior:    2,
		FollowHalfLife:   30 * 24 * time.Hour,
		EngagementPrior:  10,
		WRecency:         1,
		WAffinity:        2,
		WFollowAge:       0.2,
		WEngagement:      0.5,
		WLiked:           1.5,
	}
}

// MaxRankCandidates bounds RankSettings.Candidates.
const MaxRankCandidates = 2000

// Validate returns EINVALID describing the first unusable setting.
func (rs RankSettings) Validate() error {
	switch {
	case rs.Window <= 0:
		return Errorf(EINVALID, "rank window must be positive")
	case rs.Candidates < 1 || rs.Candidates > MaxRankCandidates:
		return Errorf(EINVALID, "rank candidates must be from 1 to %d", MaxRankCandidates)
	case rs.SnapshotTTL < time.Second:
		return Errorf(EINVALID, "rank snapshot TTL must be at least 1s")
	case rs.RecencyHalfLife <= 0 || rs.AffinityHalfLife <= 0 || rs.FollowHalfLife <= 0:
		return Errorf(EINVALID, "rank half-lives must be positive")
	case rs.AffinityWindow <= 0:
		return Errorf(EINVALID, "rank affinity window must be positive")
	case rs.AffinityPrior <= 0 || rs.EngagementPrior <= 0:
		return Errorf(EINVALID, "rank priors must be positive")
	case rs.WRecency < 0 || rs.WAffinity < 0 || rs.WFollowAge < 0 || rs.WEngagement < 0 || rs.WLiked < 0:
		return Errorf(EINVALID, "rank weights must not be negative")
	}
	return nil
}

// Rank is a post's place in a ranked timeline: its score and the features
// it was computed from, by name.
type Rank struct {
	Score    float64            `json:"score"`
	Features map[string]float64 `json:"features"`
}

// RankedItem is one entry of a ranked snapshot.
type RankedItem struct {
	PostID int64 `json:"p"`
	Score  int64 `json:"s"` // the entry's feed score (creation ms)
	Rank   Rank  `json:"r"`
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

// RankStore reads what the ranking model learns from.
// Implementations: sqlite.DB, postgres.DB.
type RankStore interface {
	// Affinity returns, for each of authorIDs that viewerID liked a post of
	// since `since` or follows, the Affinity; likes weigh
	// 2^(-(now-liked_at)/halfLife). One round trip.
	Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]Affinity, error)
}

// SnapshotStore keeps the order of ranked scrolls.
// Implementations: sqlite.DB, postgres.DB, redis.Snapshots;
// feedtest.TestSnapshotStore is the contract.
type SnapshotStore interface {
	// SaveSnapshot stores items as viewerID's snapshot id until expires.
	SaveSnapshot(ctx context.Context, viewerID int64, id string, items []RankedItem, now, expires time.Time) error
	// Snapshot returns at most limit items of viewerID's snapshot id after
	// skipping offset, and whether more follow. ENOTFOUND when there is no
	// such snapshot of viewerID or it has expired.
	Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]RankedItem, bool, error)
}

// RankedPage is one page of the ranked timeline. List[i].Rank holds the
// post's score and features.
type RankedPage struct {
	List []PostView
	Next *RankCursor // nil at the end
}

func (s *Service) rankSettings() RankSettings {
	if s.Rank != nil {
		return *s.Rank
	}
	return DefaultRankSettings()
}

// RankedTimeline returns a page of userID's ranked timeline. Without a
// cursor it ranks the candidates (userID's timeline entries of the last
// Window, at most Candidates) and keeps the order as a snapshot for
// SnapshotTTL; with one, it continues that snapshot, so posts that arrive
// meanwhile never repeat or reshuffle the scroll. Posts deleted, hidden or
// filtered since the snapshot are still dropped; they keep their place in
// the cursor's count.
func (s *Service) RankedTimeline(ctx context.Context, userID int64, after *RankCursor, limit int) (*RankedPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if after != nil {
		return s.rankedPage(ctx, userID, *after, limit)
	}
	items, views, err := s.rankCandidates(ctx, userID)
	if err != nil {
		return nil, err
	}
	page := &RankedPage{List: views[:min(limit, len(views))]}
	if len(items) > limit {
		id, err := s.snapshotID()
		if err != nil {
			return nil, err
		}
		now := s.now()
		if err := s.Snapshots.SaveSnapshot(ctx, userID, id, items, now, now.Add(s.rankSettings().SnapshotTTL)); err != nil {
			return nil, err
		}
		page.Next = &RankCursor{Snapshot: id, Pos: limit}
	}
	return page, nil
}

// rankedPage continues snapshot c: it reads items from c.Pos, hydrating and
// filtering them like the chronological loop (readPages) does, until it
// holds limit views or the snapshot ends.
func (s *Service) rankedPage(ctx context.Context, userID int64, c RankCursor, limit int) (*RankedPage, error) {
	page := &RankedPage{List: []PostView{}}
	pos := c.Pos
	for range maxEmptyPages {
		items, more, err := s.Snapshots.Snapshot(ctx, userID, c.Snapshot, pos, limit-len(page.List), s.now())
		if err != nil {
			if ErrorCode(err) == ENOTFOUND {
				return nil, Errorf(EINVALID, "cursor has expired or is not one this server returned; start again without a cursor")
			}
			return nil, err
		}
		views, err := s.rankViews(ctx, userID, items)
		if err != nil {
			return nil, err
		}
		page.List = append(page.List, views...)
		pos += len(items)
		if !more || len(items) == 0 {
			return page, nil
		}
		if len(page.List) >= limit {
			break
		}
	}
	page.Next = &RankCursor{Snapshot: c.Snapshot, Pos: pos}
	return page, nil
}

// rankViews hydrates snapshot items (dropping what the viewer must no
// longer see) and attaches their ranks.
func (s *Service) rankViews(ctx context.Context, userID int64, items []RankedItem) ([]PostView, error) {
	entries := make([]Entry, len(items))
	ranks := make(map[int64]*Rank, len(items))
	for i, it := range items {
		entries[i] = Entry{PostID: it.PostID, Score: it.Score}
		ranks[it.PostID] = &it.Rank
	}
	views, err := s.hydrateEntries(ctx, userID, entries)
	if err != nil {
		return nil, err
	}
	for i := range views {
		views[i].Rank = ranks[views[i].ID]
	}
	return views, nil
}

// rankCandidates reads and scores userID's candidates: the newest entries
// of the feed stream (the same read as the chronological timeline) within
// the window, hydrated and filtered. It returns the ranked items and their
// views, best first.
func (s *Service) rankCandidates(ctx context.Context, userID int64) ([]RankedItem, []PostView, error) {
	rs := s.rankSettings()
	now := s.now()
	entries, err := s.streamPage(ctx, userID, Top(), 0, rs.Candidates)
	if err != nil {
		return nil, nil, err
	}
	oldest := now.Add(-rs.Window).UnixMilli()
	if i := slices.IndexFunc(entries, func(e Entry) bool { return e.Score < oldest }); i >= 0 {
		entries = entries[:i]
	}
	views, err := s.hydrateEntries(ctx, userID, entries)
	if err != nil || len(views) == 0 {
		return nil, views, err
	}
	authors := make([]int64, 0, len(views))
	for _, v := range views {
		authors = append(authors, v.UserID)
	}
	slices.Sort(authors)
	aff, err := s.Ranks.Affinity(ctx, userID, slices.Compact(authors), now.Add(-rs.AffinityWindow), now, rs.AffinityHalfLife)
	if err != nil {
		return nil, nil, err
	}
	for i := range views {
		r := rs.score(&views[i], userID, aff[views[i].UserID], now)
		views[i].Rank = &r
	}
	// Stable: equal scores keep feed order.
	slices.SortStableFunc(views, func(a, b PostView) int { return cmp.Compare(b.Rank.Score, a.Rank.Score) })
	items := make([]RankedItem, len(views))
	for i, v := range views {
		items[i] = RankedItem{PostID: v.ID, Score: v.Score(), Rank: *v.Rank}
	}
	return items, views, nil
}

// score computes the model of RankSettings for post v and viewerID.
func (rs RankSettings) score(v *PostView, viewerID int64, a Affinity, now time.Time) Rank {
	decay := Decay
	f := map[string]float64{
		"recency":    decay(now.Sub(v.CreatedAt), rs.RecencyHalfLife),
		"affinity":   a.Likes / (a.Likes + rs.AffinityPrior),
		"follow_age": 0,
		"engagement": float64(v.Liked+1) / (float64(v.Liked+1) + rs.EngagementPrior),
		"liked":      0,
	}
	if !a.FollowedAt.IsZero() && v.UserID != viewerID {
		f["follow_age"] = 1 - decay(now.Sub(a.FollowedAt), rs.FollowHalfLife)
	}
	if v.IsLike {
		f["liked"] = 1
	}
	score := rs.WRecency*f["recency"] + rs.WAffinity*f["affinity"] + rs.WFollowAge*f["follow_age"] +
		rs.WEngagement*f["engagement"] - rs.WLiked*f["liked"]
	return Rank{Score: score, Features: f}
}

// Decay is the weight of something age old under halfLife: 2^(-age/halfLife)
// (1 for a negative age). The one decay of the model: recency, the likes of
// affinity and follow age all use it.
func Decay(age, halfLife time.Duration) float64 {
	return math.Exp2(-max(age, 0).Hours() / halfLife.Hours())
}

// snapshotID returns a new random snapshot id (128 bits, hex).
func (s *Service) snapshotID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.rand(), b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// SnapshotSlice decodes a snapshot stored as the JSON of its items and
// returns at most limit of them after offset, and whether more follow: the
// one snapshot encoding of every store.
func SnapshotSlice(body []byte, offset, limit int) ([]RankedItem, bool, error) {
	var items []RankedItem
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, false, fmt.Errorf("decode snapshot: %w", err)
	}
	if offset >= len(items) {
		return []RankedItem{}, false, nil
	}
	end := min(offset+max(limit, 0), len(items))
	return items[offset:end], end < len(items), nil
}

// EncodeSnapshot is the stored form of a snapshot's items (SnapshotSlice
// reads it).
func EncodeSnapshot(items []RankedItem) ([]byte, error) { return json.Marshal(items) }
