package feed

import (
	"context"
	"time"
)

// Outbox holds each author's own posts, newest first: the pull side of the
// feed. Posts of authors in pull mode (huge audiences) are not fanned out;
// readers merge these authors' outboxes into their inbox at read time.
// Implementations: the posts index in SQL (sqlite.Outbox, postgres.Outbox),
// a sorted set per author in Redis (redis.Outbox).
type Outbox interface {
	// Add records a post of authorID. Idempotent.
	Add(ctx context.Context, authorID int64, e Entry) error
	// Remove forgets a deleted post of authorID. Idempotent.
	Remove(ctx context.Context, authorID int64, e Entry) error
	// Entries returns, for every author in authorIDs, their first (at most
	// limit) entries within b, all merged in feed order. One round trip
	// whatever the number of authors.
	Entries(ctx context.Context, authorIDs []int64, b Bound, limit int) ([]Entry, error)
}

// Cursor is a position in a feed: the last entry seen. The next page holds
// the entries after it in feed order, whatever was inserted or removed
// meanwhile (a keyset on score, post id).
type Cursor = Entry

// Page is one page of the native timeline.
type Page struct {
	List []PostView
	// Next is the cursor of the page's last entry; nil at the end.
	Next *Cursor
}

// SocialStore persists the graph beyond follows: mutes, blocks, pull mode,
// activity, and the lists the native API shows.
type SocialStore interface {
	// SetMute makes userID mute (or unmute) targetID. Idempotent.
	// ENOTFOUND if targetID does not exist.
	SetMute(ctx context.Context, userID, targetID int64, mute bool, now time.Time) error
	// SetBlock makes userID block (or unblock) targetID. Blocking removes
	// the follows in both directions (keeping counts in step, and enqueuing
	// a feed.FollowJob with Follow=false for each removed follow in the same
	// transaction). Idempotent. ENOTFOUND if targetID does not exist.
	SetBlock(ctx context.Context, userID, targetID int64, block bool, now time.Time) error
	// Muted and Blocked list the ids userID mutes or blocks, after the given
	// id (keyset, ascending), at most limit.
	Muted(ctx context.Context, userID, after int64, limit int) ([]int64, error)
	Blocked(ctx context.Context, userID, after int64, limit int) ([]int64, error)
	// Followers and Following list userID's followers or followees, ids
	// after the given id ascending, at most limit.
	Followers(ctx context.Context, userID, after int64, limit int) ([]int64, error)
	Following(ctx context.Context, userID, after int64, limit int) ([]int64, error)

	// Visible returns the authors among authorIDs whose posts belong in
	// viewerID's feed: the viewer and the users the viewer follows, less
	// those the viewer mutes. One round trip.
	Visible(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error)
	// PullFollowees returns the users viewerID follows whose mode is not
	// PushMode: their outboxes are merged into viewerID's feed.
	PullFollowees(ctx context.Context, viewerID int64) ([]int64, error)
	// SetMode sets authorID's distribution mode.
	SetMode(ctx context.Context, authorID int64, mode Mode) error
	// Touch records that userID is active at now and returns the previous
	// activity time. It writes at most once per interval (returning the
	// stored time unchanged when it is newer than now-interval).
	Touch(ctx context.Context, userID int64, now time.Time, interval time.Duration) (time.Time, error)
	// ActiveFollowersAfter is FollowersAfter restricted to followers active
	// at or after since.
	ActiveFollowersAfter(ctx context.Context, followeeID, after int64, limit int, since time.Time) ([]int64, error)
}

// FollowJob updates a follower's inbox after a follow (backfill the
// followee's recent posts) or an unfollow (remove them). Stores enqueue it
// in the transaction that changes the follow.
type FollowJob struct {
	FollowerID int64
	FolloweeID int64
	Follow     bool
}

// Mode is how an author's posts reach their followers.
type Mode int

const (
	// PushMode: posts are fanned out to every follower's inbox.
	PushMode Mode = 0
	// PullMode: posts stay in the author's outbox; readers merge it.
	PullMode Mode = 1
	// LeavingPullMode: the author's audience fell below the threshold and
	// their recent posts are being pushed to the inboxes. Posts are both
	// fanned out and merged until that finishes, so none is missing from
	// any feed in between.
	LeavingPullMode Mode = 2
)

// FeedViewer is implemented by stores that hydrate a feed page in one round
// trip; Service uses it when the PostStore has it.
type FeedViewer interface {
	// FeedViews returns the posts among ids that exist and belong in
	// viewerID's feed (as SocialStore.Visible decides), each with its
	// author (ID, NickName, Icon) and the viewer's like, by id.
	FeedViews(ctx context.Context, viewerID int64, ids []int64) (map[int64]*PostView, error)
}
