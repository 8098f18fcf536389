package feed

import (
	"context"
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
	Window      time.Duration // candidates: timeline entries at most this old
	Candidates  int           // at most this many entries are ranked
	SnapshotTTL time.Duration // how long a ranked scroll's order is kept
	// CountsTTL is how long the like count of a candidate post, once read,
	// is reused by this process's first ranked pages, and ViewerTTL how
	// long a viewer's likes and follows are (rankCache; 0: read on every
	// first page). What is done through this process shows at once;
	// through another, after at most these.
	CountsTTL        time.Duration
	ViewerTTL        time.Duration
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
		Candidates:       150,
		SnapshotTTL:      30 * time.Minute,
		CountsTTL:        10 * time.Second,
		ViewerTTL:        time.Minute,
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
	case rs.CountsTTL < 0 || rs.ViewerTTL < 0:
		return Errorf(EINVALID, "rank counts and viewer TTLs must not be negative")
	case rs.RecencyHalfLife <= 0 || rs.AffinityHalfLife <= 0 || rs.FollowHalfLife <= 0:
		return Errorf(EINVALID, "rank half-lives must be positive")
	case rs.AffinityWindow <= 0:
		return Errorf(EINVALID, "rank affinity window must be positive")
	case rs.AffinityPrior <= 0 || rs.EngagementPrior <= 0:
		return Errorf(EINVALID, "rank priors must be positive")
	case rs.WRecency < 0 || rs.WAffinity < 0 || rs.WFollowAge < 0 || rs.WEngagement < 0 || rs.WLiked < 0:
		return Errorf(EINVALID, "rank weights must not be negative")
	}
	for _, x := range []float64{rs.AffinityPrior, rs.EngagementPrior, rs.WRecency, rs.WAffinity, rs.WFollowAge, rs.WEngagement, rs.WLiked} {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return Errorf(EINVALID, "rank priors and weights must be finite numbers")
		}
	}
	return nil
}

// Rank is a post's place in a ranked timeline: its score and the features
// it was computed from, by name.
type Rank struct {
	Score    float64            `json:"score"`
	Features map[string]float64 `json:"features"`
}

// RankedItem is one entry of a ranked snapshot: 64 bytes and no map, so
// that ranking hundreds of candidates and keeping them as a snapshot
// allocates one slice; View makes the Rank of the few a page shows.
type RankedItem struct {
	PostID    int64
	Score     int64                      // the entry's feed score (creation ms)
	RankScore float64                    // the model's score
	Features  [len(RankFeatures)]float64 // in RankFeatures' order
}

// View returns the item's Rank, its features by name.
func (it *RankedItem) View() Rank { return newRank(it.RankScore, it.Features) }

// RankCandidate is what the model reads of a candidate post.
type RankCandidate struct {
	PostID        int64
	AuthorID      int64
	Score         int64 // creation ms
	Likes         int
	LikedByViewer bool
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
	// Candidates returns the posts among ids that exist, by id, with
	// whether viewerID likes them. One round trip. (Whether the author
	// still belongs in the viewer's feed is decided when a page is read.)
	Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]RankCandidate, error)
	// Affinity returns, for each of authorIDs that viewerID liked a post of
	// since `since` or follows, the Affinity; likes weigh
	// 2^(-(now-liked_at)/halfLife). One round trip.
	Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]Affinity, error)
}

// RankInputReader is a RankStore that reads all the model needs of a first
// ranked page in one statement. RankInputs returns what Candidates(ids)
// and Affinity(the candidates' authors) would. The ranked timeline uses it
// when Ranks implements it. Implementation: sqlite.DB.
type RankInputReader interface {
	RankInputs(ctx context.Context, viewerID int64, ids []int64, since, now time.Time, halfLife time.Duration) (map[int64]RankCandidate, map[int64]Affinity, error)
}

// RankFactReader reads a first ranked page's inputs when the ranked
// timeline already knows some of them (its cache, rankCache). The ranked
// timeline uses it when Ranks implements it and CountsTTL or ViewerTTL is
// positive. Implementations: sqlite.DB, postgres.DB.
type RankFactReader interface {
	// RankFacts returns, in one statement, the RankReads of the posts
	// among ids, of viewerID's likes since `since` or of posts with ids of
	// at least minID, and of viewerID's follows of authors and of the
	// posts' authors.
	RankFacts(ctx context.Context, viewerID int64, ids, authors []int64, minID int64, since time.Time) (*RankReads, error)
	// RankPosts returns what RankFacts returns in Posts alone: the posts
	// among ids that exist, with LikedByViewer false, in no particular
	// order. One statement.
	RankPosts(ctx context.Context, ids []int64) ([]RankCandidate, error)
	// RankPostRange returns what RankPosts returns of every id from lo to
	// hi: the posts with ids in [lo, hi], in no particular order. One
	// statement, one range of the posts' primary key (the ranked
	// timeline's read-around, rankCached).
	RankPostRange(ctx context.Context, lo, hi int64) ([]RankCandidate, error)
}

