package feed

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/feedd/feedd/rank"
)

// The ranked timeline: a viewer's recent feed entries ordered by the model
// of package rank, the order kept as a snapshot for the scroll.

// RankStore reads what the ranking model learns from.
// Implementations: sqlite.DB, postgres.DB.
type RankStore interface {
	// Candidates returns the posts among ids that exist, by id, with
	// whether viewerID likes them. One round trip. (Whether the author
	// still belongs in the viewer's feed is decided when a page is read.)
	Candidates(ctx context.Context, viewerID int64, ids []int64) (map[int64]rank.Candidate, error)
	// Commenters returns, for each of postIDs that any of userIDs
	// commented on since `since`, those of userIDs who did (each once).
	// One round trip, an index range per user.
	Commenters(ctx context.Context, userIDs, postIDs []int64, since time.Time) (map[int64][]int64, error)
	// Reposters returns, for each of postIDs that any of userIDs reposted
	// since `since`, those of userIDs who did. One round trip, an index
	// probe per user and post.
	Reposters(ctx context.Context, userIDs, postIDs []int64, since time.Time) (map[int64][]int64, error)
	// Affinity returns, for each of authorIDs that viewerID liked a post of
	// since `since` or follows, the Affinity; likes weigh
	// 2^(-(now-liked_at)/halfLife) (rank.Decay). One round trip.
	Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]rank.Affinity, error)
}

// SnapshotsKept is how many of one user's ranked snapshots the SQL stores
// keep (the newest); older ones go when a new one is saved, so a client
// restarting its scroll in a loop cannot grow the table.
const SnapshotsKept = 4

// SnapshotStore keeps the order of ranked scrolls.
// Implementations: sqlite.DB, postgres.DB, redis.Snapshots,
// inmem.Snapshots; feedtest.TestSnapshotStore is the contract.
type SnapshotStore interface {
	// SaveSnapshot stores items as viewerID's snapshot id until expires.
	SaveSnapshot(ctx context.Context, viewerID int64, id string, items []rank.Item, now, expires time.Time) error
	// Snapshot returns at most limit items of viewerID's snapshot id after
	// skipping offset, and whether more follow. ENOTFOUND when there is no
	// such snapshot of viewerID or it has expired.
	Snapshot(ctx context.Context, viewerID int64, id string, offset, limit int, now time.Time) ([]rank.Item, bool, error)
}

// RankedPage is one page of the ranked timeline. List[i].Rank holds the
// post's score and features.
type RankedPage struct {
	List []PostView
	Next *rank.Cursor // nil at the end
}

// DecodeRankCursor parses a client's ranked cursor (rank.DecodeCursor).
// EINVALID if it is not one.
func DecodeRankCursor(s string) (rank.Cursor, error) {
	c, err := rank.DecodeCursor(s)
	if err != nil {
		return c, Errorf(EINVALID, "%s", err.Error())
	}
	return c, nil
}

func (s *Service) rankSettings() rank.Settings {
	if s.Rank != nil {
		return *s.Rank
	}
	return rank.Default()
}

