package sqlite

import (
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	feed "github.com/feedd/feedd"
	msqlite "modernc.org/sqlite"
)

// The inbox head: the newest entries of each embedded inbox, also kept
// packed in one blob (table inbox_head), so that a long page near the top
// of a feed (the 150 candidates of a first ranked page) reads one blob
// instead of a range of rows. In modernc's SQLite a range
// costs ~0.3 us a row to step and as much again to hand each value over;
// the blob is one step and a copy (BENCHMARKS.md, "Ranked
// timeline").
//
// A head is the newest n entries, n at most headMax, among the inbox's
// entries at or below its top T (columns head_score, head_post of the
// inbox's inbox_trim row), in feed order, with a flag: whole, when there
// are no others at or below T. The entries above T are rows only: a read
// takes them (a short range of the primary key, stopped at T) and then
// the head (Inbox.Page). A delivery of an entry above T, the rule, writes
// nothing more than before. The triggers of migration
// 007_inbox_head.sql keep the head, with the functions below, in the
// statement that changes the room (inbox_trim.room), whose row a delivery
// writes anyway:
//
//   - every headRefresh deliveries, the entries above T join the head
//     (feedd_head_join), the oldest falling off past headMax;
//   - an entry delivered at or below T (a late fan-out), a backfill, a
//     restore or a trim clear T: the head is built again from the rows
//     (the aggregate feedd_head) at once; a new inbox gets its first head
//     within headBuild deliveries (pages read the rows until then: a
//     fan-out into new inboxes builds none), and one whose head ran short
//     (below headMax/2 entries, after removals) a new one at the next
//     join;
//   - a removal takes its entry out of the head (feedd_head_del), which
//     stays the newest at or below T.
//
// A page of more than 32 entries that lies within the entries above T and
// the head is read from them (Inbox.Page); any other page, or an inbox
// without a head, reads the rows.
// Since the triggers call these functions, a program that writes to the
// inboxes must have them registered: feedd's processes do (this
// package's init); the sqlite3 shell cannot.

const (
	// headMax is how many entries a head holds at most: the ranked
	// timeline's 150 candidates (feed.DefaultRankSettings) and room for
	// removals. Written in migration 007_inbox_head.sql.
	headMax = 200
	// headRefresh is how many deliveries an inbox receives between two
	// joins of its newest rows into its head (when its room is a multiple
	// of it): a read steps over fewer rows than this. Written in
	// migration 007_inbox_head.sql.
	headRefresh = 32
	// headBuild: a new inbox gets its first head when its room is a
	// multiple of headBuild, within as many deliveries. Written in
	// migration 007_inbox_head.sql.
	headBuild = 8

	headEntry = 16      // bytes per entry: score, post id
	headWhole = 1       // flag: the head is all of the inbox at or below T
	headFlags = 1       // the flags byte before the entries
	signBit   = 1 << 63 // flipped, so that the bytes compare as the int64s
)

// packedHead is a head blob: a flags byte, then the entries in feed order,
// each a big-endian score and post id with their sign bit flipped.
type packedHead []byte

// validHead reports whether h is a head blob.
func validHead(h []byte) bool { return len(h) >= headFlags && (len(h)-headFlags)%headEntry == 0 }

func (h packedHead) len() int    { return (len(h) - headFlags) / headEntry }
func (h packedHead) whole() bool { return h[0]&headWhole != 0 }

func (h packedHead) at(i int) feed.Entry {
	b := h[headFlags+headEntry*i:]
	return feed.Entry{Score: int64(binary.BigEndian.Uint64(b) ^ signBit), PostID: int64(binary.BigEndian.Uint64(b[8:]) ^ signBit)}
}

func appendEntry(b []byte, e feed.Entry) []byte { return appendTuple(b, []int64{e.Score, e.PostID}) }

// newHead packs entries (in feed order, distinct) as a head.
func newHead(entries []feed.Entry, whole bool) packedHead {
	h := make(packedHead, headFlags, headFlags+headEntry*len(entries))
	if whole {
		h[0] = headWhole
	}
	for _, e := range entries {
		h = appendEntry(h, e)
	}
	return h
}

// del returns h without e (h itself when e is not in it).
func (h packedHead) del(e feed.Entry) packedHead {
	i, found := h.find(e)
	if !found {
		return h
	}
	out := make(packedHead, 0, len(h)-headEntry)
	out = append(out, h[:headFlags+headEntry*i]...)
	return append(out, h[headFlags+headEntry*(i+1):]...)
}

// join returns the head of an inbox whose entries above h's top are
// newer (a head of them all, as feedd_head makes it), then h's, keeping
// at most max; nil when newer is not whole (more than max of them: newer
// is then the head) or when the result is short (under max/2 entries and
// not whole: removals emptied it), for the caller to build it again.
func join(newer, h packedHead, max int) packedHead {
	if !newer.whole() {
		return newer
	}
	n := min(newer.len()+h.len(), max)
	whole := h.whole() && newer.len()+h.len() <= max
	if !whole && n < max/2 {
		return nil
	}
	out := make(packedHead, 0, headFlags+headEntry*n)
	out = append(out, 0)
	if whole {
		out[0] = headWhole
	}
	out = append(out, newer[headFlags:]...)
	out = append(out, h[headFlags:]...)
	return out[:headFlags+headEntry*n]
}

// top returns h's newest entry, or the least entry when h is empty: the T
// below which h holds the newest entries.
func (h packedHead) top() feed.Entry {
	if h.len() == 0 {
		return feed.Entry{Score: math.MinInt64, PostID: math.MinInt64}
	}
	return h.at(0)
}

