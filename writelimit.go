package feed

import (
	"context"
	"strconv"
	"time"
)

// Per-user limits of writes: how many posts, follow changes and likes one
// account makes, and how many live streams it opens, per window. They
// bound what one account (or a stolen token) can make the rest of the
// service do: every post and every follow change is fan-out work that all
// users' timelines wait behind. The counters are the login limits' (a
// RateStore shared by every API process: fixed windows anchored at the
// first event, limit.go).

// WriteKind names one per-user limit.
type WriteKind int

const (
	WritePost    WriteKind = iota // a post published
	WriteFollow                   // a follow or unfollow asked for
	WriteLike                     // a like set or removed
	WriteStream                   // a live stream opened (a reconnect is one too)
	WriteComment                  // a comment or reply added
)

// WriteLimits are the per-user limits (the zero value: none).
type WriteLimits struct {
	Posts    Limit
	Follows  Limit
	Likes    Limit
	Streams  Limit
	Comments Limit
}

// DefaultWriteLimits are the limits the command starts with.
var DefaultWriteLimits = WriteLimits{
	Posts:    Limit{30, time.Minute},
	Follows:  Limit{60, time.Minute},
	Likes:    Limit{300, time.Minute},
	Streams:  Limit{30, time.Minute},
	Comments: Limit{60, time.Minute},
}

// limit returns the limit of kind, its counter's key prefix and the words
// of its refusal.
func (l WriteLimits) limit(kind WriteKind) (Limit, string, string) {
	switch kind {
	case WritePost:
		return l.Posts, "post:user:", "posts"
	case WriteFollow:
		return l.Follows, "follow:user:", "follow changes"
	case WriteLike:
		return l.Likes, "like:user:", "likes"
	case WriteComment:
		return l.Comments, "comment:user:", "comments"
	}
	return l.Streams, "stream:user:", "stream connections"
}

// CountWrite counts one write of kind by userID against s.WriteLimits and
// returns the ETOOMANY refusal (TooMany, with the wait) when it is over the
// limit. The API counts a write before doing it. A user already at the
// limit is refused on a peek (a read): a flood of refused requests costs
// the store no writes.
func (s *Service) CountWrite(ctx context.Context, userID int64, kind WriteKind) error {
	l, prefix, what := s.WriteLimits.limit(kind)
	key := prefix + strconv.FormatInt(userID, 10)
	if err := s.hit(ctx, key, l, 0, what); err != nil {
		return err
	}
	return s.hit(ctx, key, l, 1, what)
}
