package feed

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of posts and of the lists of posts.
const (
	MaxTitle      = 255
	MaxContent    = 2048
	MaxImages     = 2048
	MaxPageNumber = 1 << 20
	ListPageSize  = 10 // posts per page of /blog/of/me, /of/user, /hot
	LikersShown   = 5
)

// Post is a published post ("blog" in the compatible API).
type Post struct {
	ID       int64
	ShopID   int64
	UserID   int64
	Title    string
	Images   string
	Content  string // as the author sent it; escaping is the renderer's job
	Liked    int
	Comments int // comments and replies not deleted (comment.go)
	// CommentPolicy is who may comment (comment.go).
	CommentPolicy CommentPolicy
	CreatedAt     time.Time // millisecond precision: it is the inbox score
	UpdatedAt     time.Time
	// MediaIDs are the uploads a new post shows, in order: CreatePost
	// links them to it (media.go). Reads leave it empty (PostView.Media).
	MediaIDs []int64
}

// Score is the post's inbox score: its creation time in Unix milliseconds.
// Every delivery of a post uses this score, so redelivery is idempotent.
func (p *Post) Score() int64 { return p.CreatedAt.UnixMilli() }

// Entry is the post's feed entry.
func (p *Post) Entry() Entry { return Entry{PostID: p.ID, Score: p.Score()} }

// PostStore persists posts and likes.
type PostStore interface {
	// CreatePost stores p (setting p.ID) and, in the same transaction,
	// enqueues its fan-out job: a committed post is always delivered. It
	// links the uploads p.MediaIDs to the post in their order; ECONFLICT,
	// storing nothing, when one is not p.UserID's or a post shows it.
	CreatePost(ctx context.Context, p *Post) error
	// Post returns one post; ENOTFOUND if there is none.
	Post(ctx context.Context, id int64) (*Post, error)
	// Posts returns the posts that exist among ids, by id.
	Posts(ctx context.Context, ids []int64) (map[int64]*Post, error)
	// DeletePost deletes a post of userID, its likes, and enqueues the removal
	// of its inbox entries in the same transaction. ENOTFOUND if the post does
	// not exist, EFORBIDDEN if userID is not its author.
	DeletePost(ctx context.Context, id, userID int64) error
	// PostsOfUser returns userID's posts, newest first.
	PostsOfUser(ctx context.Context, userID int64, offset, limit int) ([]*Post, error)
	// PostsOfUserWithin returns at most limit of userID's posts within b, in
	// feed order (newest first): a keyset page, exact whatever is published
	// or deleted between two pages.
	PostsOfUserWithin(ctx context.Context, userID int64, b Bound, limit int) ([]*Post, error)
	// HotPosts returns posts by like count descending (then newest first).
	HotPosts(ctx context.Context, offset, limit int) ([]*Post, error)
	// ToggleLike flips userID's like of postID and keeps the post's like
	// count in step; it reports whether the post is now liked. ENOTFOUND if
	// the post does not exist.
	ToggleLike(ctx context.Context, postID, userID int64, now time.Time) (bool, error)
	// SetLike makes userID like (like=true) or stop liking postID and keeps
	// the post's like count in step, in one transaction; the count moves
	// only when the like changed. Idempotent, also under concurrent calls.
	// ENOTFOUND if the post does not exist.
	SetLike(ctx context.Context, postID, userID int64, like bool, now time.Time) error
	// Likers returns the ids of the first limit users who liked postID,
	// earliest first.
	Likers(ctx context.Context, postID int64, limit int) ([]int64, error)
	// LikedBy reports which of postIDs userID likes.
	LikedBy(ctx context.Context, userID int64, postIDs []int64) (map[int64]bool, error)
	// FeedEntries computes userID's feed from the source of truth (pull):
	// the posts of userID and of everyone userID follows, as inbox entries
	// within b, in feed order, after skipping offset, at most limit. It is
	// what fan-out would have put in the inbox, and serves rebuilds and
	// reads while the inbox store is down.
	FeedEntries(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error)
}

