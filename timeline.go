package feed

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits of the native API.
const (
	DefaultTimelineLimit = 20
	MaxTimelineLimit     = 100
	MaxListLimit         = 200
)

// EncodeCursor returns the opaque form of c for clients.
func EncodeCursor(c Cursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "v1:%d:%d", c.Score, c.PostID))
}

// DecodeCursor parses an opaque cursor. EINVALID if it is not one.
func DecodeCursor(s string) (Cursor, error) {
	bad := Errorf(EINVALID, "cursor is not one this server returned")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, bad
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return Cursor{}, bad
	}
	score, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || score < 0 || id <= 0 {
		return Cursor{}, bad
	}
	return Cursor{Score: score, PostID: id}, nil
}

// Timeline returns the page of userID's feed after cursor (nil: from the
// newest), at most limit posts (0: DefaultTimelineLimit).
//
// The cursor is a keyset on (score, post id): the page holds the entries
// that come after it in feed order. It stays exact under any concurrent
// change: posts published in the cursor's millisecond (they have larger ids,
// so they sort before it), deletes of seen or unseen entries, tie groups
// larger than a page, backfills and the pull-mode merge.
func (s *Service) Timeline(ctx context.Context, userID int64, after *Cursor, limit int) (*Page, error) {
	if limit == 0 {
		limit = DefaultTimelineLimit
	}
	if limit < 1 || limit > MaxTimelineLimit {
		return nil, Errorf(EINVALID, "limit must be an integer from 1 to %d", MaxTimelineLimit)
	}
	page := &Page{List: []PostView{}}
	cur := after
	for range maxEmptyPages {
		entries, more, err := s.entriesAfter(ctx, userID, cur, limit-len(page.List))
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return page, nil
		}
		views, err := s.hydrateEntries(ctx, userID, entries)
		if err != nil {
			return nil, err
		}
		page.List = append(page.List, views...)
		last := entries[len(entries)-1]
		cur = &last
		if !more {
			return page, nil
		}
		if len(page.List) >= limit {
			break
		}
	}
	page.Next = cur
	return page, nil
}

// entriesAfter returns at most n entries of userID's stream after cur in
// feed order (from the top when cur is nil), in one read of each source,
// and whether more may follow.
func (s *Service) entriesAfter(ctx context.Context, userID int64, cur *Cursor, n int) ([]Entry, bool, error) {
	b := AtMost(math.MaxInt64)
	if cur != nil {
		b = After(*cur)
	}
	es, err := s.streamPage(ctx, userID, b, 0, n)
	if err != nil {
		return nil, false, err
	}
	return es, len(es) == n, nil
}

func (s *Service) social() (SocialStore, error) {
	if s.Social == nil {
		return nil, Errorf(EINTERNAL, "social graph not configured")
	}
	return s.Social, nil
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
	st, err := s.social()
	if err != nil {
		return err
	}
	return st.SetMute(ctx, userID, targetID, mute, s.now())
}

// Block makes userID block (block=true) or unblock targetID. Blocking
// removes the follows both ways and stops future follows. Idempotent.
func (s *Service) Block(ctx context.Context, userID, targetID int64, block bool) error {
	if err := validID("id", targetID); err != nil {
		return err
	}
	if userID == targetID {
		return Errorf(EINVALID, "you cannot block yourself")
	}
	st, err := s.social()
	if err != nil {
		return err
	}
	return st.SetBlock(ctx, userID, targetID, block, s.now())
}

// UserList names one of the native API's lists of users.
type UserList int

const (
	FollowersList UserList = iota
	FollowingList
	MutedList
	BlockedList
)

// Users returns a keyset page of one of ownerID's user lists: users with ids
// after `after`, ascending, at most limit; next is the id to continue after
// (0 at the end). Mutes and blocks are private: only their owner (viewerID)
// may list them.
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
	st, err := s.social()
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.Users.User(ctx, ownerID); err != nil {
		return nil, 0, err
	}
	var ids []int64
	switch list {
	case FollowersList:
		ids, err = st.Followers(ctx, ownerID, after, limit+1)
	case FollowingList:
		ids, err = st.Following(ctx, ownerID, after, limit+1)
	case MutedList, BlockedList:
		if viewerID != ownerID {
			return nil, 0, Errorf(EFORBIDDEN, "only the owner may list mutes and blocks")
		}
		if list == MutedList {
			ids, err = st.Muted(ctx, ownerID, after, limit+1)
		} else {
			ids, err = st.Blocked(ctx, ownerID, after, limit+1)
		}
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

// SetLike makes userID like (like=true) or stop liking post id. Idempotent,
// also under concurrent calls: the store sets the like in one transaction.
func (s *Service) SetLike(ctx context.Context, userID, id int64, like bool) error {
	if err := validID("id", id); err != nil {
		return err
	}
	return s.Posts.SetLike(ctx, id, userID, like, s.now())
}
