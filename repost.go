package feed

import (
	"context"
	"slices"
	"time"
)

// Reposts and quotes (docs/API.md, "Reposts and quotes"; the design is
// docs/architecture.md, "Reposts: each post once").
//
// A repost is a feed entry of its own: a row whose id is taken from the
// posts' id space, delivered to the reposter's followers by the same
// fan-out as a post of the reposter (a FanoutJob; its undo a RemoveJob),
// kept in the reposter's outbox, copied by backfills and rebuilds. So a
// reader's timeline may hold several entries that stand for one post: the
// post's own entry (when the reader follows its author) and the entries
// of reposts by people the reader follows. A page shows the post at one of
// them only, its placement (RepostEntry.Places): the post's own entry when
// the reader is its author or follows them, else the earliest repost among
// those the reader is shown. Every other entry of the post is skipped as a
// deleted post's is, so both cursors stay exact. What others do (repost,
// undo, delete, block, hide) only ever moves a post's placement to a newer
// entry or takes it away, never to an older one: a post seen in a scroll
// is not met again further down it.

// QuotePolicy is who may quote a post, chosen by its author.
type QuotePolicy int

const (
	QuotesEveryone  QuotePolicy = 0 // the default
	QuotesFollowing QuotePolicy = 1 // the people the author follows
	QuotesNobody    QuotePolicy = 2 // nobody but the author
)

// String is the policy's name in the API (CommentPolicy's names).
func (p QuotePolicy) String() string { return CommentPolicy(p).String() }

// ParseQuotePolicy reads a policy's name. EINVALID for any other.
func ParseQuotePolicy(s string) (QuotePolicy, error) {
	p, err := ParseCommentPolicy(s)
	if err != nil {
		return 0, Errorf(EINVALID, "quote_policy must be everyone, following or nobody")
	}
	return QuotePolicy(p), nil
}

// Refusals of quotes, one sentence each for every engine.
var (
	ErrQuotesOff            = Errorf(EFORBIDDEN, "the author has turned quoting off on this post")
	ErrQuotesFollowing      = Errorf(EFORBIDDEN, "the author allows quotes only from people they follow")
	ErrNotQuotePolicySetter = Errorf(EFORBIDDEN, "only the author may change who may quote this post")
)

// PurgeRepostBatch is how many reposts of a deleted post one transaction
// removes (RepostStore.PurgeReposts).
const PurgeRepostBatch = 500

// Repost is one user's repost of a post: a feed entry of its own (Entry),
// delivered as a post of UserID would be, that shows post PostID.
type Repost struct {
	ID        int64 // in the posts' id space: no post has it
	UserID    int64 // the reposter
	PostID    int64 // the post reposted
	CreatedAt time.Time
}

// Entry is the repost's feed entry.
func (r *Repost) Entry() Entry { return Entry{PostID: r.ID, Score: r.CreatedAt.UnixMilli()} }

// RepostedBy says which of the people a viewer is shown reposts of (the
// viewer, and those it follows with show_reposts on and does not mute)
// reposted a post.
type RepostedBy struct {
	User   *User     // the first of them to repost it
	At     time.Time // when
	Others int       // how many more of them reposted it
}

// Quoted is the post a quote embeds, as the quote's viewer may see it:
// the post, or a tombstone (Post nil) whose State says why.
type Quoted struct {
	ID    int64
	Post  *PostView
	State string // QuoteShown, QuoteDeleted or QuoteUnavailable
}

// States of a quoted post.
const (
	QuoteShown       = "shown"
	QuoteDeleted     = "deleted"     // the post no longer exists
	QuoteUnavailable = "unavailable" // hidden by moderation, or a block or mute between the viewer and its author
)

