package feed

import (
	"context"
	"strconv"
	"time"
)

// Per-user limits of writes: how many posts, deletes, follow changes,
// likes, reposts, blocks, mutes, muted words and notification changes one account
// makes, and how many live streams it opens, per window. They bound what
// one account (or a stolen token) can make the rest of the service do:
// every post, delete and follow change is fan-out work that all users'
// timelines wait behind, and on the embedded SQLite every accepted write is
// a transaction on the one writer. The counters are the login limits' (a
// RateStore shared by every API process: fixed windows anchored at the
// first event, limit.go). Reports have a limit of their own
// (Service.ReportLimit), counted only for reports that are filed.

// WriteKind names one per-user limit.
type WriteKind int

const (
	WritePost         WriteKind = iota // a post published
	WriteFollow                        // a follow or unfollow asked for
	WriteLike                          // a like set or removed
	WriteStream                        // a live stream opened (a reconnect is one too)
	WriteDelete                        // a post (either API) or a comment deleted
	WriteBlock                         // a block or unblock asked for
	WriteMute                          // a mute or unmute asked for
	WriteMutedWord                     // a muted word added or removed
	WriteNotification                  // notifications marked read or dismissed, markers moved, push subscriptions changed
	WriteComment                       // a comment or reply added
	WriteEdit                          // a change to a post (PATCH /v1/posts/{id})
	WriteRepost                        // a repost made or undone
	WriteMedia                         // an image uploaded, changed or deleted
)

// WriteLimits are the per-user limits (the zero value: none).
type WriteLimits struct {
	Posts         Limit
	Follows       Limit
	Likes         Limit
	Streams       Limit
	Deletes       Limit
	Blocks        Limit
	Mutes         Limit
	MutedWords    Limit
	Notifications Limit
	Comments      Limit
	Edits         Limit
	Reposts       Limit
	Media         Limit
	// MediaBytes counts the bytes of a user's uploads (N is bytes).
	MediaBytes Limit
}

// DefaultWriteLimits are the limits the command starts with. A delete,
// a repost and its undo cost what a post costs (a fan-out to the author's
// or reposter's audience), a block
// what a follow change costs (it removes follows both ways); mutes and
// muted words are one row each, notification changes and changes to a
// post one statement.
var DefaultWriteLimits = WriteLimits{
	Posts:         Limit{30, time.Minute},
	Follows:       Limit{60, time.Minute},
	Likes:         Limit{300, time.Minute},
	Streams:       Limit{30, time.Minute},
	Deletes:       Limit{30, time.Minute},
	Blocks:        Limit{30, time.Minute},
	Mutes:         Limit{60, time.Minute},
	MutedWords:    Limit{60, time.Minute},
	Notifications: Limit{120, time.Minute},
	Comments:      Limit{60, time.Minute},
	Edits:         Limit{60, time.Minute},
	Reposts:       Limit{30, time.Minute},
	Media:         Limit{60, time.Hour},
	MediaBytes:    Limit{1 << 30, 24 * time.Hour},
}

// limit returns the limit of kind, its counter's key prefix and the words
// of its refusal.
func (l WriteLimits) limit(kind WriteKind) (Limit, string, string) {
	rules := [...]struct {
		limit     Limit
		key, what string
	}{
		WritePost:         {l.Posts, "post:user:", "posts"},
		WriteFollow:       {l.Follows, "follow:user:", "follow changes"},
		WriteLike:         {l.Likes, "like:user:", "likes"},
		WriteStream:       {l.Streams, "stream:user:", "stream connections"},
		WriteDelete:       {l.Deletes, "delete:user:", "deletes"},
		WriteBlock:        {l.Blocks, "block:user:", "block changes"},
		WriteMute:         {l.Mutes, "mute:user:", "mute changes"},
		WriteMutedWord:    {l.MutedWords, "mutedword:user:", "muted word changes"},
		WriteNotification: {l.Notifications, "notification:user:", "notification changes"},
		WriteComment:      {l.Comments, "comment:user:", "comments"},
		WriteEdit:         {l.Edits, "edit:user:", "changes to posts"},
		WriteRepost:       {l.Reposts, "repost:user:", "reposts"},
		WriteMedia:        {l.Media, "media:user:", "image uploads and changes"},
	}
	r := rules[kind]
	return r.limit, r.key, r.what
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