// PostInput is what an author sends to publish.
type PostInput struct {
	Title   string
	Content string
	Images  string
	ShopID  int64
	// CommentPolicy is who may comment; the zero value is everyone.
	CommentPolicy CommentPolicy
	// MediaIDs are uploads of the author to show after Images' items
	// (media.go).
	MediaIDs []int64
}

// Validate returns EINVALID describing the first problem of in.
func (in PostInput) Validate() error {
	switch {
	case strings.TrimSpace(in.Title) == "":
		return Errorf(EINVALID, "title must not be empty")
	case utf8.RuneCountInString(in.Title) > MaxTitle:
		return Errorf(EINVALID, "title must be at most %d characters", MaxTitle)
	case strings.TrimSpace(in.Content) == "":
		return Errorf(EINVALID, "content must not be empty")
	case utf8.RuneCountInString(in.Content) > MaxContent:
		return Errorf(EINVALID, "content must be at most %d characters", MaxContent)
	case utf8.RuneCountInString(in.Images) > MaxImages:
		return Errorf(EINVALID, "images must be at most %d characters", MaxImages)
	case in.ShopID < 0:
		return Errorf(EINVALID, "shopId must not be negative")
	case in.CommentPolicy < CommentsEveryone || in.CommentPolicy > CommentsNobody:
		return Errorf(EINVALID, "comment_policy must be everyone, following or nobody")
	case !utf8.ValidString(in.Title + in.Content + in.Images):
		return Errorf(EINVALID, "text must be valid UTF-8")
	}
	if err := validTitle(in.Title); err != nil {
		return err
	}
	if strings.ContainsRune(in.Content, 0) {
		return Errorf(EINVALID, "content must not contain NUL characters")
	}
	return validImages(in.Images)
}

// MaxImageItems is how many images a post may have.
const MaxImageItems = 9

// validTitle refuses what could turn a title into markup or disguise it
// when a client renders it: a "<" that could open an HTML tag (followed by
// a letter, "/", "!" or "?"; "a < b" and "<3" pass), C0 control characters
// other than newline and tab, and the bidirectional embedding, override and
// isolate controls (U+202A-U+202E, U+2066-U+2069).
func validTitle(t string) error {
	for i, r := range t {
		switch {
		case r == '<' && i+1 < len(t) && OpensTag(t[i+1]):
			return Errorf(EINVALID, "title must not contain HTML tags (\"<\" followed by a letter, \"/\", \"!\" or \"?\")")
		case controlInTitle(r):
			return Errorf(EINVALID, "title must not contain control characters")
		case bidiControl(r):
			return Errorf(EINVALID, "title must not contain bidirectional control characters")
		}
	}
	return nil
}

// OpensTag reports whether a "<" followed by c could open an HTML tag.
func OpensTag(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '!' || c == '?'
}

func controlInTitle(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f }

func bidiControl(r rune) bool { return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) }

// RefusedInTitle reports whether a title may not hold r: the C0 control
// characters other than newline and tab, DEL, and the bidirectional
// embedding, override and isolate controls.
func RefusedInTitle(r rune) bool { return controlInTitle(r) || bidiControl(r) }

// validImages checks the comma-separated image list: at most MaxImageItems
// items, each a path starting with "/" or an http:// or https:// URL,
// without quotes, angle brackets, backslashes or whitespace.
func validImages(images string) error {
	if images == "" {
		return nil
	}
	items := strings.Split(images, ",")
	if len(items) > MaxImageItems {
		return Errorf(EINVALID, "images must have at most %d items", MaxImageItems)
	}
	for _, it := range items {
		if !ValidImage(it) {
			return Errorf(EINVALID, "each image must be a /path or an http(s):// URL without quotes, angle brackets or spaces")
		}
	}
	return nil
}

// ValidImage reports whether it is an image a post may list (and an icon
// feedd shows): a path starting with "/" or an http:// or https:// URL,
// without quotes, angle brackets, backslashes or whitespace.
func ValidImage(it string) bool {
	path := strings.HasPrefix(it, "/") && !strings.HasPrefix(it, "//")
	url := strings.HasPrefix(it, "https://") || strings.HasPrefix(it, "http://")
	return (path || url) && !strings.ContainsFunc(it, badInURL) && (!url || len(strings.SplitN(it, "://", 2)[1]) > 0)
}

