package redis

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// Layout is how an Inbox keeps its entries in Redis.
type Layout string

const (
	// LayoutPacked (the default) keeps each inbox as a small sorted set, the
	// head, which takes fresh deliveries with a plain ZADD, plus a string,
	// the body, into which the head is compacted now and then: a ring of
	// 14-byte entries in feed order, written in place. A head's members are
	// those same 14-byte entries (its scores the post times), so Redis keeps
	// them in exact feed order and a compaction copies them into the body as
	// they are. See PackedEntrySize, PackedHeaderSize, PackedHeadKey and
	// BodyKey.
	LayoutPacked Layout = "packed"
	// LayoutSortedSet keeps each inbox as one sorted set: several times
	// the bytes of LayoutPacked with Redis's default encoding settings, as
	// few with zset-max-listpack-entries 1024 but then several times the
	// Redis CPU per delivery into a full inbox (BENCHMARKS.md, "Redis
	// memory per inbox entry").
	LayoutSortedSet Layout = "zset"
)

// ParseLayout parses a Layout name ("packed" or "zset").
func ParseLayout(s string) (Layout, error) {
	switch l := Layout(s); l {
	case LayoutPacked, LayoutSortedSet:
		return l, nil
	}
	return "", feed.Errorf(feed.EINVALID, "inbox layout %q: want %q or %q", s, LayoutPacked, LayoutSortedSet)
}

// PackedEntrySize is the size of one entry in a packed body: the score plus
// scoreBias as 6 bytes, then the post id as 8 bytes, big-endian, so that
// byte order is feed order (score, then post id numerically).
const PackedEntrySize = 14

// PackedHeaderSize is the size of a packed body's header: three unsigned
// 32-bit integers, big-endian: the slot of the newest entry (start), the
// number of entries (count) and the number of slots (capacity). The slots,
// PackedEntrySize bytes each, follow: a ring, newest first from start, so
// that a full inbox takes newer entries in place (SETRANGE over its oldest
// ones) instead of a rewrite of the whole body.
const PackedHeaderSize = 12

// scoreBias is added to a score before it is packed into 6 unsigned bytes:
// scores from -2^47 to 2^47-1 ms (about 4 400 years either side of 1970)
// fit; Deliver, Add and Restore refuse others on a packed inbox.
const scoreBias = 1 << 47

// defaultHeadMax is how many entries an inbox's head gathers before it is
// merged into the body (a full inbox is also trimmed exactly at each
// amortised trim, by a cut of the body's count when the head's entries are
// all newer: see compactLua). Small enough that the head stays a listpack
// (Redis's default zset-max-listpack-entries is 128), large enough that a
// body is written rarely, and inboxes of a few posts never get one.
const defaultHeadMax = 32

// BodyKey is the key of the packed body of the inbox userID (a string; see
// LayoutPacked) under prefix. It shares the inbox key's hash tag, so both
// are on one Cluster node and one script can touch both.
func BodyKey(prefix string, userID int64) string {
	return InboxKey(prefix, userID) + ":packed"
}

// bodyMarker is the head member, at score -inf like the sentinel, that says
// the inbox has a non-empty body. A head holding it whose body is missing
// has lost its body (eviction) and reads as lost; a body whose head does not
// hold it is an orphan (its head was lost, so the inbox was) and is ignored,
// then replaced by the next compaction, as after a loss of both.
const bodyMarker = "="

// packable reports whether score fits a packed body.
func packable(score int64) bool { return score >= -scoreBias && score < scoreBias }

// tripleArgs are the script arguments (s, h, l) of the packed entry e.
func tripleArgs(e feed.Entry) []any {
	id := uint64(e.PostID)
	return []any{e.Score + scoreBias, id >> 32, id & 0xffffffff}
}

// checkPackable refuses entries a packed body cannot hold.
func checkPackable(entries ...feed.Entry) error {
	for _, e := range entries {
		if !packable(e.Score) {
			return feed.Errorf(feed.EINVALID, "inbox entry of post %d: score %d is outside the packed layout's range (±2^47 ms)", e.PostID, e.Score)
		}
		if e.PostID < 0 {
			return feed.Errorf(feed.EINVALID, "inbox entry: post id %d is negative", e.PostID)
		}
	}
	return nil
}

