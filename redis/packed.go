package redis

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// Layout is how an Inbox keeps its entries in Redis.
type Layout string

const (
	// LayoutPacked keeps each inbox as a small sorted set, the
	// head, which takes fresh deliveries with a plain ZADD, plus a string,
	// the body, into which the head is compacted now and then: 14 bytes an
	// entry, in feed order. See PackedEntrySize and BodyKey.
	LayoutPacked Layout = "packed"
	// LayoutSortedSet (the default) keeps each inbox as one sorted set:
	// ~113 bytes an entry at the default cap of 800 with
	// Redis's default encoding settings, ~16 with zset-max-listpack-entries
	// 1024 but then 8x slower deliveries into full inboxes.
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
// scoreBias as 6 bytes, then the post id as 8 bytes, big-endian, so that the
// body's byte order is feed order (score, then post id numerically).
const PackedEntrySize = 14

// scoreBias is added to a score before it is packed into 6 unsigned bytes:
// scores from -2^47 to 2^47-1 ms (about 4 400 years either side of 1970)
// fit; Deliver, Add and Restore refuse others on a packed inbox.
const scoreBias = 1 << 47

// defaultHeadMax is how many entries an inbox's head gathers before it is
// compacted into the body, when the inbox is below its cap (a full inbox is
// compacted, and so trimmed exactly, at each amortised trim: see Deliver).
// Small enough that the head stays a listpack (Redis's default
// zset-max-listpack-entries is 128), large enough that a growing inbox's
// body is rewritten rarely, and inboxes of a few posts never get one.
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

// packedLua defines the helpers of the packed scripts. A body is a string of
// 14-byte entries (PackedEntrySize) sorted newest first: score + 2^47 as an
// unsigned 48-bit integer, then the post id as two unsigned 32-bit halves,
// all big-endian. Entries are compared as number triples (s, h, l), never
// as Lua strings (whose comparison follows the server's locale). Every such
// number is below 2^53, so exact in a Lua number.
//
//	at(body, j)               the triple of entry j (0-based)
//	newer(s1,h1,l1, s2,h2,l2) whether entry 1 comes before entry 2 in feed order
//	first(body, from, nb, s, h, l)  the first index j in [from, nb) whose
//	                          entry is not newer than (s, h, l): binary search
//	limbs(m)                  the decimal post id m as (h, l), exactly, also
//	                          above 2^53
const packedLua = `
local W = 14
local function at(body, j)
  return struct.unpack('>I6I4I4', body, j * W + 1)
end
local function newer(s1, h1, l1, s2, h2, l2)
  if s1 ~= s2 then return s1 > s2 end
  if h1 ~= h2 then return h1 > h2 end
  return l1 > l2
end
local function first(body, from, nb, s, h, l)
  local a, b = from, nb
  while a < b do
    local mid = math.floor((a + b) / 2)
    local ms, mh, ml = at(body, mid)
    if newer(ms, mh, ml, s, h, l) then a = mid + 1 else b = mid end
  end
  return a
end
local function limbs(m)
  if #m <= 15 then
    local n = tonumber(m)
    local h = math.floor(n / 4294967296)
    return h, n - h * 4294967296
  end
  local h, l = 0, 0
  for i = 1, #m do
    l = l * 10 + string.byte(m, i) - 48
    local c = math.floor(l / 4294967296)
    l = l - c * 4294967296
    h = h * 10 + c
  end
  return h, l
end
`

// compactLua compacts an inbox: when its head holds more than headMax
// entries, or head and body together more than cap, it merges every head
// entry into the body (an entry already there is not repeated), cuts the
// body to its first cap entries (feed order, so ties are cut by numeric post
// id), and empties the head of entries (the sentinel and the body marker
// stay; a head that grew past a listpack is re-created, so it is one again).
// It expects the locals head, bkey (keys), cap and headMax, and sets removed
// (entries dropped by the cut).
const compactLua = packedLua + `
local removed = 0
local r = redis.call('ZRANGE', head, 0, -1, 'WITHSCORES')
local built, marked = false, false
local es = {}
for i = #r - 1, 1, -2 do
  local m = r[i]
  if m == '-' then built = true
  elseif m == '=' then marked = true
  else
    local h, l = limbs(m)
    local e = {tonumber(r[i + 1]) + 140737488355328, h, l}
    -- Insertion sort, newest first: read from the end, ZRANGE's order is
    -- already newest first but within a tie group (member bytes are not id
    -- order), so each entry moves only past its ties.
    local k = #es
    es[k + 1] = e
    while k > 0 and newer(e[1], e[2], e[3], es[k][1], es[k][2], es[k][3]) do
      es[k + 1] = es[k]
      k = k - 1
    end
    es[k + 1] = e
  end
end
local body = ''
if marked then
  body = redis.call('GET', bkey)
  if not body then
    -- The body was lost (its marker says it existed): so is the inbox.
    body = ''
    redis.call('ZREM', head, '-', '=')
    built, marked = false, false
  end
end
local nb = #body / W
if #es > headMax or #es + nb > cap then
  local parts, pos, dups = {}, 0, 0
  for _, e in ipairs(es) do
    local j = pos
    if j < nb then
      local s, h, l = at(body, j)
      if newer(s, h, l, e[1], e[2], e[3]) then j = first(body, j + 1, nb, e[1], e[2], e[3]) end
    end
    if j > pos then parts[#parts + 1] = string.sub(body, pos * W + 1, j * W) end
    pos = j
    local dup = false
    if j < nb then
      local s, h, l = at(body, j)
      dup = s == e[1] and h == e[2] and l == e[3]
    end
    if dup then dups = dups + 1 else parts[#parts + 1] = struct.pack('>I6I4I4', e[1], e[2], e[3]) end
  end
  -- The rest of the body, cut so that the whole holds at most cap entries.
  local len = 0
  for _, p in ipairs(parts) do len = len + #p end
  local keep = math.max(math.min(nb - pos, cap - len / W), 0)
  if keep > 0 then parts[#parts + 1] = string.sub(body, pos * W + 1, (pos + keep) * W) end
  local nbody = table.concat(parts)
  if #nbody > cap * W then nbody = string.sub(nbody, 1, cap * W) end
  removed = #es - dups + nb - #nbody / W
  if #es > 0 then
    if #r > 256 then
      redis.call('DEL', head)
      if built then redis.call('ZADD', head, '-inf', '-') end
      marked = false
    else
      redis.call('ZREMRANGEBYSCORE', head, '(-inf', '+inf')
    end
  end
  if #nbody == 0 then
    if nb > 0 then redis.call('DEL', bkey) end
    if marked then redis.call('ZREM', head, '=') end
  else
    if #es > 0 or #nbody ~= #body or not marked then redis.call('SET', bkey, nbody) end
    if not marked then redis.call('ZADD', head, '-inf', '=') end
  end
end
`

// compactScript compacts one packed inbox (compactLua).
//
//	KEYS[1] head key (InboxKey), KEYS[2] body key (BodyKey)
//	ARGV[1] cap: how many entries the inbox keeps (>= 0)
//	ARGV[2] headMax: compact when the head holds more entries than this
//	        (or head and body more than cap)
//
// Returns the number of entries removed by the cut to cap.
var compactScript = goredis.NewScript(`
local head, bkey, cap, headMax = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
` + compactLua + `
return removed
`)

// packedAddScript adds entries to one packed inbox's head, then compacts it
// (compactLua).
//
//	KEYS[1] head key, KEYS[2] body key
//	ARGV[1] cap, ARGV[2] headMax: as compactScript's
//	ARGV[3], ARGV[4], ... score, member pairs to add (Restore adds the
//	        sentinel as one of them: -inf, "-")
//
// Returns the number of entries removed by the cut to cap.
var packedAddScript = goredis.NewScript(`
local head, bkey, cap, headMax = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('ZSCORE', head, '=') and redis.call('EXISTS', bkey) == 0 then
  -- A lost body: the inbox is lost; what is added now (Restore's sentinel
  -- included) starts it afresh.
  redis.call('ZREM', head, '-', '=')
end
for i = 3, #ARGV, 1000 do
  redis.call('ZADD', head, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
` + compactLua + `
return removed
`)

// packedRemoveScript removes one entry from a packed inbox, from its head
// and its body.
//
//	KEYS[1] head key, KEYS[2] body key
//	ARGV[1] the member (decimal post id)
//	ARGV[2], ARGV[3], ARGV[4] the entry's packed triple (s, h, l), or
//	        ARGV[2] = "" when its score cannot be in a body
//
// Returns 1 if the body held the entry, else 0.
var packedRemoveScript = goredis.NewScript(packedLua + `
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[2] == '' or not redis.call('ZSCORE', KEYS[1], '=') then return 0 end
local body = redis.call('GET', KEYS[2])
if not body then return 0 end
local s, h, l = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local nb = #body / W
local j = first(body, 0, nb, s, h, l)
if j >= nb then return 0 end
local es, eh, el = at(body, j)
if es ~= s or eh ~= h or el ~= l then return 0 end
if nb == 1 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], '=')
else
  redis.call('SET', KEYS[2], string.sub(body, 1, j * W) .. string.sub(body, (j + 1) * W + 1))
end
return 1
`)

// packedPageScript reads, in one round trip, what Page needs from a packed
// inbox.
//
//	KEYS[1] head key, KEYS[2] body key
//	ARGV[1] .. ARGV[4] as pageScript's: max, n, sentinel, before
//	ARGV[5], ARGV[6], ARGV[7] the packed triple (s, h, l) of the newest
//	        entry the bound admits, or ARGV[5] = "" when it admits no entry
//	        a body can hold
//
// Returns nil when the inbox is lost (no sentinel, or a body marker without
// a body). Otherwise {head, body} or {head, body, group}: head and group as
// pageScript's, over the head; body the packed bytes of the first n
// admitted entries of the body (binary search for the bound).
var packedPageScript = goredis.NewScript(packedLua + `
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then return false end
local body = ''
if redis.call('ZSCORE', KEYS[1], '=') then
  body = redis.call('GET', KEYS[2])
  if not body then return false end
end
local n = tonumber(ARGV[2])
local slice = ''
if ARGV[5] ~= '' and #body > 0 then
  local j = first(body, 0, #body / W, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
  slice = string.sub(body, j * W + 1, (j + n) * W)
end
local before = ARGV[4]
if before ~= '' then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])) do
    if #m > #before or (#m == #before and m >= before) then n = n + 1 end
  end
end
local head = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '(-inf', 'WITHSCORES', 'LIMIT', 0, n)
if #head < 2 * n then return {head, slice} end
local s = head[#head]
return {head, slice, redis.call('ZRANGEBYSCORE', KEYS[1], s, s)}
`)

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
	var buf [8]byte
	for i := 0; i < len(s); i += PackedEntrySize {
		copy(buf[2:], s[i:i+6])
		score := int64(binary.BigEndian.Uint64(buf[:])) - scoreBias
		id := int64(binary.BigEndian.Uint64([]byte(s[i+6 : i+14])))
		out = append(out, feed.Entry{PostID: id, Score: score})
	}
	return out, nil
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

// deliverPacked is Deliver on a packed inbox: a ZADD to each head, and on
// the deliveries trimsOn picks, compactScript too.
func (ib *Inbox) deliverPacked(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if err := checkPackable(e); err != nil {
		return err
	}
	z := goredis.Z{Score: float64(e.Score), Member: member(e.PostID)}
	headMax := ib.headMaxArg()
	var compacts []scriptCall
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			key := ib.key(u)
			p.ZAdd(ctx, key, z)
			if trimsOn(e.PostID, u) {
				c := scriptCall{keys: ib.keys(u), args: []any{ib.cap, headMax}}
				c.cmd = compactScript.EvalSha(ctx, p, c.keys, c.args...)
				compacts = append(compacts, c)
			}
		}
		return nil
	})
	return retryNoScript(ctx, ib.rdb, compactScript, cmds, err, compacts)
}

