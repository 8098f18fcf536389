package feed

import (
	"context"
	"time"
)

// CommonFollowsMax bounds the list of users two users both follow.
const CommonFollowsMax = 100

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

// FollowStore persists the follow graph.
type FollowStore interface {
	// SetFollow makes followerID follow (or stop following) followeeID and
	// keeps both users' counts in step, and when the follow changed enqueues
	// a FollowJob in the same transaction. Idempotent. ENOTFOUND if
	// followeeID does not exist; EFORBIDDEN if either blocks the other.
	SetFollow(ctx context.Context, followerID, followeeID int64, follow bool, now time.Time) error
	// SetFollows makes each change as SetFollow would, all in one
	// transaction and each in a savepoint of its own: the error of a
	// change SetFollow would refuse (ENOTFOUND, EFORBIDDEN) is its entry
	// of errs, and the others are made all the same; err is a fault of
	// the store, with nothing made.
	SetFollows(ctx context.Context, changes []FollowChange, now time.Time) (errs []error, err error)
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

// FollowChange is one follow (Follow) or unfollow of SetFollows.
type FollowChange struct {
	FollowerID, FolloweeID int64
	Follow                 bool
}

// SocialStore persists the graph beyond follows: mutes, blocks, pull mode,
// activity, and the lists the native API shows.
type SocialStore interface {
	// SetMute makes userID mute (or unmute) targetID. Idempotent.
	// ENOTFOUND if targetID does not exist.
	SetMute(ctx context.Context, userID, targetID int64, mute bool, now time.Time) error
	// SetBlock makes userID block (or unblock) targetID. Blocking removes
	// the follows in both directions (keeping counts in step, and enqueuing
	// a FollowJob with Follow=false for each removed follow in the same
	// transaction) and targetID's likes of userID's posts (keeping like
	// counts in step); afterwards PostStore.SetLike and ToggleLike refuse
	// targetID's likes of userID's posts as "post not found". Idempotent:
	// changed reports whether a block was made or removed (false when
	// userID already did, or did not, block targetID). ENOTFOUND if
	// targetID does not exist.
	SetBlock(ctx context.Context, userID, targetID int64, block bool, now time.Time) (changed bool, err error)
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
	// BlockedBy returns the authors among authorIDs who block viewerID:
	// their posts are hidden from viewerID. One round trip.
	BlockedBy(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error)
	// Relations returns viewerID's relations to those of userIDs it has
	// one with (a block either way, a mute); the others are absent. One
	// round trip.
	Relations(ctx context.Context, viewerID int64, userIDs []int64) (map[int64]Relation, error)
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

// Relation is what stands between a viewer and another user.
type Relation struct {
	BlocksViewer bool // the user blocks the viewer
	Blocked      bool // the viewer blocks the user
	Muted        bool // the viewer mutes the user
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
	if follow && s.PullThreshold > 0 {
		// Enter pull mode with the follow that crosses the threshold, so
		// that no read or rebuild from now on copies this author's posts
		// into inboxes. (A post job does the same check, should this
		// process stop right here.)
		u, err := s.Users.User(ctx, targetID)
		if err != nil {
			return err
		}
		if EntersPull(u.Mode, u.Fans, s.PullThreshold) {
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

// Mute makes userID mute (mute=true) or unmute targetID: a muted author's
// posts leave userID's feed and stay out. Idempotent.
func (s *Service) Mute(ctx context.Context, userID, targetID int64, mute bool) error {
	if err := validID("id", targetID); err != nil {
		return err
	}
	if userID == targetID {
		return Errorf(EINVALID, "you cannot mute yourself")
	}
	return s.Social.SetMute(ctx, userID, targetID, mute, s.now())
}

// Block makes userID block (block=true) or unblock targetID. Blocking
// removes the follows both ways and stops future follows. Idempotent:
// changed reports whether the block was made or removed by this call.
func (s *Service) Block(ctx context.Context, userID, targetID int64, block bool) (changed bool, err error) {
	if err := validID("id", targetID); err != nil {
		return false, err
	}
	if userID == targetID {
		return false, Errorf(EINVALID, "you cannot block yourself")
	}
	return s.Social.SetBlock(ctx, userID, targetID, block, s.now())
}

// UserList names one of the native API's lists of users.
type UserList int

const (
	FollowersList UserList = iota
	FollowingList
	MutedList
	BlockedList
)

// List returns a keyset page of one of ownerID's user lists: users with ids
// after `after`, ascending, at most limit (0: DefaultTimelineLimit); next is
// the id to continue after (0 at the end). Mutes and blocks are private:
// only their owner (viewerID) may list them.
func (s *Service) List(ctx context.Context, viewerID, ownerID int64, list UserList, after int64, limit int) (users []*User, next int64, err error) {
	if err := validID("id", ownerID); err != nil {
		return nil, 0, err
	}
	if after < 0 {
		return nil, 0, Errorf(EINVALID, "cursor is not one this server returned")
	}
	if limit == 0 {
		limit = DefaultTimelineLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, 0, Errorf(EINVALID, "limit must be an integer from 1 to %d", MaxListLimit)
	}
	if _, err := s.Users.User(ctx, ownerID); err != nil {
		return nil, 0, err
	}
	if (list == MutedList || list == BlockedList) && viewerID != ownerID {
		return nil, 0, Errorf(EFORBIDDEN, "only the owner may list mutes and blocks")
	}
	var ids []int64
	switch list {
	case FollowersList:
		ids, err = s.Social.Followers(ctx, ownerID, after, limit+1)
	case FollowingList:
		ids, err = s.Social.Following(ctx, ownerID, after, limit+1)
	case MutedList:
		ids, err = s.Social.Muted(ctx, ownerID, after, limit+1)
	case BlockedList:
		ids, err = s.Social.Blocked(ctx, ownerID, after, limit+1)
	default:
		return nil, 0, Errorf(EINVALID, "no such list")
	}
	if err != nil {
		return nil, 0, err
	}
	if len(ids) > limit {
		ids, next = ids[:limit], ids[limit-1]
	}
	users, err = s.usersInOrder(ctx, ids)
	return users, next, err
}