func badInURL(r rune) bool {
	return r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '`' || r == '<' || r == '>' || r == '\\' || unicode.IsSpace(r)
}

// Publish stores a post of userID and enqueues its fan-out in the same
// transaction. It returns as soon as the post is committed.
func (s *Service) Publish(ctx context.Context, userID int64, in PostInput) (*Post, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	mediaIDs, images, err := s.postMedia(ctx, userID, in.Images, in.MediaIDs)
	if err != nil {
		return nil, err
	}
	now := s.now().Truncate(time.Millisecond)
	p := &Post{UserID: userID, ShopID: in.ShopID, Title: in.Title, Content: in.Content, Images: images, MediaIDs: mediaIDs, CommentPolicy: in.CommentPolicy, CreatedAt: now, UpdatedAt: now}
	var began time.Time
	if s.Trace.Enabled() {
		began = time.Now()
	}
	if err := s.Posts.CreatePost(ctx, p); err != nil {
		return nil, err
	}
	if s.Trace.Enabled() {
		s.Trace.Stage(p.ID, "committed", "author_id", userID, "insert_began_us", began.UnixMicro())
	}
	return p, nil
}

// Post returns one post hydrated for viewerID.
func (s *Service) Post(ctx context.Context, viewerID, id int64) (*PostView, error) {
	p, err := s.shownPost(ctx, viewerID, id)
	if err != nil {
		return nil, err
	}
	v, err := s.Hydrate(ctx, viewerID, []*Post{p})
	if err != nil {
		return nil, err
	}
	return &v[0], nil
}

// shown drops the posts viewerID (0: anonymous) must not be shown on any
// route: those whose author blocks viewerID (to a blocked user they are as
// if they did not exist) and those hidden by moderation, unless viewerID
// is their author. At most two store calls. Every route that returns a
// post outside a feed page goes through it; feed pages apply the same
// rules in hydrateEntries (docs/API.md, "Blocks and hidden posts").
func (s *Service) shown(ctx context.Context, viewerID int64, posts []*Post) ([]*Post, error) {
	if len(posts) == 0 {
		return posts, nil
	}
	ids := make([]int64, 0, len(posts))
	authors := make([]int64, 0, len(posts))
	for _, p := range posts {
		ids = append(ids, p.ID)
		authors = append(authors, p.UserID)
	}
	hidden, err := s.Filters.Hidden(ctx, ids)
	if err != nil {
		return nil, err
	}
	var blocked map[int64]bool
	if viewerID > 0 {
		if blocked, err = s.Social.BlockedBy(ctx, viewerID, authors); err != nil {
			return nil, err
		}
	}
	if len(hidden) == 0 && len(blocked) == 0 {
		return posts, nil
	}
	out := make([]*Post, 0, len(posts))
	for _, p := range posts {
		if !blocked[p.UserID] && (!hidden[p.ID] || p.UserID == viewerID) {
			out = append(out, p)
		}
	}
	return out, nil
}

// shownPost returns post id as viewerID may see it: ENOTFOUND when there
// is none, or when shown leaves it out.
func (s *Service) shownPost(ctx context.Context, viewerID, id int64) (*Post, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	p, err := s.Posts.Post(ctx, id)
	if err != nil {
		return nil, err
	}
	ps, err := s.shown(ctx, viewerID, []*Post{p})
	if err != nil {
		return nil, err
	} else if len(ps) == 0 {
		return nil, ErrNotFound("post")
	}
	return p, nil
}

// DeletePost deletes a post of userID. ENOTFOUND, EFORBIDDEN.
func (s *Service) DeletePost(ctx context.Context, userID, id int64) error {
	if err := validID("id", id); err != nil {
		return err
	}
	return s.Posts.DeletePost(ctx, id, userID)
}

// ToggleLike flips userID's like of post id.
func (s *Service) ToggleLike(ctx context.Context, userID, id int64) (bool, error) {
	if err := validID("id", id); err != nil {
		return false, err
	}
	return s.Posts.ToggleLike(ctx, id, userID, s.now())
}

