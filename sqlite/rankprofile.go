package sqlite

import (
	"cmp"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"slices"

	feed "github.com/feedd/feedd"
	msqlite "modernc.org/sqlite"
)

// The rank profile: what the ranked timeline reads of a caller, their likes
// and follows, also kept packed in one row of table rank_profile (column
// likes: post, author, liked_at each; follows: followee, followed_at each;
// both ordered by their first field). A caller's first ranked page then
// reads two blobs instead of two ranges of rows, each value of which
// modernc's SQLite hands over at ~0.6 us (BENCHMARKS.md, "Ranked
// timeline"). Likes and follows are written by people, a few a minute at
// most, while pages are read many times more.
//
// The triggers of migration 008_rank_profile.sql keep the profile in the
// statement that changes a like or a follow, whoever runs it (the API,
// a block, a deleted post, a bulk load): an insert puts the entry, a delete
// takes it out, an update builds the list again from the rows, as does
// the first like or follow of a caller without a profile. A list over its
// bound (likesMax, followsMax) is NULL, and so is built again at every
// insert until it is back under; readers read the rows then, as they do
// for a caller without a profile (DB.RankFacts).

const (
	// likesMax bounds a profile's likes (24 bytes each): a caller who has
	// liked more is read from the rows. Written in migration
	// 008_rank_profile.sql (as likesMax + 1).
	likesMax = 1024
	// followsMax bounds a profile's follows (16 bytes each): the ranked
	// timeline's RankAllFollows, past which it reads only the page's
	// authors' follows. Written in migration 008_rank_profile.sql.
	followsMax = feed.RankAllFollows
)

// packedList is a list of tuples of width int64s, ordered by the first
// (unique), each big-endian with its sign bit flipped, as the inbox head's
// entries are, after a byte that makes an empty list a blob, not NULL.
type packedList struct {
	b     []byte
	width int
}

const listFlags = 1 // the byte before the tuples

// emptyList is a list of no tuples.
func emptyList() []byte { return []byte{1} }

func (l packedList) len() int { return (len(l.b) - listFlags) / (8 * l.width) }

func (l packedList) field(i, f int) int64 {
	return int64(binary.BigEndian.Uint64(l.b[listFlags+8*(l.width*i+f):]) ^ signBit)
}

// find returns where key is, or would be inserted, and whether it is there.
func (l packedList) find(key int64) (int, bool) {
	lo, hi := 0, l.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch k := l.field(m, 0); {
		case k == key:
			return m, true
		case k < key:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}

func appendTuple(b []byte, t []int64) []byte {
	for _, v := range t {
		b = binary.BigEndian.AppendUint64(b, uint64(v)^signBit)
	}
	return b
}

// put returns the list with tuple t (replacing one of the same key), or
// nil when that would make more than max.
func (l packedList) put(t []int64, max int) []byte {
	i, found := l.find(t[0])
	size := 8 * l.width
	if !found && l.len()+1 > max {
		return nil
	}
	out := make([]byte, 0, len(l.b)+size)
	out = append(out, l.b[:listFlags+size*i]...)
	out = appendTuple(out, t)
	if found {
		i++
	}
	return append(out, l.b[listFlags+size*i:]...)
}

// del returns the list without the tuple of key (a copy of it when absent).
func (l packedList) del(key int64) []byte {
	i, found := l.find(key)
	out := slices.Clone(l.b)
	if !found {
		return out
	}
	size := 8 * l.width
	return slices.Delete(out, listFlags+size*i, listFlags+size*(i+1))
}

// validList reports whether b is a list of tuples of width.
func validList(b []byte, width int) bool {
	return len(b) >= listFlags && (len(b)-listFlags)%(8*width) == 0
}

// listAgg is the aggregate that packs rows into a list (feedd_likes,
// feedd_follows); NULL when there are more than max.
type listAgg struct {
	width, max int
	tuples     [][]int64
}

func (a *listAgg) Step(_ *msqlite.FunctionContext, args []driver.Value) error {
	t := make([]int64, a.width)
	for i := range t {
		v, ok := args[i].(int64)
		if !ok {
			return fmt.Errorf("argument %d is %T, not an integer", i+1, args[i])
		}
		t[i] = v
	}
	a.tuples = append(a.tuples, t)
	return nil
}

func (a *listAgg) WindowInverse(*msqlite.FunctionContext, []driver.Value) error {
	return fmt.Errorf("not a window function")
}

func (a *listAgg) WindowValue(*msqlite.FunctionContext) (driver.Value, error) {
	if len(a.tuples) > a.max {
		return nil, nil
	}
	ts := slices.Clone(a.tuples)
	slices.SortFunc(ts, func(x, y []int64) int { return cmp.Compare(x[0], y[0]) })
	ts = slices.CompactFunc(ts, func(x, y []int64) bool { return x[0] == y[0] })
	out := append(make([]byte, 0, listFlags+8*a.width*len(ts)), emptyList()...)
	for _, t := range ts {
		out = appendTuple(out, t)
	}
	return out, nil
}

func (a *listAgg) Final(*msqlite.FunctionContext) {}

func init() {
	for _, l := range []struct {
		name       string
		width, max int
	}{{"likes", 3, likesMax}, {"follows", 2, followsMax}} {
		// feedd_<list>(fields...): the list of the rows.
		msqlite.MustRegisterFunction("feedd_"+l.name, &msqlite.FunctionImpl{NArgs: int32(l.width), Deterministic: true,
			MakeAggregate: func(msqlite.FunctionContext) (msqlite.AggregateFunction, error) {
				return &listAgg{width: l.width, max: l.max}, nil
			}})
		// feedd_<list>_put(list, fields...): the list with the tuple; NULL
		// for a NULL list or past the bound.
		msqlite.MustRegisterFunction("feedd_"+l.name+"_put", &msqlite.FunctionImpl{NArgs: int32(1 + l.width), Deterministic: true, VolatileArgs: true,
			Scalar: func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				b, ok := args[0].([]byte)
				if !ok || !validList(b, l.width) {
					return nil, nil
				}
				t := make([]int64, l.width)
				for i := range t {
					if t[i], ok = args[1+i].(int64); !ok {
						return nil, fmt.Errorf("feedd_%s_put: argument %d is %T, not an integer", l.name, i+2, args[1+i])
					}
				}
				if out := (packedList{b, l.width}).put(t, l.max); out != nil {
					return out, nil
				}
				return nil, nil
			}})
		// feedd_<list>_del(list, key): the list without the key's tuple.
		msqlite.MustRegisterFunction("feedd_"+l.name+"_del", &msqlite.FunctionImpl{NArgs: 2, Deterministic: true, VolatileArgs: true,
			Scalar: func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				b, ok := args[0].([]byte)
				key, ok2 := args[1].(int64)
				if !ok || !ok2 || !validList(b, l.width) {
					return nil, nil
				}
				return (packedList{b, l.width}).del(key), nil
			}})
	}
}