// boundArgs are packedPageScript's ARGV[5..7] for b: the newest entry b
// admits, or "" when b admits no packable entry.
func boundArgs(b feed.Bound) []any {
	switch {
	case b.Max < -scoreBias:
		return []any{""}
	case b.Max >= scoreBias:
		return []any{uint64(1<<48 - 1), uint64(0xffffffff), uint64(0xffffffff)}
	case b.BeforeID == 0:
		return []any{b.Max + scoreBias, uint64(0xffffffff), uint64(0xffffffff)}
	case b.BeforeID < 0:
		// Every stored id is >= 0, so nothing at Max is admitted.
		if b.Max == -scoreBias {
			return []any{""}
		}
		return []any{b.Max - 1 + scoreBias, uint64(0xffffffff), uint64(0xffffffff)}
	}
	return tripleArgs(feed.Entry{Score: b.Max, PostID: b.BeforeID - 1})
}

// decodeBody decodes packed body bytes into entries (in feed order).
func decodeBody(s string) ([]feed.Entry, error) {
	if len(s)%PackedEntrySize != 0 {
		return nil, fmt.Errorf("packed body of %d bytes", len(s))
	}
	out := make([]feed.Entry, 0, len(s)/PackedEntrySize)
	for i := 0; i < len(s); i += PackedEntrySize {
		out = append(out, decodeEntry(s[i:i+PackedEntrySize]))
	}
	return out, nil
}

// decodeEntry decodes one packed entry (PackedEntrySize bytes).
func decodeEntry(s string) feed.Entry {
	var score uint64
	for i := range 6 {
		score = score<<8 | uint64(s[i])
	}
	var id uint64
	for i := 6; i < PackedEntrySize; i++ {
		id = id<<8 | uint64(s[i])
	}
	return feed.Entry{PostID: int64(id), Score: int64(score) - scoreBias}
}

// packedMember is e as a packed entry (PackedEntrySize bytes): a packed
// head's member. e must be packable (checkPackable).
func packedMember(e feed.Entry) string {
	var b [PackedEntrySize]byte
	s := uint64(e.Score + scoreBias)
	for i := 5; i >= 0; i-- {
		b[i] = byte(s)
		s >>= 8
	}
	binary.BigEndian.PutUint64(b[6:], uint64(e.PostID))
	return string(b[:])
}

func (ib *Inbox) headMaxArg() int {
	if ib.headMax < 0 {
		return 0
	}
	return cmp.Or(ib.headMax, defaultHeadMax)
}

func (ib *Inbox) keys(userID int64) []string {
	return []string{ib.key(userID), BodyKey(ib.prefix, userID)}
}

// deliverPacked is Deliver on a packed inbox: a ZADD to each head, then,
// in the same pipeline, a probe (compactProbe) of the inboxes that trimsOn
// picks, and a compactScript call for those it finds due, in a second
// pipeline.
func (ib *Inbox) deliverPacked(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if err := checkPackable(e); err != nil {
		return err
	}
	z := goredis.Z{Score: float64(e.Score), Member: packedMember(e)}
	type probe struct {
		user   int64
		card   *goredis.IntCmd
		marker *goredis.FloatCmd
	}
	var probes []probe
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			p.ZAdd(ctx, ib.key(u), z)
		}
		for _, u := range userIDs {
			if trimsOn(e.PostID, u) {
				key := ib.key(u)
				probes = append(probes, probe{u, p.ZCard(ctx, key), p.ZScore(ctx, key, bodyMarker)})
			}
		}
		return nil
	})
	// An error answered for some inboxes (WRONGTYPE on one key) leaves the
	// others written: their compactions still run, and the error is
	// returned after them.
	if outageOf(err) {
		return err
	}
	var answered error
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, goredis.Nil) {
			answered = cmp.Or(answered, err)
		}
	}
	var due []int64
	for _, pr := range probes {
		if err := cmp.Or(pr.card.Err(), pr.marker.Err()); err != nil && !errors.Is(err, goredis.Nil) {
			continue
		}
		if (compactProbe{pr.card.Val(), pr.marker.Err() == nil}).compactDue(ib.cap, ib.headMaxArg()) {
			due = append(due, pr.user)
		}
	}
	return cmp.Or(ib.compact(ctx, due), answered)
}

// compact runs compactScript on the inboxes of users, in one pipeline.
func (ib *Inbox) compact(ctx context.Context, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	args := []any{ib.cap, ib.headMaxArg()}
	calls := make([]scriptCall, 0, len(users))
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range users {
			c := scriptCall{keys: ib.keys(u), args: args}
			c.cmd = compactScript.EvalSha(ctx, p, c.keys, c.args...)
			calls = append(calls, c)
		}
		return nil
	})
	return retryNoScript(ctx, ib.rdb, compactScript, cmds, err, calls)
}

