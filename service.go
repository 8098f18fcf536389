package feed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Limits of the compatible API.
const (
	CodeTTL          = 2 * time.Minute
	CodeResendAfter  = 60 * time.Second
	CodeMaxTries     = 5
	SessionTTL       = 30 * time.Minute
	MaxTitle         = 255
	MaxContent       = 2048
	MaxImages        = 2048
	MaxPageSize      = 50
	MaxOffset        = 1 << 20
	MaxPageNumber    = 1 << 20
	ListPageSize     = 10 // posts per page of /blog/of/me, /of/user, /hot
	LikersShown      = 5
	CommonFollowsMax = 100
	// maxEmptyPages bounds how many fully-deleted pages one feed read skips.
	maxEmptyPages = 16
)

// Service holds the business rules of feedd on top of the store interfaces.
// Every backend combination runs the same Service.
type Service struct {
	Users   UserStore
	Auth    AuthStore
	Posts   PostStore
	Follows FollowStore
	Inbox   Inbox
	Codes   CodeSender
	// Social and Outbox enable mutes, blocks, follow lists, pull-mode
	// authors merged at read time and inactive users; nil leaves them out.
	Social SocialStore
	Outbox Outbox
	// ActiveWindow: a user not seen for this long is skipped by fan-out, and
	// their inbox is regenerated when they come back (0: nobody is skipped).
	ActiveWindow time.Duration
	// PullThreshold: a user followed by at least this many is put in pull
	// mode by the follow that crosses it (0: never). Leaving pull mode is the
	// follow job's work (fanout).
	PullThreshold int

	Now      func() time.Time // defaults to time.Now
	Rand     io.Reader        // defaults to crypto/rand.Reader
	PageSize int              // default feed page size; 10 if zero
	InboxCap int              // entries a rebuilt inbox holds; 800 if zero
	Log      *slog.Logger

	touched sync.Map // user id -> time.Time of this process's last Touch
}

// DefaultInboxCap is how many entries an inbox keeps, as Mastodon and
// Twitter's timelines do.
const DefaultInboxCap = 800

func (s *Service) inboxCap() int {
	if s.InboxCap > 0 {
		return s.InboxCap
	}
	return DefaultInboxCap
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) rand() io.Reader {
	if s.Rand != nil {
		return s.Rand
	}
	return rand.Reader
}

func (s *Service) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return 10
}

var phoneRE = regexp.MustCompile(`^1[3-9][0-9]{9}$`)

// ValidPhone reports whether phone is an 11-digit mainland China mobile number.
func ValidPhone(phone string) bool { return phoneRE.MatchString(phone) }

// HashSecret returns the stored form of a token or code.
func HashSecret(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Service) randomString(n int, alphabet string) (string, error) {
	var b strings.Builder
	max := big.NewInt(int64(len(alphabet)))
	for i := 0; i < n; i++ {
		k, err := rand.Int(s.rand(), max)
		if err != nil {
			return "", err
		}
		b.WriteByte(alphabet[k.Int64()])
	}
	return b.String(), nil
}

