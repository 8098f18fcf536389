package feed

import (
	"context"
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
	// ForeignID is the app's own id of a post published through the
	// server API ("" for others): unique among posts (serverapi.go).
	ForeignID string
	// QuoteOf is the post this one quotes (0: none), QuotePolicy who may
	// quote this one, Reposts and Quotes how many reposts and quotes it
	// has (repost.go).
	QuoteOf     int64
	QuotePolicy QuotePolicy
	Reposts     int
	Quotes      int
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
	// enqueues its fan-out job: a committed post is always delivered. A
	// quote (p.QuoteOf) is refused, in that transaction, as
	// RepostStore.SetRepost refuses a repost (ENOTFOUND), and by the quoted
	// post's QuotePolicy (ErrQuotesOff, ErrQuotesFollowing); it moves the
	// quoted post's Quotes and tells its author (NotifyQuote).
	// It links the uploads p.MediaIDs to the post in their order; ECONFLICT,
	// storing nothing, when one is not p.UserID's or a post shows it.
	CreatePost(ctx context.Context, p *Post) error
	// CreateForeignPost is CreatePost for a post with a ForeignID: when a
	// post with that foreign id exists, it stores nothing and makes *p that
	// post (created false). Concurrent calls with one foreign id store one
	// post.
	CreateForeignPost(ctx context.Context, p *Post) (created bool, err error)
	// PostByForeignID returns the post of a foreign id; ENOTFOUND if none.
	PostByForeignID(ctx context.Context, foreignID string) (*Post, error)
	// Post returns one post; ENOTFOUND if there is none.
	Post(ctx context.Context, id int64) (*Post, error)
	// Posts returns the posts that exist among ids, by id.
	Posts(ctx context.Context, ids []int64) (map[int64]*Post, error)
	// DeletePost deletes a post of userID, its likes, and enqueues the removal
	// of its inbox entries in the same transaction; a quote's deletion moves
	// the quoted post's Quotes. The post's reposts go with it later, by its
	// removal job (RepostStore.PurgeReposts). ENOTFOUND if the post does
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
	// the posts and reposts (Repost.Entry) of userID and of everyone userID
	// follows, as inbox entries within b, in feed order, after skipping
	// offset, at most limit. It is
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
	// QuoteOf makes the post a quote of that post (0: none); QuotePolicy
	// is who may quote this post, the zero value everyone.
	QuoteOf     int64
	QuotePolicy QuotePolicy
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
	case in.QuotePolicy < QuotesEveryone || in.QuotePolicy > QuotesNobody:
		return Errorf(EINVALID, "quote_policy must be everyone, following or nobody")
	case in.QuoteOf < 0:
		return Errorf(EINVALID, "quote_of must be a positive integer")
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
	if in.QuoteOf != 0 {
		// Who may quote is checked in the store's transaction; what the
		// quoter may see of the post, here (quotable).
		if err := s.quotable(ctx, userID, in.QuoteOf); err != nil {
			return nil, err
		}
	}
	mediaIDs, images, err := s.postMedia(ctx, userID, in.Images, in.MediaIDs)
	if err != nil {
		return nil, err
	}
	now := s.now().Truncate(time.Millisecond)
	p := &Post{UserID: userID, ShopID: in.ShopID, Title: in.Title, Content: in.Content, Images: images, MediaIDs: mediaIDs, CommentPolicy: in.CommentPolicy,
		QuoteOf: in.QuoteOf, QuotePolicy: in.QuotePolicy, CreatedAt: now, UpdatedAt: now}
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

// shown drops the posts See leaves Unseen for viewerID on every route:
// those whose author blocks viewerID (to a blocked user they are as if
// they did not exist) and those hidden by moderation, unless viewerID is
// their author. Every route that returns a post outside a feed page goes
// through it; feed pages ask See in filterViews (docs/API.md, "Who sees
// what").
func (s *Service) shown(ctx context.Context, viewerID int64, posts []*Post) ([]*Post, error) {
	if len(posts) == 0 {
		return posts, nil
	}
	scenes, err := s.postScenes(ctx, viewerID, posts)
	if err != nil {
		return nil, err
	}
	out := make([]*Post, 0, len(posts))
	for i, p := range posts {
		if See(Viewer{ID: viewerID}, scenes[i]).Sight != Unseen {
			out = append(out, p)
		}
	}
	return out, nil
}

// shownPost returns post id as viewerID may see it: ENOTFOUND when there
// is none, or when shown leaves it out.
func (s *Service) shownPost(ctx context.Context, viewerID, id int64) (*Post, error) {
	sc, err := s.postScene(ctx, viewerID, id)
	return sc.Post, err
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
// shown (shown), and the likers See leaves Unseen (a block either way) are
// left out.
func (s *Service) Likers(ctx context.Context, viewerID, id int64) ([]*User, error) {
	if _, err := s.shownPost(ctx, viewerID, id); err != nil {
		return nil, err
	}
	ids, err := s.Posts.Likers(ctx, id, LikersShown)
	if err != nil {
		return nil, err
	}
	if ids, err = s.seenUsers(ctx, viewerID, ids); err != nil {
		return nil, err
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
	if rel, err := s.relations(ctx, viewerID, []int64{authorID}); err != nil {
		return nil, err
	} else if See(Viewer{ID: viewerID}, Scene{Post: &Post{UserID: authorID}, Rel: rel}).Sight == Unseen {
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