// addPacked is Add and Restore on a packed inbox: one packedAddScript call.
func (ib *Inbox) addPacked(ctx context.Context, userID int64, restore bool, entries []feed.Entry) error {
	if err := checkPackable(entries...); err != nil {
		return err
	}
	args := make([]any, 0, 4+2*len(entries))
	args = append(args, ib.cap, ib.headMaxArg())
	if restore {
		args = append(args, "-inf", sentinel)
	}
	for _, e := range entries {
		args = append(args, e.Score, member(e.PostID))
	}
	return packedAddScript.Run(ctx, ib.rdb, ib.keys(userID), args...).Err()
}

// removePacked is Remove on a packed inbox: one pipelined
// packedRemoveScript call per inbox.
func (ib *Inbox) removePacked(ctx context.Context, e feed.Entry, userIDs []int64) error {
	args := []any{member(e.PostID), ""}
	if packable(e.Score) && e.PostID >= 0 {
		args = append([]any{member(e.PostID)}, tripleArgs(e)...)
	}
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

// pagePacked is Page on a packed inbox, in one round trip
// (packedPageScript): the head's entries as Page reads a sorted set, merged
// with the body's (already in feed order), an entry in both counted once.
func (ib *Inbox) pagePacked(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	n := offset + limit
	args := append([]any{b.Max, n, sentinel, beforeArg(b)}, boundArgs(b)...)
	res, err := packedPageScript.Run(ctx, ib.rdb, ib.keys(userID), args...).Slice()
	if errors.Is(err, goredis.Nil) {
		return nil, feed.ErrInboxLost
	} else if err != nil {
		return nil, err
	}
	if len(res) < 2 {
		return nil, fmt.Errorf("redis: page of inbox %d: unexpected reply %v", userID, res)
	}
	slice, ok := res[1].(string)
	if !ok {
		return nil, fmt.Errorf("redis: page of inbox %d: unexpected reply %v", userID, res)
	}
	head, err := parsePage(slices.Delete(slices.Clone(res), 1, 2), b)
	if err != nil {
		return nil, fmt.Errorf("redis: page of inbox %d: %w", userID, err)
	}
	body, err := decodeBody(slice)
	if err != nil {
		return nil, fmt.Errorf("redis: page of inbox %d: %w", userID, err)
	}
	entries := mergeEntries(head, body)
	if offset >= len(entries) {
		return []feed.Entry{}, nil
	}
	return entries[offset:min(n, len(entries))], nil
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
	key := ib.key(userID)
	var card, blen *goredis.IntCmd
	var marks [2]*goredis.FloatCmd
	_, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		card = p.ZCard(ctx, key)
		marks[0] = p.ZScore(ctx, key, sentinel)
		marks[1] = p.ZScore(ctx, key, bodyMarker)
		if ib.layout == LayoutPacked {
			blen = p.StrLen(ctx, BodyKey(ib.prefix, userID))
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, err
	}
	n := int(card.Val())
	for _, m := range marks {
		if m.Err() == nil {
			n--
		}
	}
	if blen != nil && marks[1].Err() == nil {
		n += int(blen.Val()) / PackedEntrySize
	}
	return n, nil
}
