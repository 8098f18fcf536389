// Package feed is the domain of feedd: users, posts, follows, likes and the
// follow feed (timeline). It declares the types and the interfaces that the
// storage packages (sqlite, postgres, redis) implement, and Service, the
// business rules shared by every backend. It does no I/O of its own.
package feed

import (
	"context"
	"errors"
	"time"
)

// ErrInboxLost is returned by Inbox.Page when a user's inbox is not there:
// never built, or lost from a cache (a Redis restart without persistence,
// eviction, a flush). The caller rebuilds it with Inbox.Restore.
var ErrInboxLost = errors.New("inbox lost")

// User is an account, created on first login.
type User struct {
	ID        int64
	Mode      Mode // how the user's posts reach followers (push or pull)
	ActiveAt  time.Time
	Phone     string
	NickName  string
	Icon      string
	City      string
	Introduce string
	Fans      int // live count of followers
	Followee  int // live count of users this user follows
	CreatedAt time.Time
}

// Post is a published post ("blog" in the compatible API).
type Post struct {
	ID        int64
	ShopID    int64
	UserID    int64
	Title     string
	Images    string
	Content   string // as the author sent it; escaping is the renderer's job
	Liked     int
	Comments  int
	CreatedAt time.Time // millisecond precision: it is the inbox score
	UpdatedAt time.Time
}

// Score is the post's inbox score: its creation time in Unix milliseconds.
// Every delivery of a post uses this score, so redelivery is idempotent.
func (p *Post) Score() int64 { return p.CreatedAt.UnixMilli() }

// Entry is one inbox entry.
type Entry struct {
	PostID int64
	Score  int64
}

// Bound is where a read of a feed starts: the entries with a score below
// Max, and those with score Max and a post id below BeforeID (all of them
// when BeforeID is 0). AtMost(max) admits the whole millisecond max (the
// compatible cursor); After(c) admits exactly the entries after cursor c in
// feed order (the native cursor). A read is one atomic call, so a keyset
// bound stays exact whatever changes between two reads.
type Bound struct {
	Max      int64
	BeforeID int64
}

// AtMost is the bound of the entries with score at most max.
func AtMost(max int64) Bound { return Bound{Max: max} }

// After is the bound of the entries after c in feed order.
func After(c Entry) Bound { return Bound{Max: c.Score, BeforeID: c.PostID} }

// Admits reports whether e is within b.
func (b Bound) Admits(e Entry) bool {
	return e.Score < b.Max || (e.Score == b.Max && (b.BeforeID == 0 || e.PostID < b.BeforeID))
}

// Before reports whether e comes before o in feed order: score descending,
// then post id descending.
func (e Entry) Before(o Entry) bool {
	if e.Score != o.Score {
		return e.Score > o.Score
	}
	return e.PostID > o.PostID
}

// Inbox holds one sorted set of entries per user: the push side of the feed.
// Implementations: sqlite.Inbox, redis.Inbox. feedtest.TestInbox is the
// contract every implementation passes.
type Inbox interface {
	// Deliver adds entry e to the inbox of every user in userIDs, in bulk
	// (never one round trip per user). Idempotent: delivering the same entry
	// again leaves one entry.
	Deliver(ctx context.Context, e Entry, userIDs []int64) error

	// Add adds entries to one user's inbox (backfill). Idempotent.
	Add(ctx context.Context, userID int64, entries []Entry) error

	// Remove removes entry e from the inboxes of userIDs. Absent entries are
	// not an error.
	Remove(ctx context.Context, e Entry, userIDs []int64) error

	// Page returns at most limit entries of userID's inbox within b, in
	// feed order, after skipping the first offset of them. One atomic read.
	Page(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error)

	// Trim keeps the newest cap entries of userID's inbox and drops the rest.
	Trim(ctx context.Context, userID int64, cap int) error

	// Restore adds entries to userID's inbox and marks it complete, so that
	// Page stops returning ErrInboxLost. It merges rather than replaces, so
	// deliveries racing a rebuild are kept. Idempotent.
	Restore(ctx context.Context, userID int64, entries []Entry) error
}

// UserStore persists users.
type UserStore interface {
	// FindOrCreateUser returns the user with that phone, creating it with
	// nickName if there is none.
	FindOrCreateUser(ctx context.Context, phone, nickName string, now time.Time) (*User, error)
	// User returns one user; ENOTFOUND if there is none.
	User(ctx context.Context, id int64) (*User, error)
	// Users returns the users that exist among ids, by id.
	Users(ctx context.Context, ids []int64) (map[int64]*User, error)
}

// AuthStore persists login codes and sessions. Codes and tokens reach it
// only as hashes.
type AuthStore interface {
	// SaveCode stores a new code for phone, replacing any older one.
	// ECONFLICT if the previous code was saved less than resendAfter ago.
	SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error
	// ConsumeCode checks codeHash against phone's live code and deletes the
	// code when it matches. A mismatch counts a try; the code is burned after
	// maxTries. EINVALID when there is no live code or it does not match.
	ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error
	// CreateSession stores a session that expires at expires. now is the
	// caller's clock: stores that sweep expired sessions judge by it.
	CreateSession(ctx context.Context, tokenHash string, userID int64, now, expires time.Time) error
	// Session returns the user of a live session and slides its expiry to
	// now+ttl (implementations may skip the write when little time passed).
	// EUNAUTHORIZED when there is no live session.
	Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error)
	// DeleteSession ends a session. Idempotent.
	DeleteSession(ctx context.Context, tokenHash string) error
}

// PostStore persists posts and likes.
type PostStore interface {
	// CreatePost stores p (setting p.ID) and, in the same transaction,
	// enqueues its fan-out job: a committed post is always delivered.
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

// FollowStore persists the follow graph.
type FollowStore interface {
	// SetFollow makes followerID follow (or stop following) followeeID and
	// keeps both users' counts in step, and when the follow changed enqueues
	// a FollowJob in the same transaction. Idempotent. ENOTFOUND if
	// followeeID does not exist; EFORBIDDEN if either blocks the other.
	SetFollow(ctx context.Context, followerID, followeeID int64, follow bool, now time.Time) error
	// IsFollowing reports whether followerID follows followeeID.
	IsFollowing(ctx context.Context, followerID, followeeID int64) (bool, error)
	// CommonFollowees returns the ids of users that both a and b follow.
	CommonFollowees(ctx context.Context, a, b int64, limit int) ([]int64, error)
	// FollowersAfter returns up to limit follower ids of followeeID greater
	// than after, ascending: a keyset page of the fan-out audience.
	FollowersAfter(ctx context.Context, followeeID, after int64, limit int) ([]int64, error)
	// NthFollowerAfter returns the n-th follower id of followeeID greater
	// than after (ascending), or 0 when fewer than n remain: one index
	// probe, the boundary of a slice of a big audience, without reading it.
	NthFollowerAfter(ctx context.Context, followeeID, after int64, n int) (int64, error)
}

// CodeSender delivers login codes to a phone.
type CodeSender interface {
	SendCode(ctx context.Context, phone, code string) error
}