// SnapshotsKept is how many of one user's ranked snapshots the SQL stores
// keep (the newest); older ones go when a new one is saved, so a client
// restarting its scroll in a loop cannot grow the table.
const SnapshotsKept = 4

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
// meanwhile never repeat or reshuffle the scroll. Every page is hydrated
// like a chronological one (hydrateEntries): posts deleted, of authors
// blocked or muted, hidden or matching a muted word are dropped when the
// page is read, and keep their place in the cursor's count.
func (s *Service) RankedTimeline(ctx context.Context, userID int64, after *RankCursor, limit int) (*RankedPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if after != nil {
		read := func(pos, n int) ([]RankedItem, bool, error) {
			items, more, err := s.Snapshots.Snapshot(ctx, userID, after.Snapshot, pos, n, s.now())
			if ErrorCode(err) == ENOTFOUND {
				return nil, false, Errorf(EINVALID, "cursor has expired or is not one this server returned; start again without a cursor")
			}
			return items, more, err
		}
		return s.rankedPage(ctx, userID, after.Snapshot, after.Pos, limit, read)
	}
	items, err := s.rankCandidates(ctx, userID)
	if err != nil {
		return nil, err
	}
	id := ""
	if len(items) > limit {
		if id, err = s.snapshotID(); err != nil {
			return nil, err
		}
		now := s.now()
		if err := s.Snapshots.SaveSnapshot(ctx, userID, id, items, now, now.Add(s.rankSettings().SnapshotTTL)); err != nil {
			return nil, err
		}
	}
	read := func(pos, n int) ([]RankedItem, bool, error) {
		end := min(pos+n, len(items))
		return items[pos:end], end < len(items), nil
	}
	return s.rankedPage(ctx, userID, id, 0, limit, read)
}

// rankedPage reads items of a ranked order from pos with read, hydrating
// and filtering them like the chronological loop (readPages) does, until
// it holds limit views or the order ends. The next cursor names snapshot.
func (s *Service) rankedPage(ctx context.Context, userID int64, snapshot string, pos, limit int,
	read func(pos, n int) ([]RankedItem, bool, error)) (*RankedPage, error) {
	page := &RankedPage{List: []PostView{}}
	for range maxEmptyPages {
		items, more, err := read(pos, limit-len(page.List))
		if err != nil {
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
	page.Next = &RankCursor{Snapshot: snapshot, Pos: pos}
	return page, nil
}

// rankViews hydrates ranked items (dropping what the viewer must not see)
// and attaches their ranks.
func (s *Service) rankViews(ctx context.Context, userID int64, items []RankedItem) ([]PostView, error) {
	entries := make([]Entry, len(items))
	ranks := make(map[int64]*RankedItem, len(items))
	for i := range items {
		entries[i] = Entry{PostID: items[i].PostID, Score: items[i].Score}
		ranks[items[i].PostID] = &items[i]
	}
	views, err := s.hydrateEntries(ctx, userID, entries)
	if err != nil {
		return nil, err
	}
	for i := range views {
		r := ranks[views[i].ID].View()
		views[i].Rank = &r
	}
	return views, nil
}

// rankCandidates reads and scores userID's candidates: the newest entries
// of the feed stream (the same read as the chronological timeline) within
// the window whose posts exist. It returns them ranked, best first. Posts
// of authors no longer in the viewer's feed, and what the content filters
// hide, are dropped when pages are read (rankViews), as in the
// chronological timeline: ranking reads only what the model needs.
func (s *Service) rankCandidates(ctx context.Context, userID int64) ([]RankedItem, error) {
	rs := s.rankSettings()
	now := s.now()
	since := now.Add(-rs.AffinityWindow)
	if r, ok := s.Ranks.(RankFactReader); ok && (rs.CountsTTL > 0 || rs.ViewerTTL > 0) {
		return s.rankCached(ctx, r, userID, rs, since, now)
	}
	entries, err := s.streamPage(ctx, userID, Top(), 0, rs.Candidates)
	if err != nil {
		return nil, err
	}
	entries = inWindow(entries, rs, now)
	if len(entries) == 0 {
		return nil, nil
	}
	cands, aff, err := s.rankInputs(ctx, userID, postIDs(entries), since, now, rs.AffinityHalfLife)
	if err != nil {
		return nil, err
	}
	rk := newRanker(rs, userID, aff, now)
	defer rk.release()
	for _, e := range entries {
		if c, ok := cands[e.PostID]; ok {
			rk.add(c, e.Score)
		}
	}
	return rk.sorted(), nil
}

// inWindow returns the entries of entries (in feed order) at most
// rs.Window old at now.
func inWindow(entries []Entry, rs RankSettings, now time.Time) []Entry {
	oldest := now.Add(-rs.Window).UnixMilli()
	if i := slices.IndexFunc(entries, func(e Entry) bool { return e.Score < oldest }); i >= 0 {
		return entries[:i]
	}
	return entries
}

// rankInputs reads the candidates among ids and the viewer's affinity to
// their authors: one statement when the store is a RankInputReader, two
// otherwise.
func (s *Service) rankInputs(ctx context.Context, userID int64, ids []int64, since, now time.Time, halfLife time.Duration) (map[int64]RankCandidate, map[int64]Affinity, error) {
	if r, ok := s.Ranks.(RankInputReader); ok {
		return r.RankInputs(ctx, userID, ids, since, now, halfLife)
	}
	cands, err := s.Ranks.Candidates(ctx, userID, ids)
	if err != nil {
		return nil, nil, err
	}
	authors := make([]int64, 0, len(cands))
	for _, c := range cands {
		authors = append(authors, c.AuthorID)
	}
	slices.Sort(authors)
	aff, err := s.Ranks.Affinity(ctx, userID, slices.Compact(authors), since, now, halfLife)
	if err != nil {
		return nil, nil, err
	}
	return cands, aff, nil
}
