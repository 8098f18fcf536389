package feed

import (
	"context"
	"slices"
	"time"

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
// trip; Service uses it when the PostStore has it, and places reposts in
// feeds only then (the stores of RepostStore are FeedViewers).
type FeedViewer interface {
	// EntryViews hydrates the entries ids of viewerID's feed page: the
	// posts among ids that exist and belong in viewerID's feed (as
	// SocialStore.Visible decides), each with its author (ID, NickName,
	// Icon) and the viewer's like, and the reposts among ids with what
	// decides whether each places its post there (RepostEntry). One round
	// trip; a post's entry costs a few index lookups, a repost's a few
	// more (its reposter, blocks).
	EntryViews(ctx context.Context, viewerID int64, ids []int64) (*EntryViews, error)
}

// EntryViews is a feed page's entries hydrated (FeedViewer.EntryViews).
type EntryViews struct {
	Views   map[int64]*PostView    // the posts shown by their own entries, by id
	Reposts map[int64]*RepostEntry // the repost entries, by id
}

// EntryViewRow is one row of a store's EntryViews statement, which reads
// an entry of the page, the repost it is when it is one, the post it
// shows, and who of the people the viewer is shown reposts of reposted
// that post; Dest lists its columns in order. The facts that are yes or
// no are the bits of Flags (one column, not nine: each column of each row
// is a cost of its own in the SQLite driver).
type EntryViewRow struct {
	RepostID int64 // the entry's repost; 0: the entry is the post's own
	Flags    int64 // Row* bits
	// Repost is the entry's repost's reposter and time, or, on a post's
	// own entry, those of the first sharer (First).
	Repost struct {
		UserID, CreatedAt int64
		User              User // name and icon (RowReposter)
	}
	Post             Post // ID 0: there is no such post
	Created, Updated int64
	Author           User // the post's author's name and icon (RowAuthor)
	// First and Shared are the earliest (by time, then id) of the post's
	// reposts by those the viewer is shown reposts of (the viewer, and the
	// users it follows with show_reposts on and does not mute), and how
	// many there are; 0 and 0 for none.
	First, Shared int64
}

// The bits of EntryViewRow.Flags.
const (
	RowReposter      = 1 << iota // the reposter (or first sharer) exists
	RowAuthor                    // the post's author exists
	RowLiked                     // the viewer likes the post
	RowReposterShown             // RepostEntry.ReposterShown
	RowFollowed                  // the viewer is the post's author or follows them
	RowMuted                     // the viewer mutes the post's author
	RowBlocked                   // the viewer blocks the post's author
	RowBlocksViewer              // the post's author blocks the viewer
	RowReposted                  // the viewer reposted the post
)

// Dest is where a store's row scan writes r's columns: the repost's id
// (0: none), the flags, the reposter's (or first sharer's) id, time (ms),
// nickname and icon, the post's id (0: none), author, shop, title,
// images, content, likes, comments, comment policy, times created and
// updated (ms), quoted post, quote policy, reposts and quotes, the
// author's nickname and icon, the first sharer's repost and the number of
// sharers.
func (r *EntryViewRow) Dest() []any {
	p := &r.Post
	return []any{&r.RepostID, &r.Flags, &r.Repost.UserID, &r.Repost.CreatedAt, &r.Repost.User.NickName, &r.Repost.User.Icon,
		&p.ID, &p.UserID, &p.ShopID, &p.Title, &p.Images, &p.Content, &p.Liked, &p.Comments, &p.CommentPolicy, &r.Created, &r.Updated,
		&p.QuoteOf, &p.QuotePolicy, &p.Reposts, &p.Quotes, &r.Author.NickName, &r.Author.Icon, &r.First, &r.Shared}
}

func (r *EntryViewRow) is(bit int64) bool { return r.Flags&bit != 0 }

// reposter is the user of r.Repost (nil when it no longer exists).
func (r *EntryViewRow) reposter() *User {
	if !r.is(RowReposter) {
		return nil
	}
	u := r.Repost.User
	u.ID = r.Repost.UserID
	return &u
}

// Sharers is who shared r's post among the people the viewer is shown
// reposts of (nil: nobody). Its FirstUser is known when the first is the
// row's repost, or on a post's own entry.
func (r *EntryViewRow) Sharers() *Sharers {
	if r.Shared == 0 {
		return nil
	}
	sh := &Sharers{First: Repost{ID: r.First, PostID: r.Post.ID}, Count: int(r.Shared), Viewer: r.is(RowReposted)}
	if r.RepostID == 0 || r.RepostID == r.First {
		sh.First.UserID, sh.First.CreatedAt = r.Repost.UserID, time.UnixMilli(r.Repost.CreatedAt)
		if sh.FirstUser = r.reposter(); sh.FirstUser == nil {
			sh.FirstUser = &User{ID: r.Repost.UserID}
		}
	}
	return sh
}

// Add files row r into e: a post's entry in Views when the post exists and
// belongs in the feed (its author exists and is the viewer or followed, not
// muted), with who shared it; a repost's in Reposts.
func (e *EntryViews) Add(r *EntryViewRow) {
	var v *PostView
	if r.Post.ID != 0 {
		p := r.Post
		p.CreatedAt, p.UpdatedAt = time.UnixMilli(r.Created), time.UnixMilli(r.Updated)
		v = &PostView{Post: &p, IsLike: r.is(RowLiked)}
		if r.is(RowAuthor) {
			a := r.Author
			a.ID = p.UserID
			v.Author = &a
		}
	}
	if r.RepostID == 0 {
		if v != nil && v.Author != nil && r.is(RowFollowed) && !r.is(RowMuted) {
			v.setSharers(r.Sharers())
			e.Views[v.ID] = v
		}
		return
	}
	e.Reposts[r.RepostID] = &RepostEntry{
		Repost:        Repost{ID: r.RepostID, UserID: r.Repost.UserID, PostID: r.Post.ID, CreatedAt: time.UnixMilli(r.Repost.CreatedAt)},
		Post:          v,
		ReposterShown: r.is(RowReposterShown), Reposter: r.reposter(),
		AuthorFollowed: r.is(RowFollowed),
		Author:         Relation{Muted: r.is(RowMuted), Blocked: r.is(RowBlocked), BlocksViewer: r.is(RowBlocksViewer)},
		Sharers:        r.Sharers(),
	}
}

// NewEntryViews returns empty EntryViews for a page of n entries.
func NewEntryViews(n int) *EntryViews {
	return &EntryViews{Views: make(map[int64]*PostView, n), Reposts: map[int64]*RepostEntry{}}
}

// hydrateEntries loads the posts of entries in entry order, dropping deleted
// ones, those of authors who do not belong in the viewer's feed (muted,
// unfollowed, blocked: their entries may still sit in the inbox until a job
// removes them), the repost entries that do not place their post
// (placeReposts) and those the content filters hide (filterViews), and
// hydrates them: one store call when the store is a FeedViewer (reposts
// and who shared each post are placed from it: placeReposts), four
// otherwise, plus one for the filters and embedQuotes' for quotes,
// whatever the page size.
func (s *Service) hydrateEntries(ctx context.Context, viewerID int64, entries []Entry) ([]PostView, error) {
	ids := postIDs(entries)
	page, err := s.entryViews(ctx, viewerID, ids)
	if err != nil {
		return nil, err
	}
	views := s.placeReposts(page)
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
		// EntryViews hydrates without the media (hydratePosts attaches them).
		err = s.attachMedia(ctx, out)
	}
	return out, err
}

// entryViews hydrates the entries ids: EntryViews when the store is a
// FeedViewer; otherwise the posts among ids that exist and whose authors
// belong in viewerID's feed (SocialStore.Visible), and no reposts.
func (s *Service) entryViews(ctx context.Context, viewerID int64, ids []int64) (*EntryViews, error) {
	if fv, ok := s.Posts.(FeedViewer); ok {
		return fv.EntryViews(ctx, viewerID, ids)
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
	page := NewEntryViews(len(hv))
	for i := range hv {
		page.Views[hv[i].ID] = &hv[i]
	}
	return page, nil
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
