package feed

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Orders of a post's top-level comments.
const (
	CommentOrderTop = "top" // by likes, then newest first (the default)
	CommentOrderNew = "new" // newest first
)

// orderReplies names the replies' order (oldest first) in cursors.
const orderReplies = "replies"

// CommentCursor is a position in a list of comments: the native API's
// next_cursor of the comment routes, opaque to clients.
//
// In the new order and in a thread's replies it is a keyset: Key, the last
// comment read (creation ms, comment id). In the top order it names the
// scroll's snapshot (its top-level comments by likes when the scroll
// began, at most TopCommentsKept) and the items read of it; when the post
// had more, the rest follows, newest first, as a keyset within the
// comments created at or before Since, leaving out those of the snapshot.
type CommentCursor struct {
	Order    string
	Thread   int64  // replies: the thread's top-level comment
	Snapshot string // top: the snapshot's id
	Pos      int    // top: snapshot items read
	Since    int64  // top: when the scroll began (ms)
	Tail     bool   // top: comments beyond the snapshot follow
	InTail   bool   // top: the snapshot is read; Key is in the rest
	Key      Entry  // the last comment read, for the keyset parts
}

// EncodeCommentCursor returns the opaque form of c.
func EncodeCommentCursor(c CommentCursor) string {
	var s string
	switch c.Order {
	case CommentOrderTop:
		s = fmt.Sprintf("c1:top:%s:%d:%d:%t:%t:%d:%d", c.Snapshot, c.Pos, c.Since, c.Tail, c.InTail, c.Key.Score, c.Key.PostID)
	case orderReplies:
		s = fmt.Sprintf("c1:replies:%d:%d:%d", c.Thread, c.Key.Score, c.Key.PostID)
	default:
		s = fmt.Sprintf("c1:new:%d:%d", c.Key.Score, c.Key.PostID)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

var snapshotIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// DecodeCommentCursor parses the cursor s of a list in order (top, new or,
// for a thread's replies, "replies"). EINVALID if it is not one this
// server returned for that list.
func DecodeCommentCursor(s, order string) (CommentCursor, error) {
	bad := Errorf(EINVALID, "cursor is not one this server returned for this list")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return CommentCursor{}, bad
	}
	f := strings.Split(string(b), ":")
	if len(f) < 4 || f[0] != "c1" || f[1] != order {
		return CommentCursor{}, bad
	}
	nums := func(fs []string) ([]int64, bool) {
		out := make([]int64, len(fs))
		for i, x := range fs {
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil || n < 0 {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	}
	c := CommentCursor{Order: order}
	switch order {
	case CommentOrderNew:
		n, ok := nums(f[2:])
		if !ok || len(n) != 2 || n[1] == 0 {
			return c, bad
		}
		c.Key = Entry{Score: n[0], PostID: n[1]}
	case orderReplies:
		n, ok := nums(f[2:])
		if !ok || len(n) != 3 || n[0] == 0 || n[2] == 0 {
			return c, bad
		}
		c.Thread, c.Key = n[0], Entry{Score: n[1], PostID: n[2]}
	case CommentOrderTop:
		if len(f) != 9 || !snapshotIDPattern.MatchString(f[2]) {
			return c, bad
		}
		n, ok := nums([]string{f[3], f[4], f[7], f[8]})
		tail, err1 := strconv.ParseBool(f[5])
		inTail, err2 := strconv.ParseBool(f[6])
		if !ok || err1 != nil || err2 != nil || n[0] > TopCommentsKept || (inTail && !tail) {
			return c, bad
		}
		c.Snapshot, c.Pos, c.Since, c.Tail, c.InTail = f[2], int(n[0]), n[1], tail, inTail
		c.Key = Entry{Score: n[2], PostID: n[3]}
	default:
		return c, bad
	}
	return c, nil
}