// find returns where e is, or would be inserted, in h, and whether it is
// there.
func (h packedHead) find(e feed.Entry) (int, bool) {
	lo, hi := 0, h.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := h.at(m).Compare(e); {
		case c == 0:
			return m, true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}

// page returns the at most limit entries of h's inbox within b after
// skipping offset of them, and true; or false when the head cannot tell
// them (the page reaches past a head that is not the whole inbox).
func (h packedHead) page(b feed.Bound, offset, limit int) ([]feed.Entry, bool) {
	n := h.len()
	// The first entry within b: entries are in feed order, so those
	// that b admits are a suffix.
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.Admits(h.at(m)) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	start := lo + offset
	end := start + limit
	if end > n {
		if !h.whole() {
			return nil, false
		}
		end = n
	}
	out := make([]feed.Entry, 0, max(end-start, 0))
	for i := start; i < end; i++ {
		out = append(out, h.at(i))
	}
	return out, true
}

// pageAbove is page of an inbox whose entries within b above h's top T
// are above, in feed order (all of them, or at least offset+limit).
func (h packedHead) pageAbove(above []feed.Entry, b feed.Bound, offset, limit int) ([]feed.Entry, bool) {
	out := make([]feed.Entry, 0, limit)
	if offset < len(above) {
		out = append(out, above[offset:min(offset+limit, len(above))]...)
	}
	if len(out) < limit {
		rest, ok := h.page(b, max(offset-len(above), 0), limit-len(out))
		if !ok {
			return nil, false
		}
		out = append(out, rest...)
	}
	return out, true
}

func init() {
	// The heads' functions take NULL for an unknown head and return NULL
	// (feedd_head_top: the least entry), and so for a malformed one: the
	// triggers then build it again from the rows. The blobs they are given
	// are read in place (VolatileArgs) and never kept.
	blob := func(v driver.Value) (packedHead, bool) {
		h, ok := v.([]byte)
		return h, ok && validHead(h)
	}
	fn := func(name string, nArgs int32, f func(args []driver.Value) (driver.Value, error)) {
		msqlite.MustRegisterFunction(name, &msqlite.FunctionImpl{NArgs: nArgs, Deterministic: true, VolatileArgs: true,
			Scalar: func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				v, err := f(args)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				return v, nil
			}})
	}
	// feedd_head_del(head, score, post_id): head without the entry.
	fn("feedd_head_del", 3, func(a []driver.Value) (driver.Value, error) {
		h, ok := blob(a[0])
		s, p, err := ints2(a[1:])
		if !ok || err != nil {
			return nil, err
		}
		return []byte(h.del(feed.Entry{Score: s, PostID: p})), nil
	})
	// feedd_head_has(head, score, post_id): whether the entry is in head.
	fn("feedd_head_has", 3, func(a []driver.Value) (driver.Value, error) {
		h, ok := blob(a[0])
		s, p, err := ints2(a[1:])
		if !ok || err != nil {
			return int64(0), err
		}
		_, found := h.find(feed.Entry{Score: s, PostID: p})
		return boolInt(found), nil
	})
	// feedd_head_join(newer, head, max): join.
	fn("feedd_head_join", 3, func(a []driver.Value) (driver.Value, error) {
		newer, ok1 := blob(a[0])
		h, ok2 := blob(a[1])
		m, ok3 := a[2].(int64)
		if !ok1 || !ok2 || !ok3 || m < 1 {
			return nil, nil
		}
		if out := join(newer, h, int(m)); out != nil {
			return []byte(out), nil
		}
		return nil, nil
	})
	// feedd_head_top(head, 0): the score of head's top; (head, 1): its
	// post id.
	fn("feedd_head_top", 2, func(a []driver.Value) (driver.Value, error) {
		h, ok := blob(a[0])
		if !ok {
			h = newHead(nil, false)
		}
		if k, _ := a[1].(int64); k == 1 {
			return h.top().PostID, nil
		}
		return h.top().Score, nil
	})
	// feedd_head(score, post_id, max): the head of an inbox whose newest
	// entries, at most max+1 of them, are the rows aggregated.
	msqlite.MustRegisterFunction("feedd_head", &msqlite.FunctionImpl{NArgs: 3, Deterministic: true,
		MakeAggregate: func(msqlite.FunctionContext) (msqlite.AggregateFunction, error) { return &headAgg{}, nil }})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func ints2(a []driver.Value) (x, y int64, err error) {
	x, ok1 := a[0].(int64)
	y, ok2 := a[1].(int64)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("arguments %T, %T: not integers", a[0], a[1])
	}
	return x, y, nil
}

// headAgg is the aggregate feedd_head.
type headAgg struct {
	entries []feed.Entry
	max     int64
}

func (a *headAgg) Step(_ *msqlite.FunctionContext, args []driver.Value) error {
	s, p, err := ints2(args)
	m, ok := args[2].(int64)
	if err != nil || !ok || m < 0 {
		return fmt.Errorf("feedd_head: arguments %v", args)
	}
	a.entries, a.max = append(a.entries, feed.Entry{Score: s, PostID: p}), m
	return nil
}

func (a *headAgg) WindowInverse(*msqlite.FunctionContext, []driver.Value) error {
	return fmt.Errorf("feedd_head: not a window function")
}

func (a *headAgg) WindowValue(*msqlite.FunctionContext) (driver.Value, error) {
	es := slices.Clone(a.entries)
	slices.SortFunc(es, feed.CompareEntries) // an aggregate's input has no promised order
	es = slices.Compact(es)
	if int64(len(es)) > a.max {
		return []byte(newHead(es[:a.max], false)), nil
	}
	return []byte(newHead(es, true)), nil
}

func (a *headAgg) Final(*msqlite.FunctionContext) {}
