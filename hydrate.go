package feed

import (
	"context"
	"slices"

	"github.com/feedd/feedd/rank"
)

// Hydration: turning feed entries into the posts a viewer sees, shared by
// the chronological and the ranked timelines.

// PostView is a post hydrated for one viewer.
type PostView struct {
	*Post
	Author *User // nil when the author no longer exists
	IsLike bool
	Rank   *rank.Rank // the post's rank in a ranked timeline; nil elsewhere
	// FeedEntry is the timeline entry the view stands for in a feed page:
	// the post's own, or the repost's that places it (repost.go); zero
	// outside feed pages.
	FeedEntry Entry
	// RepostedBy: who of the people the viewer is shown reposts of
	// reposted the post (nil: none); Reposted: the viewer did.
	RepostedBy *RepostedBy
	Reposted   bool
	// Quote is the post a quote embeds (nil: the post is no quote).
	Quote *Quoted
	// Media are the uploads the post shows, in order (media.go).
	Media []Media
}

// FeedViewer is implemented by stores that hydrate a feed page in one round
// trip; Service uses it when the PostStore has it.
type FeedViewer interface {
	// FeedViews returns the posts among ids that exist and belong in
	// viewerID's feed (as SocialStore.Visible decides), each with its
	// author (ID, NickName, Icon) and the viewer's like, by id.
	FeedViews(ctx context.Context, viewerID int64, ids []int64) (map[int64]*PostView, error)
}

// hydrateEntries loads the posts of entries in entry order, dropping deleted
// ones, those of authors who do not belong in the viewer's feed (muted,
// unfollowed, blocked: their entries may still sit in the inbox until a job
// removes them), the repost entries that do not place their post
// (placeReposts) and those the content filters hide (filterViews), and
// hydrates them: one store call when the store is a FeedViewer, four
// otherwise, plus one for the filters, one for reposts when the page has
// any, and embedQuotes' for quotes, whatever the page size.
func (s *Service) hydrateEntries(ctx context.Context, viewerID int64, entries []Entry) ([]PostView, error) {
	ids := postIDs(entries)
	views, err := s.entryViews(ctx, viewerID, ids)
	if err != nil {
		return nil, err
	}
	if err := s.placeReposts(ctx, viewerID, ids, views); err != nil {
		return nil, err
	}
	out := make([]PostView, 0, len(views))
	for _, e := range entries {
		if v := views[e.PostID]; v != nil {
			v.FeedEntry = e
			out = append(out, *v)
		}
	}
	if err := s.embedQuotes(ctx, viewerID, out); err != nil {
		return nil, err
	}
	if out, err = s.filterViews(ctx, viewerID, out); err != nil {
		return nil, err
	}
	if _, ok := s.Posts.(FeedViewer); ok {
		// FeedViews hydrates without the media (hydratePosts attaches them).
		err = s.attachMedia(ctx, out)
	}
	return out, err
}

// entryViews returns, by id, the posts among ids that exist and whose
// authors belong in viewerID's feed (SocialStore.Visible), hydrated.
func (s *Service) entryViews(ctx context.Context, viewerID int64, ids []int64) (map[int64]*PostView, error) {
	if fv, ok := s.Posts.(FeedViewer); ok {
		return fv.FeedViews(ctx, viewerID, ids)
	}
	m, err := s.Posts.Posts(ctx, ids)
	if err != nil {
		return nil, err
	}
	var visible map[int64]bool
	if len(m) > 0 {
		authors := make([]int64, 0, len(m))
		for _, p := range m {
			authors = append(authors, p.UserID)
		}
		slices.Sort(authors)
		if visible, err = s.Social.Visible(ctx, viewerID, slices.Compact(authors)); err != nil {
			return nil, err
		}
	}
	posts := make([]*Post, 0, len(ids))
	for _, id := range ids {
		if p := m[id]; p != nil && visible[p.UserID] {
			posts = append(posts, p)
		}
	}
	hv, err := s.hydratePosts(ctx, viewerID, posts)
	if err != nil {
		return nil, err
	}
	views := make(map[int64]*PostView, len(hv))
	for i := range hv {
		views[hv[i].ID] = &hv[i]
	}
	return views, nil
}

// Hydrate turns posts into views for viewerID (0: anonymous) with a constant
// number of store calls: one for authors, one for the viewer's likes, one
// for reposts when a post has any (shareViews), one for the media, and
// embedQuotes' for quotes.
func (s *Service) Hydrate(ctx context.Context, viewerID int64, posts []*Post) ([]PostView, error) {
	views, err := s.hydratePosts(ctx, viewerID, posts)
	if err != nil {
		return nil, err
	}
	if err := s.shareViews(ctx, viewerID, views); err != nil {
		return nil, err
	}
	if err := s.embedQuotes(ctx, viewerID, views); err != nil {
		return nil, err
	}
	return views, nil
}

// hydratePosts turns posts into views for viewerID (0: anonymous), their
// authors, the viewer's likes and the media: three store calls.
func (s *Service) hydratePosts(ctx context.Context, viewerID int64, posts []*Post) ([]PostView, error) {
	if len(posts) == 0 {
		return []PostView{}, nil
	}
	authorIDs := make([]int64, 0, len(posts))
	ids := make([]int64, 0, len(posts))
	seen := make(map[int64]bool, len(posts))
	for _, p := range posts {
		ids = append(ids, p.ID)
		if !seen[p.UserID] {
			seen[p.UserID] = true
			authorIDs = append(authorIDs, p.UserID)
		}
	}
	authors, err := s.Users.Users(ctx, authorIDs)
	if err != nil {
		return nil, err
	}
	liked := map[int64]bool{}
	if viewerID > 0 {
		if liked, err = s.Posts.LikedBy(ctx, viewerID, ids); err != nil {
			return nil, err
		}
	}
	out := make([]PostView, len(posts))
	for i, p := range posts {
		out[i] = PostView{Post: p, Author: authors[p.UserID], IsLike: liked[p.ID]}
	}
	return out, s.attachMedia(ctx, out)
}
