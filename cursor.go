package feed

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Page sizes and cursor limits, defined once for both APIs.
const (
	// DefaultPageSize is the compatible feed's page size when the client
	// sends none (Service.PageSize overrides it).
	DefaultPageSize = 10
	// MaxPageSize is the largest size of a compatible feed page.
	MaxPageSize = 50
	// MaxOffset bounds the compatible cursor's offset.
	MaxOffset = 1 << 20
	// DefaultTimelineLimit and MaxTimelineLimit bound a native timeline page.
	DefaultTimelineLimit = 20
	MaxTimelineLimit     = 100
	// MaxListLimit bounds a page of a native user list.
	MaxListLimit = 200
	// maxEmptyPages bounds how many pages of entries whose posts are all
	// gone (deleted, muted, unfollowed) one feed read skips.
	maxEmptyPages = 16
)

// Entry is one feed entry: a post id and its score, the post's creation
// time in Unix milliseconds.
type Entry struct {
	PostID int64
	Score  int64
}

// Compare orders entries in feed order: score descending, then post id
// descending. It is negative when e comes first. It is the one comparator
// of feed order; every store and test sorts with it.
func (e Entry) Compare(o Entry) int {
	if c := cmp.Compare(o.Score, e.Score); c != 0 {
		return c
	}
	return cmp.Compare(o.PostID, e.PostID)
}

// Before reports whether e comes before o in feed order.
func (e Entry) Before(o Entry) bool { return e.Compare(o) < 0 }

// CompareEntries is Entry.Compare as a function, for slices.SortFunc.
func CompareEntries(a, b Entry) int { return a.Compare(b) }

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

// Top is the bound of the whole feed.
func Top() Bound { return AtMost(math.MaxInt64) }

// After is the bound of the entries after c in feed order.
func After(c Entry) Bound { return Bound{Max: c.Score, BeforeID: c.PostID} }

// Admits reports whether e is within b.
func (b Bound) Admits(e Entry) bool {
	return e.Score < b.Max || (e.Score == b.Max && (b.BeforeID == 0 || e.PostID < b.BeforeID))
}

// Cursor is the native API's position in a feed: the last entry seen. The
// next page holds the entries after it in feed order, whatever was inserted
// or removed meanwhile (a keyset on score, post id).
type Cursor = Entry

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

// TimelineLimit validates a native page limit; 0 means
// DefaultTimelineLimit.
func TimelineLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultTimelineLimit, nil
	}
	if limit < 1 || limit > MaxTimelineLimit {
		return 0, Errorf(EINVALID, "limit must be an integer from 1 to %d", MaxTimelineLimit)
	}
	return limit, nil
}

// ScrollCursor is the compatible API's position in a feed: entries with a
// score of at most LastID (ms), after skipping the first Offset of them.
// Offset counts the entries with score LastID the client has already been
// given, so ties within one millisecond are never repeated or lost.
type ScrollCursor struct {
	LastID int64
	Offset int
}

// Validate returns EINVALID describing the first problem of c.
func (c ScrollCursor) Validate() error {
	switch {
	case c.LastID <= 0:
		return Errorf(EINVALID, "lastId must be a positive integer")
	case c.Offset < 0 || c.Offset > MaxOffset:
		return Errorf(EINVALID, "offset must be an integer from 0 to %d", MaxOffset)
	}
	return nil
}

// ValidPageSize checks a compatible page size; 0 means the default.
func ValidPageSize(size int) error {
	if size < 0 || size > MaxPageSize {
		return Errorf(EINVALID, "size must be an integer from 1 to %d", MaxPageSize)
	}
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

// position is where a page loop stands in a feed, under either cursor: a
// bound and a number of entries to skip within it (the compatible cursor),
// or a keyset bound alone (the native cursor).
type position struct {
	b      Bound
	skip   int
	keyset bool
}

func scrollPosition(c ScrollCursor) position {
	return position{b: AtMost(c.LastID), skip: c.Offset}
}

func keysetPosition(after *Cursor) position {
	if after == nil {
		return position{b: Top(), keyset: true}
	}
	return position{b: After(*after), keyset: true}
}

// advance returns the position after a page of entries read at p.
func (p position) advance(entries []Entry) position {
	if p.keyset {
		return position{b: After(entries[len(entries)-1]), keyset: true}
	}
	minTime, n := NextCursor(entries, p.b.Max, p.skip)
	return position{b: AtMost(minTime), skip: n}
}

// cursor names a keyset position p for the client.
func (p position) cursor() *Cursor { return &Cursor{Score: p.b.Max, PostID: p.b.BeforeID} }