// SetLike makes userID like (like=true) or stop liking post id. Idempotent,
// also under concurrent calls: the store sets the like in one transaction.
func (s *Service) SetLike(ctx context.Context, userID, id int64, like bool) error {
	if err := validID("id", id); err != nil {
		return err
	}
	return s.Posts.SetLike(ctx, id, userID, like, s.now())
}

// Likers returns the first LikersShown users who liked post id, earliest
// first, as viewerID may see them: ENOTFOUND for a post viewerID is not
// shown (shown), and likers who block viewerID are left out.
func (s *Service) Likers(ctx context.Context, viewerID, id int64) ([]*User, error) {
	if _, err := s.shownPost(ctx, viewerID, id); err != nil {
		return nil, err
	}
	ids, err := s.Posts.Likers(ctx, id, LikersShown)
	if err != nil {
		return nil, err
	}
	if viewerID > 0 && len(ids) > 0 {
		blocking, err := s.Social.BlockedBy(ctx, viewerID, ids)
		if err != nil {
			return nil, err
		}
		ids = slices.DeleteFunc(ids, func(id int64) bool { return blocking[id] })
	}
	return s.usersInOrder(ctx, ids)
}

// pageOffset returns the offset of page current (from 1) of a post list.
func pageOffset(current int) (offset int, err error) {
	if current < 1 || current > MaxPageNumber {
		return 0, Errorf(EINVALID, "current must be a page number from 1 to %d", MaxPageNumber)
	}
	return (current - 1) * ListPageSize, nil
}

// PostsOfUser returns page current (from 1) of authorID's posts, newest first.
func (s *Service) PostsOfUser(ctx context.Context, viewerID, authorID int64, current int) ([]PostView, error) {
	if err := validID("id", authorID); err != nil {
		return nil, err
	}
	off, err := pageOffset(current)
	if err != nil {
		return nil, err
	}
	posts, err := s.Posts.PostsOfUser(ctx, authorID, off, ListPageSize)
	if err != nil {
		return nil, err
	}
	if posts, err = s.shown(ctx, viewerID, posts); err != nil {
		return nil, err
	}
	return s.Hydrate(ctx, viewerID, posts)
}

// UserPosts returns at most limit (0: DefaultTimelineLimit) of authorID's
// posts after cursor after (nil: from the newest), newest first, for
// viewerID, and the cursor of the next page (nil at the end). The cursor is
// the native timeline's: a keyset on (creation ms, post id).
func (s *Service) UserPosts(ctx context.Context, viewerID, authorID int64, after *Cursor, limit int) (*Page, error) {
	if err := validID("id", authorID); err != nil {
		return nil, err
	}
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if _, err := s.Users.User(ctx, authorID); err != nil {
		return nil, err
	}
	if blocks, err := s.Social.BlockedBy(ctx, viewerID, []int64{authorID}); err != nil {
		return nil, err
	} else if blocks[authorID] {
		return &Page{List: []PostView{}}, nil // as if the author had no posts
	}
	b := Top()
	if after != nil {
		b = After(*after)
	}
	// One more than asked tells whether a next page exists.
	posts, err := s.Posts.PostsOfUserWithin(ctx, authorID, b, limit+1)
	if err != nil {
		return nil, err
	}
	page := &Page{}
	if len(posts) > limit {
		posts = posts[:limit]
		next := posts[limit-1].Entry()
		page.Next = &next
	}
	// The cursor is the last post read, shown or not, so a page of
	// hidden posts does not end the scroll.
	if posts, err = s.shown(ctx, viewerID, posts); err != nil {
		return nil, err
	}
	if page.List, err = s.Hydrate(ctx, viewerID, posts); err != nil {
		return nil, err
	}
	return page, nil
}

// HotPosts returns page current of posts by like count.
func (s *Service) HotPosts(ctx context.Context, viewerID int64, current int) ([]PostView, error) {
	off, err := pageOffset(current)
	if err != nil {
		return nil, err
	}
	posts, err := s.Posts.HotPosts(ctx, off, ListPageSize)
	if err != nil {
		return nil, err
	}
	if posts, err = s.shown(ctx, viewerID, posts); err != nil {
		return nil, err
	}
	return s.Hydrate(ctx, viewerID, posts)
}
