package feed

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
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
// comment read (creation ms, comment id). In the top order it carries the
// scroll's order itself, Top: the ids of the post's first TopCommentsKept
// top-level comments by likes when the scroll began, and Pos, how many of
// them were read. When the post had more (Tail), the rest follows newest
// first, as a keyset (Key) within the comments created at or before Since,
// leaving out those of Top. Carried by the client, the order needs no
// state on the server and never expires.
type CommentCursor struct {
	Order  string
	Thread int64   // replies: the thread's top-level comment
	Top    []int64 // top: the scroll's order
	Pos    int     // top: the ids of Top read
	Since  int64   // top: when the scroll began (ms)
	Tail   bool    // top: comments beyond Top follow
	InTail bool    // top: Top is read; Key is in the rest
	Key    Entry   // the last comment read, for the keyset parts
}

// EncodeCommentCursor returns the opaque form of c.
func EncodeCommentCursor(c CommentCursor) string {
	switch c.Order {
	case CommentOrderTop:
		// Binary: the flags, the numbers and the ids as varints (each id
		// as its difference from the one before).
		b := []byte("c1t")
		flags := uint64(0)
		if c.Tail {
			flags |= 1
		}
		if c.InTail {
			flags |= 2
		}
		for _, n := range []uint64{flags, uint64(c.Pos), uint64(c.Since), uint64(c.Key.Score), uint64(c.Key.PostID), uint64(len(c.Top))} {
			b = binary.AppendUvarint(b, n)
		}
		prev := int64(0)
		for _, id := range c.Top {
			b = binary.AppendVarint(b, id-prev)
			prev = id
		}
		return base64.RawURLEncoding.EncodeToString(b)
	case orderReplies:
		return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "c1:replies:%d:%d:%d", c.Thread, c.Key.Score, c.Key.PostID))
	}
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "c1:new:%d:%d", c.Key.Score, c.Key.PostID))
}

// DecodeCommentCursor parses the cursor s of a list in order (top, new or,
// for a thread's replies, "replies"). EINVALID if it is not one this
// server returned for that list.
func DecodeCommentCursor(s, order string) (CommentCursor, error) {
	bad := Errorf(EINVALID, "cursor is not one this server returned for this list")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return CommentCursor{}, bad
	}
	c := CommentCursor{Order: order}
	if order == CommentOrderTop {
		if !decodeTop(b, &c) {
			return CommentCursor{}, bad
		}
		return c, nil
	}
	f := strings.Split(string(b), ":")
	if len(f) < 4 || f[0] != "c1" || f[1] != order {
		return CommentCursor{}, bad
	}
	n := make([]int64, 0, 3)
	for _, x := range f[2:] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return CommentCursor{}, bad
		}
		n = append(n, v)
	}
	switch {
	case order == CommentOrderNew && len(n) == 2 && n[1] > 0:
		c.Key = Entry{Score: n[0], PostID: n[1]}
	case order == orderReplies && len(n) == 3 && n[0] > 0 && n[2] > 0:
		c.Thread, c.Key = n[0], Entry{Score: n[1], PostID: n[2]}
	default:
		return CommentCursor{}, bad
	}
	return c, nil
}

// decodeTop reads the binary form of a top cursor into c; false if b is
// not one.
func decodeTop(b []byte, c *CommentCursor) bool {
	if len(b) < 3 || string(b[:3]) != "c1t" {
		return false
	}
	b = b[3:]
	var n [6]uint64
	for i := range n {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > 1<<62 {
			return false
		}
		n[i], b = v, b[k:]
	}
	flags, count := n[0], n[5]
	if flags > 3 || count > TopCommentsKept || n[1] > count {
		return false
	}
	c.Tail, c.InTail = flags&1 != 0, flags&2 != 0
	c.Pos, c.Since, c.Key = int(n[1]), int64(n[2]), Entry{Score: int64(n[3]), PostID: int64(n[4])}
	if c.InTail && !c.Tail {
		return false
	}
	prev := int64(0)
	c.Top = make([]int64, 0, count)
	for range count {
		d, k := binary.Varint(b)
		if k <= 0 || prev+d <= 0 {
			return false
		}
		prev += d
		c.Top, b = append(c.Top, prev), b[k:]
	}
	return len(b) == 0
}