// addPacked is Add and Restore on a packed inbox: one packedAddScript call.
func (ib *Inbox) addPacked(ctx context.Context, userID int64, restore bool, entries []feed.Entry) error {
	if err := checkPackable(entries...); err != nil {
		return err
	}
	args := make([]any, 0, 4+2*len(entries))
	args = append(args, ib.cap, ib.headMaxArg())
	keys := ib.keys(userID)
	if restore {
		args = append(args, "-inf", sentinel)
		keys = append(keys, InboxKey(ib.prefix, userID))
	}
	for _, e := range entries {
		args = append(args, e.Score, packedMember(e))
	}
	return packedAddScript.Run(ctx, ib.rdb, keys, args...).Err()
}

// removePacked is Remove on a packed inbox: one pipelined
// packedRemoveScript call per inbox.
// An entry that cannot be packed is in no packed inbox: there is nothing to
// remove.
func (ib *Inbox) removePacked(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if checkPackable(e) != nil {
		return nil
	}
	args := []any{packedMember(e)}
	var calls []scriptCall
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			c := scriptCall{keys: ib.keys(u), args: args}
			c.cmd = packedRemoveScript.EvalSha(ctx, p, c.keys, c.args...)
			calls = append(calls, c)
		}
		return nil
	})
	return retryNoScript(ctx, ib.rdb, packedRemoveScript, cmds, err, calls)
}

// trimPacked is Trim on a packed inbox: compactScript with the given cap and
// a head limit that never compacts by itself.
func (ib *Inbox) trimPacked(ctx context.Context, userID int64, cap int) error {
	return compactScript.Run(ctx, ib.rdb, ib.keys(userID), max(cap, 0), 1<<30).Err()
}

// packedPageEntries is Page's reading of a packedPageScript reply: the
// head's entries that b admits (already in feed order), merged with the
// body's (in feed order too), an entry in both counted once.
func packedPageEntries(res []any, b feed.Bound) ([]feed.Entry, error) {
	if len(res) != 2 {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	members, ok := res[0].([]any)
	slice, ok2 := res[1].(string)
	if !ok || !ok2 {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	head := make([]feed.Entry, 0, len(members))
	for _, m := range members {
		s, ok := m.(string)
		if !ok || len(s) != PackedEntrySize {
			return nil, fmt.Errorf("packed head member %q", m)
		}
		if e := decodeEntry(s); b.Admits(e) {
			head = append(head, e)
		}
	}
	body, err := decodeBody(slice)
	if err != nil {
		return nil, err
	}
	return mergeEntries(head, body), nil
}

// mergeEntries merges two lists in feed order into one, an entry in both
// kept once.
func mergeEntries(a, b []feed.Entry) []feed.Entry {
	out := make([]feed.Entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch c := feed.CompareEntries(a[0], b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// Len is how many entries userID's inbox holds (the sentinel and markers
// not counted; an entry both in a packed head and body counted twice until
// the next compaction). For tests and benchmarks.
func (ib *Inbox) Len(ctx context.Context, userID int64) (int, error) {
	n, err := ib.Lens(ctx, []int64{userID})
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// Lens is Len of each of userIDs, in one pipeline.
func (ib *Inbox) Lens(ctx context.Context, userIDs []int64) ([]int, error) {
	type lenCmds struct {
		card  *goredis.IntCmd
		hdr   *goredis.StringCmd
		marks [2]*goredis.FloatCmd
	}
	cmds := make([]lenCmds, len(userIDs))
	_, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, u := range userIDs {
			key := ib.key(u)
			c := &cmds[i]
			c.card = p.ZCard(ctx, key)
			c.marks[0] = p.ZScore(ctx, key, sentinel)
			c.marks[1] = p.ZScore(ctx, key, bodyMarker)
			if ib.layout == LayoutPacked {
				c.hdr = p.GetRange(ctx, BodyKey(ib.prefix, u), 0, PackedHeaderSize-1)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	out := make([]int, len(userIDs))
	for i, c := range cmds {
		n := int(c.card.Val())
		for _, m := range c.marks {
			if m.Err() == nil {
				n--
			}
		}
		if c.hdr != nil && c.marks[1].Err() == nil {
			if h := c.hdr.Val(); len(h) == PackedHeaderSize {
				n += int(binary.BigEndian.Uint32([]byte(h[4:8])))
			}
		}
		out[i] = n
	}
	return out, nil
}