// RepostStore persists reposts, the per-follow show_reposts setting and
// quote policies. Implementations: sqlite.DB, postgres.DB;
// feedtest.TestReposts is the contract.
type RepostStore interface {
	// SetRepost makes userID repost (repost) or stop reposting postID,
	// moving the post's Reposts, recording the notification (NotifyRepost)
	// and enqueuing the repost entry's FanoutJob (or RemoveJob) in the same
	// transaction; a repost of one's own post is one too. Idempotent:
	// changed reports whether a repost was made or undone, and concurrent
	// calls move the count once. ENOTFOUND if the post does not exist or
	// its author blocks userID (then no repost is made).
	SetRepost(ctx context.Context, userID, postID int64, repost bool, now time.Time) (changed bool, err error)
	// Reposts returns the reposts among ids, by id (the other ids are
	// posts' or nothing's). One round trip.
	Reposts(ctx context.Context, ids []int64) (map[int64]*Repost, error)
	// RepostEntries returns, by id, the reposts among ids (the others are
	// posts' or nothing's) with what decides whether each places its post
	// in viewerID's feed (RepostEntry). One round trip, a few index
	// lookups per repost.
	RepostEntries(ctx context.Context, viewerID int64, ids []int64) (map[int64]*RepostEntry, error)
	// Sharers returns, for each of postIDs that any of the people viewerID
	// is shown reposts of (viewerID, and the users it follows with
	// show_reposts on and does not mute) reposted, those reposts: the
	// first and how many. One round trip; each post costs at most the
	// smaller of its reposts and the viewer's follows, roughly.
	Sharers(ctx context.Context, viewerID int64, postIDs []int64) (map[int64]*Sharers, error)
	// PurgeReposts removes at most limit reposts of a deleted post postID,
	// moving nothing (the post is gone) and enqueuing each repost entry's
	// RemoveJob, in one transaction, and returns how many it removed
	// (fewer than limit: none is left). It removes nothing of a post that
	// exists.
	PurgeReposts(ctx context.Context, postID int64, limit int) (int, error)
	// SetShowReposts sets whether followerID's feed shows followeeID's
	// reposts. Idempotent. ENOTFOUND if followerID does not follow
	// followeeID.
	SetShowReposts(ctx context.Context, followerID, followeeID int64, show bool) error
	// SetQuotePolicy sets who may quote postID, whose author must be
	// userID. ENOTFOUND, ErrNotQuotePolicySetter.
	SetQuotePolicy(ctx context.Context, postID, userID int64, p QuotePolicy, now time.Time) error
}

// RepostEntry is a repost entry of a viewer's feed page, with what decides
// whether it places its post there (Places).
type RepostEntry struct {
	Repost
	// Post is the post reposted, with its author (ID, NickName, Icon), the
	// viewer's like and its Reposts; nil when it no longer exists.
	Post *PostView
	// ReposterShown: the reposter is the viewer, or one the viewer follows
	// with show_reposts on and does not mute. Reposter is the reposter
	// (ID, NickName, Icon); nil when the user no longer exists.
	ReposterShown bool
	Reposter      *User
	// AuthorFollowed: the viewer is the post's author or follows them, so
	// the post's own entry places it.
	AuthorFollowed bool
	// Author is the viewer's relation to the post's author (a mute, a
	// block either way), which decides whether the post is shown in a
	// feed at all (as a post's own entry is not, by a muted or blocked
	// author).
	Author Relation
}

// Sharers is who reposted one post among the people a viewer is shown
// reposts of (RepostedBy).
type Sharers struct {
	First     Repost // the earliest of those reposts (by time, then id)
	FirstUser *User  // its reposter (ID, NickName, Icon)
	Count     int    // how many of them there are
	Viewer    bool   // one of them is the viewer's
}

// Places reports whether repost entry r places its post in the viewer's
// feed, the post's reposts among those the viewer is shown being sh: the
// post exists, nothing excludes its author, the viewer neither is nor
// follows its author (the post's own entry would place it), and r is the
// earliest of those reposts (so one the viewer is shown). Earliest, not
// newest: a new repost is newer than every entry before it, so neither a
// repost nor an undo ever moves a post to an older entry (repost.go's
// rule).
func (r *RepostEntry) Places(sh *Sharers) bool {
	return r.Post != nil && !r.AuthorFollowed && !r.Author.excludes() && sh != nil && sh.First.ID == r.ID
}

// excludes reports whether relation r to a post's author (or a reposter)
// keeps the post out of a viewer's feeds: See does not show the user in
// full (a mute, or a block either way).
func (r Relation) excludes() bool { return seeUser(Viewer{}, 0, r).Sight != Shown }

func (s *Service) repostStore() (RepostStore, error) {
	if s.Reposts == nil {
		return nil, Errorf(ENOTFOUND, "reposts are not enabled")
	}
	return s.Reposts, nil
}