// SendCode creates a 6-digit one-time code for phone and sends it.
// EINVALID for a malformed phone, ECONFLICT if asked again within a minute.
func (s *Service) SendCode(ctx context.Context, phone string) error {
	if !ValidPhone(phone) {
		return Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	code, err := s.randomString(6, "0123456789")
	if err != nil {
		return err
	}
	if err := s.Auth.SaveCode(ctx, phone, HashSecret(phone, code), s.now(), CodeTTL, CodeResendAfter); err != nil {
		return err
	}
	return s.Codes.SendCode(ctx, phone, code)
}

// Login checks a code and returns a new session token, creating the user on
// first login. EINVALID for a malformed phone or a wrong, expired or burned code.
func (s *Service) Login(ctx context.Context, phone, code string) (string, error) {
	if !ValidPhone(phone) {
		return "", Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	now := s.now()
	if err := s.Auth.ConsumeCode(ctx, phone, HashSecret(phone, code), now, CodeMaxTries); err != nil {
		return "", err
	}
	nick, err := s.randomString(10, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	if err != nil {
		return "", err
	}
	u, err := s.Users.FindOrCreateUser(ctx, phone, "user_"+nick, now)
	if err != nil {
		return "", err
	}
	raw := make([]byte, 24) // 192 bits
	if _, err := io.ReadFull(s.rand(), raw); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	if err := s.Auth.CreateSession(ctx, HashSecret(token), u.ID, now, now.Add(SessionTTL)); err != nil {
		return "", err
	}
	if err := s.touch(ctx, u.ID); err != nil {
		return "", err
	}
	return token, nil
}

// Authenticate returns the user id of a live session token and extends the
// session. EUNAUTHORIZED otherwise.
func (s *Service) Authenticate(ctx context.Context, token string) (int64, error) {
	if token == "" {
		return 0, Errorf(EUNAUTHORIZED, "login required")
	}
	id, err := s.Auth.Session(ctx, HashSecret(token), s.now(), SessionTTL)
	if err != nil {
		return 0, err
	}
	if err := s.touch(ctx, id); err != nil {
		return 0, err
	}
	return id, nil
}

// touchInterval is how often a user's activity time is written: activity
// matters by the day (ActiveWindow), not by the request.
const touchInterval = time.Hour

// touch records that userID is active. A user back after more than
// ActiveWindow was skipped by fan-out meanwhile: their inbox is regenerated
// here, before the request that brought them back reads it.
func (s *Service) touch(ctx context.Context, userID int64) error {
	if s.Social == nil {
		return nil
	}
	now := s.now()
	if last, ok := s.touched.Load(userID); ok && now.Sub(last.(time.Time)) < touchInterval && now.After(last.(time.Time)) {
		return nil
	}
	prev, err := s.Social.Touch(ctx, userID, now, touchInterval)
	if err != nil {
		return err
	}
	s.touched.Store(userID, now)
	if s.ActiveWindow > 0 && now.Sub(prev) > s.ActiveWindow {
		s.log().Info("inactive user is back; regenerating the inbox", "user_id", userID, "last_active", prev)
		if err := s.RebuildInbox(ctx, userID); err != nil {
			s.log().Warn("regenerate inbox", "user_id", userID, "error", err)
		}
	}
	return nil
}

// Logout ends the session of token.
func (s *Service) Logout(ctx context.Context, token string) error {
	return s.Auth.DeleteSession(ctx, HashSecret(token))
}

// User returns one user; ENOTFOUND if there is none.
func (s *Service) User(ctx context.Context, id int64) (*User, error) {
	if id <= 0 {
		return nil, Errorf(EINVALID, "id must be a positive integer")
	}
	return s.Users.User(ctx, id)
}

// PostInput is what an author sends to publish.
type PostInput struct {
	Title   string
	Content string
	Images  string
	ShopID  int64
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
	case !utf8.ValidString(in.Title + in.Content + in.Images):
		return Errorf(EINVALID, "text must be valid UTF-8")
	}
	return nil
}

// Publish stores a post of userID and enqueues its fan-out in the same
// transaction. It returns as soon as the post is committed.
func (s *Service) Publish(ctx context.Context, userID int64, in PostInput) (*Post, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.now().Truncate(time.Millisecond)
	p := &Post{UserID: userID, ShopID: in.ShopID, Title: in.Title, Content: in.Content, Images: in.Images, CreatedAt: now, UpdatedAt: now}
	if err := s.Posts.CreatePost(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// PostView is a post hydrated for one viewer.
type PostView struct {
	*Post
	Author *User // nil when the author no longer exists
	IsLike bool
}

// Hydrate turns posts into views for viewerID (0: anonymous) with a constant
// number of store calls: one for authors, one for the viewer's likes.
func (s *Service) Hydrate(ctx context.Context, viewerID int64, posts []*Post) ([]PostView, error) {
	if len(posts) == 0 {
		return []PostView{}, nil
	}
	authorIDs := make([]int64, 0, len(posts))
	postIDs := make([]int64, 0, len(posts))
	seen := make(map[int64]bool, len(posts))
	for _, p := range posts {
		postIDs = append(postIDs, p.ID)
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
		if liked, err = s.Posts.LikedBy(ctx, viewerID, postIDs); err != nil {
			return nil, err
		}
	}
	out := make([]PostView, len(posts))
	for i, p := range posts {
		out[i] = PostView{Post: p, Author: authors[p.UserID], IsLike: liked[p.ID]}
	}
	return out, nil
}

func validID(name string, id int64) error {
	if id <= 0 {
		return Errorf(EINVALID, "%s must be a positive integer", name)
	}
	return nil
}

// Post returns one post hydrated for viewerID.
func (s *Service) Post(ctx context.Context, viewerID, id int64) (*PostView, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	p, err := s.Posts.Post(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := s.Hydrate(ctx, viewerID, []*Post{p})
	if err != nil {
		return nil, err
	}
	return &v[0], nil
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

// Likers returns the first LikersShown users who liked post id, earliest first.
func (s *Service) Likers(ctx context.Context, id int64) ([]*User, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	if _, err := s.Posts.Post(ctx, id); err != nil {
		return nil, err
	}
	ids, err := s.Posts.Likers(ctx, id, LikersShown)
	if err != nil {
		return nil, err
	}
	return s.usersInOrder(ctx, ids)
}

func (s *Service) usersInOrder(ctx context.Context, ids []int64) ([]*User, error) {
	m, err := s.Users.Users(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*User, 0, len(ids))
	for _, id := range ids {
		if u := m[id]; u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

func pageBounds(current int) (offset int, err error) {
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
	off, err := pageBounds(current)
	if err != nil {
		return nil, err
	}
	posts, err := s.Posts.PostsOfUser(ctx, authorID, off, ListPageSize)
	if err != nil {
		return nil, err
	}
	return s.Hydrate(ctx, viewerID, posts)
}

// HotPosts returns page current of posts by like count.
func (s *Service) HotPosts(ctx context.Context, viewerID int64, current int) ([]PostView, error) {
	off, err := pageBounds(current)
	if err != nil {
		return nil, err
	}
	posts, err := s.Posts.HotPosts(ctx, off, ListPageSize)
	if err != nil {
		return nil, err
	}
	return s.Hydrate(ctx, viewerID, posts)
}

// Follow makes userID follow (follow=true) or unfollow targetID. Idempotent.
func (s *Service) Follow(ctx context.Context, userID, targetID int64, follow bool) error {
	if err := validID("id", targetID); err != nil {
		return err
	}
	if userID == targetID {
		return Errorf(EINVALID, "you cannot follow yourself")
	}
	if err := s.Follows.SetFollow(ctx, userID, targetID, follow, s.now()); err != nil {
		return err
	}
	if follow && s.PullThreshold > 0 && s.Social != nil {
		// Enter pull mode with the follow that crosses the threshold, so
		// that no read or rebuild from now on copies this author's posts
		// into inboxes. (A post job does the same check, should this
		// process stop right here.)
		u, err := s.Users.User(ctx, targetID)
		if err != nil {
			return err
		}
		if u.Mode == PushMode && u.Fans >= s.PullThreshold {
			return s.Social.SetMode(ctx, targetID, PullMode)
		}
	}
	return nil
}

// IsFollowing reports whether userID follows targetID.
func (s *Service) IsFollowing(ctx context.Context, userID, targetID int64) (bool, error) {
	if err := validID("id", targetID); err != nil {
		return false, err
	}
	return s.Follows.IsFollowing(ctx, userID, targetID)
}

// CommonFollows returns the users that both userID and targetID follow.
func (s *Service) CommonFollows(ctx context.Context, userID, targetID int64) ([]*User, error) {
	if err := validID("id", targetID); err != nil {
		return nil, err
	}
	if _, err := s.Users.User(ctx, targetID); err != nil {
		return nil, err
	}
	ids, err := s.Follows.CommonFollowees(ctx, userID, targetID, CommonFollowsMax)
	if err != nil {
		return nil, err
	}
	return s.usersInOrder(ctx, ids)
}

// Scroll is one page of the follow feed under the compatible cursor.
type Scroll struct {
	List    []PostView
	MinTime int64
	Offset  int
}

// ScrollFeed returns the page of userID's feed after cursor (lastID, offset)
// with at most size entries (0: the default page size). It returns nil when
// no entry is left.
//
// The cursor counts inbox entries, not returned posts: entries whose post was
// deleted are skipped, and a page whose every entry was skipped moves on to
// the next entries instead of ending the scroll.
func (s *Service) ScrollFeed(ctx context.Context, userID, lastID int64, offset, size int) (*Scroll, error) {
	if lastID <= 0 {
		return nil, Errorf(EINVALID, "lastId must be a positive integer")
	}
	if offset < 0 || offset > MaxOffset {
		return nil, Errorf(EINVALID, "offset must be an integer from 0 to %d", MaxOffset)
	}
	if size == 0 {
		size = s.pageSize()
	}
	if size < 1 || size > MaxPageSize {
		return nil, Errorf(EINVALID, "size must be an integer from 1 to %d", MaxPageSize)
	}
	max, skip := lastID, offset
	for range maxEmptyPages {
		entries, err := s.streamPage(ctx, userID, AtMost(max), skip, size)
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return nil, nil
		}
		minTime, next := NextCursor(entries, max, skip)
		views, err := s.hydrateEntries(ctx, userID, entries)
		if err != nil {
			return nil, err
		}
		if len(views) > 0 || len(entries) < size {
			if len(views) == 0 {
				return nil, nil // the rest of the inbox was deleted posts
			}
			return &Scroll{List: views, MinTime: minTime, Offset: next}, nil
		}
		max, skip = minTime, next
	}
	// Every page we looked at was deleted posts: hand the client a cursor
	// past them; it keeps scrolling because minTime is not 0.
	return &Scroll{List: []PostView{}, MinTime: max, Offset: skip}, nil
}

// errStoreDown marks a failed read of the inbox or outbox store.
type errStoreDown struct{ error }

// inboxPage reads a page of userID's inbox, rebuilding it first from the
// source of truth when it is lost. pulls are the pull-mode authors userID
// follows, which a rebuild leaves out (their posts are merged at read time).
func (s *Service) inboxPage(ctx context.Context, userID int64, pulls []int64, b Bound, skip, size int) ([]Entry, error) {
	entries, err := s.Inbox.Page(ctx, userID, b, skip, size)
	if errors.Is(err, ErrInboxLost) {
		if err = s.rebuild(ctx, userID, pulls); err == nil {
			entries, err = s.Inbox.Page(ctx, userID, b, skip, size)
		}
	}
	if err != nil {
		return nil, errStoreDown{err}
	}
	return entries, nil
}

// RebuildInbox refills userID's inbox with the newest InboxCap entries that
// fan-out would have put there, computed from the source of truth: the posts
// of userID and of the push-mode authors they follow. Deliveries that race
// it are kept (Restore merges).
func (s *Service) RebuildInbox(ctx context.Context, userID int64) error {
	var pulls []int64
	if s.Social != nil && s.Outbox != nil {
		var err error
		if pulls, err = s.Social.PullFollowees(ctx, userID); err != nil {
			return err
		}
	}
	return s.rebuild(ctx, userID, pulls)
}

func (s *Service) rebuild(ctx context.Context, userID int64, pulls []int64) error {
	entries, err := s.Posts.FeedEntries(ctx, userID, AtMost(math.MaxInt64), 0, s.inboxCap())
	if err != nil {
		return err
	}
	if len(pulls) > 0 && len(entries) > 0 {
		ids := make([]int64, len(entries))
		for i, e := range entries {
			ids[i] = e.PostID
		}
		posts, err := s.Posts.Posts(ctx, ids)
		if err != nil {
			return err
		}
		entries = slices.DeleteFunc(entries, func(e Entry) bool {
			p := posts[e.PostID]
			return p == nil || slices.Contains(pulls, p.UserID)
		})
	}
	if err := s.Inbox.Restore(ctx, userID, entries); err != nil {
		return err
	}
	s.log().Info("inbox rebuilt", "user_id", userID, "entries", len(entries))
	return nil
}

// NextCursor returns the compatible cursor after a page of entries read
// with cursor (max, skip): the last entry's score, and the number of entries
// with that score seen so far.
func NextCursor(entries []Entry, max int64, skip int) (int64, int) {
	minTime := entries[len(entries)-1].Score
	n := 0
	for i := len(entries) - 1; i >= 0 && entries[i].Score == minTime; i-- {
		n++
	}
	if minTime == max {
		n += skip
	}
	return minTime, n
}

// hydrateEntries loads the posts of entries in entry order, dropping deleted
// ones and those of authors who do not belong in the viewer's feed (muted,
// unfollowed, blocked: their entries may still sit in the inbox until a job
// removes them), and hydrates them: one store call when the store is a
// FeedViewer, four otherwise, whatever the page size.
func (s *Service) hydrateEntries(ctx context.Context, viewerID int64, entries []Entry) ([]PostView, error) {
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.PostID
	}
	if fv, ok := s.Posts.(FeedViewer); ok && s.Social != nil {
		views, err := fv.FeedViews(ctx, viewerID, ids)
		if err != nil {
			return nil, err
		}
		out := make([]PostView, 0, len(views))
		for _, id := range ids {
			if v := views[id]; v != nil {
				out = append(out, *v)
			}
		}
		return out, nil
	}
	m, err := s.Posts.Posts(ctx, ids)
	if err != nil {
		return nil, err
	}
	var visible map[int64]bool
	if s.Social != nil && len(m) > 0 {
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
		if p := m[id]; p != nil && (visible == nil || visible[p.UserID]) {
			posts = append(posts, p)
		}
	}
	return s.Hydrate(ctx, viewerID, posts)
}

// streamPage is a page of userID's feed stream: their inbox merged with the
// outboxes of the pull-mode authors they follow, in feed order, score at
// within b, after skipping offset, at most limit. A post both pushed and in
// an outbox (an author crossing the threshold) appears once. The round trips
// are fixed: the pull-mode followees, the inbox, all outboxes at once.
//
// When the inbox or outbox store fails (Redis down) the page is computed
// from the database instead (FeedEntries: every followee's posts, same
// order and cursor), so the feed degrades instead of failing.
func (s *Service) streamPage(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error) {
	es, err := s.mergedPage(ctx, userID, b, offset, limit)
	var down errStoreDown
	if errors.As(err, &down) && ctx.Err() == nil {
		s.log().Warn("inbox store unavailable; feed served from the database", "user_id", userID, "error", down.error)
		return s.Posts.FeedEntries(ctx, userID, b, offset, limit)
	}
	return es, err
}

func (s *Service) mergedPage(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error) {
	var pulls []int64
	if s.Social != nil && s.Outbox != nil {
		var err error
		if pulls, err = s.Social.PullFollowees(ctx, userID); err != nil {
			return nil, err
		}
	}
	if len(pulls) == 0 {
		return s.inboxPage(ctx, userID, nil, b, offset, limit)
	}
	in, err := s.inboxPage(ctx, userID, pulls, b, 0, offset+limit)
	if err != nil {
		return nil, err
	}
	out, err := s.Outbox.Entries(ctx, pulls, b, offset+limit)
	if err != nil {
		return nil, errStoreDown{err}
	}
	merged := MergeEntries(in, out)
	if offset >= len(merged) {
		return []Entry{}, nil
	}
	return merged[offset:min(offset+limit, len(merged))], nil
}

// MergeEntries merges entry lists into one in feed order, each entry once.
func MergeEntries(lists ...[]Entry) []Entry {
	var all []Entry
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortFunc(all, func(a, b Entry) int {
		switch {
		case a.Before(b):
			return -1
		case b.Before(a):
			return 1
		}
		return 0
	})
	return slices.Compact(all)
}