// RankedTimeline returns a page of userID's ranked timeline. Without a
// cursor it ranks the candidates (userID's timeline entries of the last
// Window, at most Candidates) and keeps the order as a snapshot for
// SnapshotTTL; with one, it continues that snapshot, so posts that arrive
// meanwhile never repeat or reshuffle the scroll. Every page is hydrated
// like a chronological one (hydrateEntries): posts deleted, of authors
// blocked or muted, hidden or matching a muted word are dropped when the
// page is read, and keep their place in the cursor's count.
func (s *Service) RankedTimeline(ctx context.Context, userID int64, after *rank.Cursor, limit int) (*RankedPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if after != nil {
		read := func(pos, n int) ([]rank.Item, bool, error) {
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
		if id, err = rank.NewSnapshotID(s.rand()); err != nil {
			return nil, err
		}
		now := s.now()
		if err := s.Snapshots.SaveSnapshot(ctx, userID, id, items, now, now.Add(s.rankSettings().SnapshotTTL)); err != nil {
			return nil, err
		}
	}
	read := func(pos, n int) ([]rank.Item, bool, error) {
		end := min(pos+n, len(items))
		return items[pos:end], end < len(items), nil
	}
	return s.rankedPage(ctx, userID, id, 0, limit, read)
}

// rankedPage reads items of a ranked order from pos with read, hydrating
// and filtering them like the chronological loop (readPages) does, until
// it holds limit views or the order ends. The next cursor names snapshot.
func (s *Service) rankedPage(ctx context.Context, userID int64, snapshot string, pos, limit int,
	read func(pos, n int) ([]rank.Item, bool, error)) (*RankedPage, error) {
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
	page.Next = &rank.Cursor{Snapshot: snapshot, Pos: pos}
	return page, nil
}

// rankViews hydrates ranked items (dropping what the viewer must not see)
// and attaches their ranks.
func (s *Service) rankViews(ctx context.Context, userID int64, items []rank.Item) ([]PostView, error) {
	entries := make([]Entry, len(items))
	ranks := make(map[int64]*rank.Item, len(items))
	for i := range items {
		entries[i] = Entry{PostID: items[i].PostID, Score: items[i].Score}
		ranks[items[i].PostID] = &items[i]
	}
	views, err := s.hydrateEntries(ctx, userID, entries)
	if err != nil {
		return nil, err
	}
	for i := range views {
		r := ranks[views[i].FeedEntry.PostID].View() // the item's entry: the post's own, or a repost's
		views[i].Rank = &r
	}
	return views, nil
}

// rankCandidates reads and scores userID's candidates: the newest entries
// of the feed stream (the same read as the chronological timeline) within
// the window whose posts exist, with the viewer's affinity to their
// authors (two reads of Ranks). It returns them ranked, best first. Posts
// of authors no longer in the viewer's feed, and what the content filters
// hide, are dropped when pages are read (rankViews), as in the
// chronological timeline: ranking reads only what the model needs.
func (s *Service) rankCandidates(ctx context.Context, userID int64) ([]rank.Item, error) {
	rs := s.rankSettings()
	now := s.now()
	entries, err := s.streamPage(ctx, userID, Top(), 0, rs.Candidates)
	if err != nil {
		return nil, err
	}
	oldest := now.Add(-rs.Window).UnixMilli()
	if i := slices.IndexFunc(entries, func(e Entry) bool { return e.Score < oldest }); i >= 0 {
		entries = entries[:i]
	}
	if len(entries) == 0 {
		return nil, nil
	}
	entries, posts, err := s.rankEntries(ctx, userID, entries)
	if err != nil {
		return nil, err
	}
	byID, err := s.Ranks.Candidates(ctx, userID, posts)
	if err != nil {
		return nil, err
	}
	cands := make([]rank.Candidate, 0, len(byID))
	candPosts := make([]int64, 0, len(byID))
	var authors []int64
	for i, e := range entries {
		if c, ok := byID[posts[i]]; ok {
			// The entry is the candidate (its post's own, or a repost's),
			// ranked by what its post is.
			c.PostID, c.Score = e.PostID, e.Score
			cands = append(cands, c)
			candPosts = append(candPosts, posts[i])
			authors = append(authors, c.AuthorID)
		}
	}
	slices.Sort(authors)
	aff, err := s.Ranks.Affinity(ctx, userID, slices.Compact(authors), now.Add(-rs.AffinityWindow), now, rs.AffinityHalfLife)
	if err != nil {
		return nil, err
	}
	if err := s.countInteractors(ctx, userID, aff, cands, candPosts, now.Add(-rs.Window)); err != nil {
		return nil, err
	}
	return rank.Order(rs, userID, aff, now, cands), nil
}

// rankEntries returns entries without the repost entries that do not
// place their post in userID's feed (RepostEntry.Places), so that a post
// is ranked once, and the post each entry stands for: its own, or the
// post a repost shows. One store call, none without RepostStore.
func (s *Service) rankEntries(ctx context.Context, userID int64, entries []Entry) ([]Entry, []int64, error) {
	posts := postIDs(entries)
	if s.Reposts == nil {
		return entries, posts, nil
	}
	reps, sharers, err := s.feedReposts(ctx, userID, posts, nil)
	if err != nil || len(reps) == 0 {
		return entries, posts, err
	}
	keptE, keptP := entries[:0:0], posts[:0:0]
	for i, e := range entries {
		p := posts[i]
		if r := reps[e.PostID]; r != nil {
			if !r.Places(sharers[r.PostID]) {
				continue
			}
			p = r.PostID
		}
		keptE, keptP = append(keptE, e), append(keptP, p)
	}
	return keptE, keptP, nil
}

// maxInteractors bounds the people whose comments and reposts the ranking
// looks for.
const maxInteractors = 100

// countInteractors sets each candidate's Commenters and Reposters: the
// people viewerID interacts with (the authors it has affinity to by likes,
// the strongest maxInteractors) who commented on or reposted the post
// (posts[i] is candidate i's) since `since`, neither its author nor the
// viewer. Two store calls, none when there is nobody.
func (s *Service) countInteractors(ctx context.Context, viewerID int64, aff map[int64]rank.Affinity, cands []rank.Candidate, posts []int64, since time.Time) error {
	var people []int64
	for id, a := range aff {
		if a.Likes > 0 && id != viewerID {
			people = append(people, id)
		}
	}
	if len(people) == 0 {
		return nil
	}
	if len(people) > maxInteractors {
		slices.SortFunc(people, func(a, b int64) int { return cmp.Compare(aff[b].Likes, aff[a].Likes) })
		people = people[:maxInteractors]
	}
	ids := posts
	commented, err := s.Ranks.Commenters(ctx, people, ids, since)
	if err != nil {
		return err
	}
	reposted, err := s.Ranks.Reposters(ctx, people, ids, since)
	if err != nil {
		return err
	}
	for i := range cands {
		for _, u := range commented[ids[i]] {
			if u != cands[i].AuthorID {
				cands[i].Commenters++
			}
		}
		for _, u := range reposted[ids[i]] {
			if u != cands[i].AuthorID {
				cands[i].Reposters++
			}
		}
	}
	return nil
}