// Repost makes userID repost (repost) or undo their repost of post id. A
// repost needs a post userID is shown (ENOTFOUND otherwise, as shownPost:
// hidden, or its author blocks userID); an undo needs only the post.
// Idempotent.
func (s *Service) Repost(ctx context.Context, userID, id int64, repost bool) error {
	st, err := s.repostStore()
	if err != nil {
		return err
	}
	if err := validID("id", id); err != nil {
		return err
	}
	if repost {
		if _, err := s.shownPost(ctx, userID, id); err != nil {
			return err
		}
	}
	_, err = st.SetRepost(ctx, userID, id, repost, s.now())
	return err
}

// SetShowReposts sets whether userID's feed shows the reposts of
// targetID, whom userID follows (ENOTFOUND otherwise). It applies at
// once to the whole feed, the part already scrolled past included.
func (s *Service) SetShowReposts(ctx context.Context, userID, targetID int64, show bool) error {
	st, err := s.repostStore()
	if err != nil {
		return err
	}
	if err := validID("id", targetID); err != nil {
		return err
	}
	return st.SetShowReposts(ctx, userID, targetID, show)
}

// SetQuotePolicy sets who may quote post id of userID and returns the
// post as its author sees it. ENOTFOUND, ErrNotQuotePolicySetter.
func (s *Service) SetQuotePolicy(ctx context.Context, userID, id int64, p QuotePolicy) (*PostView, error) {
	st, err := s.repostStore()
	if err != nil {
		return nil, err
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	if p < QuotesEveryone || p > QuotesNobody {
		return nil, Errorf(EINVALID, "quote_policy must be everyone, following or nobody")
	}
	if err := st.SetQuotePolicy(ctx, id, userID, p, s.now()); err != nil {
		return nil, err
	}
	return s.Post(ctx, userID, id)
}

// quotable refuses a quote by userID of post id that userID is not shown
// (ENOTFOUND, as shownPost); the store checks the rest in its transaction.
func (s *Service) quotable(ctx context.Context, userID, id int64) error {
	if s.Reposts == nil {
		return Errorf(ENOTFOUND, "quotes are not enabled")
	}
	_, err := s.shownPost(ctx, userID, id)
	return err
}

// placeReposts adds to views, a page's hydrated posts by entry id, the
// page's repost entries that place their posts (RepostEntry.Places), as
// views of those posts, and sets RepostedBy and Reposted on every view:
// feedReposts' store calls, none when no entry of ids is missing from
// views and no post of views has reposts.
func (s *Service) placeReposts(ctx context.Context, viewerID int64, ids []int64, views map[int64]*PostView) error {
	if s.Reposts == nil {
		return nil
	}
	var missing, reposted []int64
	for _, id := range ids {
		if v := views[id]; v == nil {
			missing = append(missing, id)
		} else if v.Reposts > 0 {
			reposted = append(reposted, v.ID)
		}
	}
	entries, sharers, err := s.feedReposts(ctx, viewerID, missing, reposted)
	if err != nil {
		return err
	}
	for id, r := range entries {
		if r.Places(sharers[r.PostID]) {
			v := *r.Post
			views[id] = &v
		}
	}
	for _, v := range views {
		v.setSharers(sharers[v.ID])
	}
	return nil
}

// feedReposts reads what a page of viewerID's feed needs to place and
// show its posts: the entries among entryIDs that are reposts
// (RepostEntries), and who reposted each of postIDs and each post one of
// those entries may place (Sharers). A post that has one repost, the
// entry's, needs no Sharers read: they are that repost, if its reposter is
// shown. At most two store calls, none for nothing to read.
func (s *Service) feedReposts(ctx context.Context, viewerID int64, entryIDs, postIDs []int64) (map[int64]*RepostEntry, map[int64]*Sharers, error) {
	entries := map[int64]*RepostEntry{}
	if len(entryIDs) > 0 {
		var err error
		if entries, err = s.Reposts.RepostEntries(ctx, viewerID, entryIDs); err != nil {
			return nil, nil, err
		}
	}
	wanted := slices.Clone(postIDs)
	var single []*RepostEntry
	for _, r := range entries {
		switch {
		case r.Post == nil || r.AuthorFollowed || r.Author.excludes():
		case r.Post.Reposts == 1:
			single = append(single, r)
		default:
			wanted = append(wanted, r.PostID)
		}
	}
	sharers := map[int64]*Sharers{}
	if len(wanted) > 0 {
		slices.Sort(wanted)
		var err error
		if sharers, err = s.Reposts.Sharers(ctx, viewerID, slices.Compact(wanted)); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range single {
		if r.ReposterShown && sharers[r.PostID] == nil {
			u := &User{ID: r.UserID}
			if r.Reposter != nil {
				u = r.Reposter
			}
			AddSharer(sharers, viewerID, r.Repost, u)
		}
	}
	return entries, sharers, nil
}

// setSharers sets v's RepostedBy and Reposted from sh (nil: nobody).
func (v *PostView) setSharers(sh *Sharers) {
	if sh == nil || sh.Count == 0 {
		return
	}
	v.Reposted = sh.Viewer
	v.RepostedBy = &RepostedBy{User: sh.FirstUser, At: sh.First.CreatedAt, Others: sh.Count - 1}
}

// shareViews sets RepostedBy and Reposted on views outside a feed page
// (Hydrate): one store call, none when no post has reposts.
func (s *Service) shareViews(ctx context.Context, viewerID int64, views []PostView) error {
	if s.Reposts == nil || viewerID <= 0 {
		return nil
	}
	var reposted []int64
	for _, v := range views {
		if v.Reposts > 0 {
			reposted = append(reposted, v.ID)
		}
	}
	if len(reposted) == 0 {
		return nil
	}
	sharers, err := s.Reposts.Sharers(ctx, viewerID, reposted)
	if err != nil {
		return err
	}
	for i := range views {
		views[i].setSharers(sharers[views[i].ID])
	}
	return nil
}

// embedQuotes sets Quote on the quotes among views: the quoted post
// hydrated for viewerID, or a tombstone when it is gone or viewerID may
// not see it (hidden, a block either way, a mute of its author). A
// constant number of store calls, none when no view is a quote.
func (s *Service) embedQuotes(ctx context.Context, viewerID int64, views []PostView) error {
	var ids []int64
	for _, v := range views {
		if v.QuoteOf != 0 {
			ids = append(ids, v.QuoteOf)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	m, err := s.Posts.Posts(ctx, ids)
	if err != nil {
		return err
	}
	posts := make([]*Post, 0, len(m))
	authors := make([]int64, 0, len(m))
	for _, id := range ids {
		if p := m[id]; p != nil {
			posts = append(posts, p)
			authors = append(authors, p.UserID)
		}
	}
	if posts, err = s.shown(ctx, viewerID, posts); err != nil {
		return err
	}
	var rel map[int64]Relation
	if viewerID > 0 && len(posts) > 0 {
		if rel, err = s.Social.Relations(ctx, viewerID, authors); err != nil {
			return err
		}
		posts = slices.DeleteFunc(posts, func(p *Post) bool { return rel[p.UserID].excludes() })
	}
	hv, err := s.hydratePosts(ctx, viewerID, posts)
	if err != nil {
		return err
	}
	shown := make(map[int64]*PostView, len(hv))
	for i := range hv {
		shown[hv[i].ID] = &hv[i]
	}
	for i := range views {
		id := views[i].QuoteOf
		if id == 0 {
			continue
		}
		q := &Quoted{ID: id, State: QuoteShown, Post: shown[id]}
		switch {
		case q.Post != nil:
		case m[id] == nil:
			q.State = QuoteDeleted
		default:
			q.State = QuoteUnavailable
		}
		views[i].Quote = q
	}
	return nil
}

// AddSharer counts repost r, by user u, into m's Sharers of its post, for
// viewerID (a store's Sharers reading them one by one).
func AddSharer(m map[int64]*Sharers, viewerID int64, r Repost, u *User) {
	sh := m[r.PostID]
	if sh == nil {
		sh = &Sharers{First: r, FirstUser: u}
		m[r.PostID] = sh
	} else if r.Entry().Compare(sh.First.Entry()) > 0 { // earlier in time
		sh.First, sh.FirstUser = r, u
	}
	sh.Count++
	sh.Viewer = sh.Viewer || r.UserID == viewerID
}
