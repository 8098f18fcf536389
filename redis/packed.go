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
	// LayoutSortedSet keeps each inbox as one sorted set:
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

// packedLua defines the helpers of the packed scripts. A body is a header
// (PackedHeaderSize: start, count, capacity) and capacity slots of 14 bytes
// (PackedEntrySize), a ring: its count entries, newest first, are in the
// slots start, start+1, ... modulo capacity. An entry is score + 2^47 as an
// unsigned 48-bit integer, then the post id as two unsigned 32-bit halves,
// all big-endian. Entries are compared as number triples (s, h, l), never
// as Lua strings (whose comparison follows the server's locale). Every such
// number is below 2^53, so exact in a Lua number. A string body (linear)
// is a ring's entries as one string, newest first, without header.
//
//	header(bkey)              start, count, capacity, and whether bkey exists
//	ringAt(bkey, st, capa, j) the triple of the ring's entry j (0-based)
//	ringSlice(bkey, st, nb, capa, j, m)  the bytes of entries [j, j+m)
//	ringFirst(bkey, st, nb, capa, s, h, l)  the first index j whose entry
//	                          is not newer than (s, h, l): binary search
//	linear(bkey, st, nb, capa)  the whole ring as a string body (one GET)
//	writeLinear(bkey, body, capa)  a string body written as a ring from slot 0
//	at(body, j)               the triple of entry j (0-based) of a string body
//	newer(s1,h1,l1, s2,h2,l2) whether entry 1 comes before entry 2 in feed order
//	first(body, from, nb, s, h, l)  the first index j in [from, nb) whose
//	                          entry is not newer than (s, h, l): binary search
//	ringTop(bkey, st, nb, capa, s, h, l)  the ring's newest entries down to
//	                          the first not newer than (s, h, l), and how many
//	ringWrite(bkey, capa, ns, p)  packed entries written into slots ns, ns+1,
//	                          ... modulo capa (SETRANGE, one or two)
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
local H = 12
-- The body's header: start, count, capacity (all 0 when bkey is missing).
local function header(bkey)
  local hd = redis.call('GETRANGE', bkey, 0, H - 1)
  if #hd < H then return 0, 0, 0, false end
  local st, nb, capa = struct.unpack('>I4I4I4', hd)
  return st, nb, capa, true
end
-- The packed bytes of the ring's logical entries [j, j + m) (newest first),
-- at most two GETRANGEs.
local function ringSlice(bkey, st, nb, capa, j, m)
  m = math.min(m, nb - j)
  if m <= 0 then return '' end
  local p = (st + j) % capa
  if p + m <= capa then
    return redis.call('GETRANGE', bkey, H + p * W, H + (p + m) * W - 1)
  end
  return redis.call('GETRANGE', bkey, H + p * W, H + capa * W - 1) ..
    redis.call('GETRANGE', bkey, H, H + (p + m - capa) * W - 1)
end
-- The triple of the ring's logical entry j.
local function ringAt(bkey, st, capa, j)
  local p = (st + j) % capa
  return struct.unpack('>I6I4I4', redis.call('GETRANGE', bkey, H + p * W, H + p * W + W - 1))
end
-- The first logical index in [0, nb) whose entry is not newer than
-- (s, h, l): a binary search, one GETRANGE a probe; entry 0 first, which
-- answers a page from the top at once.
local function ringFirst(bkey, st, nb, capa, s, h, l)
  if nb == 0 then return 0 end
  local es, eh, el = ringAt(bkey, st, capa, 0)
  if not newer(es, eh, el, s, h, l) then return 0 end
  local a, b = 1, nb
  while a < b do
    local mid = math.floor((a + b) / 2)
    local ms, mh, ml = ringAt(bkey, st, capa, mid)
    if newer(ms, mh, ml, s, h, l) then a = mid + 1 else b = mid end
  end
  return a
end
-- The whole ring's entries as one string in feed order (one GET).
local function linear(bkey, st, nb, capa)
  if nb == 0 then return '' end
  local b = redis.call('GET', bkey)
  local e = st + nb
  if e <= capa then return string.sub(b, H + st * W + 1, H + e * W) end
  return string.sub(b, H + st * W + 1, H + capa * W) .. string.sub(b, H + 1, H + (e - capa) * W)
end
-- Writes the entries of the string body (feed order) as a ring of capa
-- slots (at least as many as entries) from slot 0; deletes the key when
-- there are none.
local function writeLinear(bkey, body, capa)
  local n = #body / W
  if n == 0 then
    redis.call('DEL', bkey)
  else
    redis.call('SET', bkey, struct.pack('>I4I4I4', 0, n, capa) .. body .. string.rep('\0', (capa - n) * W))
  end
end
-- The ring's top for an entry (s, h, l): its newest entries down to the
-- first not newer than (s, h, l), as packed bytes, and how many; one
-- GETRANGE of 32 entries unless the top is deeper.
local function ringTop(bkey, st, nb, capa, s, h, l)
  local c = ringSlice(bkey, st, nb, capa, 0, 32)
  local n = #c / W
  local j = first(c, 0, n, s, h, l)
  if j == n and n < nb then
    local t = math.min(ringFirst(bkey, st, nb, capa, s, h, l) + 1, nb)
    return ringSlice(bkey, st, nb, capa, 0, t), t
  end
  local t = math.min(j + 1, n)
  return string.sub(c, 1, t * W), t
end
-- Writes the packed entries p into the ring's slots from slot ns on,
-- wrapping (at most capa entries).
local function ringWrite(bkey, capa, ns, p)
  local w = #p / W
  if ns + w <= capa then
    redis.call('SETRANGE', bkey, H + ns * W, p)
  else
    local a = capa - ns
    redis.call('SETRANGE', bkey, H + ns * W, string.sub(p, 1, a * W))
    redis.call('SETRANGE', bkey, H, string.sub(p, a * W + 1))
  end
end
`

// compactLua compacts an inbox: when its head holds more than headMax
// entries, or head and body together more than cap, it keeps exactly the
// newest cap entries of both (feed order, so ties are cut by numeric post
// id), in one of three ways:
//
//   - the cut: when the head holds at most headMax entries, all newer (by
//     score) than the body's newest, the body's count drops so that head
//     and body hold cap (the head stays); reads ZCARD, the head's three
//     lowest members (sentinel, marker, oldest entry) and the body's header
//     and newest entry, writes 12 bytes;
//   - the merge at the top: when the ring has the slots, the head's entries
//     are merged with the ring's top, its newest entries down to the first
//     not newer than the head's oldest (one entry when deliveries came in
//     order, a few when some came late; an entry already there is not
//     repeated), and the result is written (SETRANGE) over the top and the
//     slots before the ring's start, over its oldest entries once it is
//     full; the entries below the top stay where they are. When the top's
//     newest is older than every head entry (deliveries in order), the
//     head's members, already packed entries in feed order, are written as
//     they are, before the top, without a triple unpacked;
//   - otherwise (a growing inbox, whose ring has no free slots) the general
//     merge: every head entry merged into the whole body, cut to cap and
//     written back with one SET (all cap slots when it holds at least
//     cap - 2*headMax entries, so that the next merges are at the top).
//
// The merges empty the head of entries (the sentinel and the body marker
// stay), except that the merge at the top leaves in the head its newest
// entries, up to reserve = min(headMax/4, 8), whose scores are above every
// other entry's: a delivery that arrives a little late after the merge (four
// fan-outs at once deliver out of order by a few posts) is then still newer
// than the body's newest, and the next trim is a cut. A head that grew past
// a listpack (128 entries under Redis's defaults) is emptied and re-created,
// so it is one again. It expects the locals head, bkey (keys), cap and
// headMax, and sets removed (entries dropped).
const compactLua = packedLua + `
local removed = 0
local reserve = math.min(math.floor(headMax / 4), 8)
local card = redis.call('ZCARD', head)
-- The head's three lowest members: the sentinel and the marker when it
-- holds them (both at -inf, '-' before '='), then its oldest entry.
local low = redis.call('ZRANGE', head, 0, 2)
local built = low[1] == '-'
local marked = low[1] == '=' or low[2] == '='
local k, oldest = card, 1
if built then k, oldest = k - 1, oldest + 1 end
if marked then k, oldest = k - 1, oldest + 1 end
oldest = low[oldest]
local st, nb, capa = 0, 0, 0
if marked then
  local found
  st, nb, capa, found = header(bkey)
  if not found then
    -- The body was lost (its marker says it existed): so is the inbox.
    redis.call('ZREM', head, '-', '=')
    built, marked = false, false
  end
end
if k > headMax or k + nb > cap then
  local done = false
  if k <= headMax and k <= cap then
    -- The cut alone: when every head entry is newer (by score) than the
    -- body's newest, the newest cap entries are the head's k and the body's
    -- first cap - k, so the body's count drops to cap - k (one SETRANGE of
    -- its header); the head stays.
    local ok = k == 0
    if not ok then
      local s = ringAt(bkey, st, capa, 0)
      ok = struct.unpack('>I6', oldest) > s
    end
    if ok then
      removed = nb - (cap - k)
      redis.call('SETRANGE', bkey, 0, struct.pack('>I4I4I4', st, cap - k, capa))
      done = true
    end
  end
  if not done then
    -- The head's k entries, newest first in exact feed order: its members
    -- are packed entries, so at one score Redis's byte order is id order.
    local r = redis.call('ZREVRANGEBYSCORE', head, '+inf', '(-inf')
    -- How many of the head's entries, its oldest, the merge takes.
    local empty, drop = false, k
    if capa > 0 and cap > 0 and math.min(nb + k, cap) <= capa then
      -- The merge at the top, the usual case of a full inbox's head past
      -- headMax or holding a late entry: the head's entries are merged with
      -- the ring's newest entries down to the first not newer than the
      -- head's oldest (the top: one entry when deliveries arrive in order, a
      -- few when some came late), and the result is written in place over
      -- the top and the slots before the ring's start (free ones first, then
      -- those of its oldest entries); an entry already in the top is not
      -- repeated. The head keeps its newest entries, up to reserve, when
      -- their scores are above every other entry's: so a delivery that comes
      -- a little late after this merge is still newer than the body's
      -- newest, and the next trims cut.
      local ks, kh, kl = struct.unpack('>I6I4I4', r[k])
      local top, T = ringTop(bkey, st, nb, capa, ks, kh, kl)
      local ts, th, tl = -1, 0, 0
      if T > 0 then ts, th, tl = at(top, 0) end
      local keep = 0
      if card <= 128 then
        keep = math.min(reserve, k - 1, cap - 1)
        while keep > 0 do
          local s1 = struct.unpack('>I6', r[keep])
          if s1 > ts and s1 ~= struct.unpack('>I6', r[keep + 1]) then break end
          keep = keep - 1
        end
      end
      local seg, dups
      if T == 0 or newer(ks, kh, kl, ts, th, tl) then
        -- Every head entry is newer than the top's newest: the segment is
        -- the head's entries keep+1 .. k as they are, written just before
        -- the top, which stays.
        seg, dups = table.concat(r, '', keep + 1, k), 0
      else
        -- Merge head entries keep+1 .. k with the top.
        local parts, i, j = {}, keep + 1, 0
        local s, h, l = struct.unpack('>I6I4I4', r[i])
        dups = 0
        while i <= k do
          if j < T and newer(ts, th, tl, s, h, l) then
            local j0 = j
            repeat
              j = j + 1
              if j < T then ts, th, tl = at(top, j) end
            until j >= T or not newer(ts, th, tl, s, h, l)
            parts[#parts + 1] = string.sub(top, j0 * W + 1, j * W)
          else
            if j < T and ts == s and th == h and tl == l then
              dups = dups + 1
            else
              parts[#parts + 1] = r[i]
            end
            i = i + 1
            if i <= k then s, h, l = struct.unpack('>I6I4I4', r[i]) end
          end
        end
        if j < T then parts[#parts + 1] = string.sub(top, j * W + 1) end
        seg = table.concat(parts)
      end
      -- The body now holds its nb entries and the m new ones, cut so that
      -- with the head's keep it holds cap; the segment ends where the top
      -- did (or, when it holds head entries alone, where the top starts), so
      -- the entries below stay in their slots.
      local m = k - keep - dups
      local nn = math.min(nb + m, cap - keep)
      local ns = (st - m) % capa
      if #seg > nn * W then seg = string.sub(seg, 1, nn * W) end
      ringWrite(bkey, capa, ns, seg)
      redis.call('SETRANGE', bkey, 0, struct.pack('>I4I4I4', ns, nn, capa))
      removed = nb + m - nn
      drop = k - keep
    else
      -- The general merge: every head entry merged into the whole body (one
      -- GET), cut to cap and written back with one SET.
      local body = linear(bkey, st, nb, capa)
      local parts, pos, dups = {}, 0, 0
      for i = 1, k do
        local hs, hh, hl = struct.unpack('>I6I4I4', r[i])
        local j = pos
        if j < nb then
          local s, h, l = at(body, j)
          if newer(s, h, l, hs, hh, hl) then j = first(body, j + 1, nb, hs, hh, hl) end
        end
        if j > pos then parts[#parts + 1] = string.sub(body, pos * W + 1, j * W) end
        pos = j
        local dup = false
        if j < nb then
          local s, h, l = at(body, j)
          dup = s == hs and h == hh and l == hl
        end
        if dup then dups = dups + 1 else parts[#parts + 1] = r[i] end
      end
      -- The rest of the body, cut so that the whole holds at most cap entries.
      local len = 0
      for _, p in ipairs(parts) do len = len + #p end
      local keep = math.max(math.min(nb - pos, cap - len / W), 0)
      if keep > 0 then parts[#parts + 1] = string.sub(body, pos * W + 1, (pos + keep) * W) end
      local nbody = table.concat(parts)
      if #nbody > cap * W then nbody = string.sub(nbody, 1, cap * W) end
      removed = k - dups + nb - #nbody / W
      empty = #nbody == 0
      if empty then
        if capa > 0 then redis.call('DEL', bkey) end
      elseif k > 0 or #nbody ~= #body or not marked then
        -- A body near the cap (within two heads) gets all cap slots, so
        -- that the merges that bring it to the cap are already at the top,
        -- in place.
        local n = #nbody / W
        if n + 2 * headMax >= cap then n = math.max(cap, n) end
        writeLinear(bkey, nbody, n)
      end
    end
    if k > 0 then
      if card > 128 then
        redis.call('DEL', head)
        if built then redis.call('ZADD', head, '-inf', '-') end
        marked = false
      else
        -- The merged entries are the head's lowest ranks after the sentinel
        -- and the marker (both at -inf): one ZREMRANGEBYRANK, one move of
        -- the listpack's bytes (ZREMRANGEBYSCORE deletes entry by entry).
        local off = 0
        if built then off = off + 1 end
        if marked then off = off + 1 end
        redis.call('ZREMRANGEBYRANK', head, off, off + drop - 1)
      end
    end
    if empty then
      if marked then redis.call('ZREM', head, '=') end
    elseif not marked then
      redis.call('ZADD', head, '-inf', '=')
    end
  end
end
`

// compactScript compacts one packed inbox (compactLua).
//
//	KEYS[1] head key (PackedHeadKey), KEYS[2] body key (BodyKey)
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
//	KEYS[1] head key, KEYS[2] body key, and for Restore KEYS[3], InboxKey:
//	        the inbox's key in releases before the head had a key of its own
//	        (its members decimal ids), deleted
//	ARGV[1] cap, ARGV[2] headMax: as compactScript's
//	ARGV[3], ARGV[4], ... score, member pairs to add (Restore adds the
//	        sentinel as one of them: -inf, "-")
//
// Returns the number of entries removed by the cut to cap.
var packedAddScript = goredis.NewScript(`
local head, bkey, cap, headMax = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
if KEYS[3] then redis.call('DEL', KEYS[3]) end
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
//	ARGV[1] the member (the packed entry, so also the triple the body is
//	        searched for)
//
// Returns 1 if the body held the entry, else 0.
var packedRemoveScript = goredis.NewScript(packedLua + `
redis.call('ZREM', KEYS[1], ARGV[1])
if not redis.call('ZSCORE', KEYS[1], '=') then return 0 end
local st, nb, capa, found = header(KEYS[2])
if nb == 0 then return 0 end
local s, h, l = struct.unpack('>I6I4I4', ARGV[1])
local j = ringFirst(KEYS[2], st, nb, capa, s, h, l)
if j >= nb then return 0 end
local es, eh, el = ringAt(KEYS[2], st, capa, j)
if es ~= s or eh ~= h or el ~= l then return 0 end
if nb == 1 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], '=')
else
  local body = linear(KEYS[2], st, nb, capa)
  writeLinear(KEYS[2], string.sub(body, 1, j * W) .. string.sub(body, (j + 1) * W + 1), capa)
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
// a body). Otherwise {head, body}: head the head's members (packed entries)
// with score <= max, newest first in exact feed order, the first n and,
// when before is given, as many more as the head holds at max (those the
// bound may exclude); body the packed bytes of the first n admitted entries
// of the body (binary search for the bound).
var packedPageScript = goredis.NewScript(packedLua + `
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then return false end
local n = tonumber(ARGV[2])
local slice = ''
if redis.call('ZSCORE', KEYS[1], '=') then
  local st, nb, capa, found = header(KEYS[2])
  if not found then return false end
  if ARGV[5] ~= '' then
    local j = ringFirst(KEYS[2], st, nb, capa, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
    slice = ringSlice(KEYS[2], st, nb, capa, j, n)
  end
end
if ARGV[4] ~= '' then n = n + redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1]) end
return {redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '(-inf', 'LIMIT', 0, n), slice}
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

// deliverPacked is Deliver on a packed inbox: a ZADD to each head, and on
// the deliveries trimsOn picks, deliverCompactScript instead (the ZADD and
// the compaction in one call).
func (ib *Inbox) deliverPacked(ctx context.Context, e feed.Entry, userIDs []int64) error {
	if err := checkPackable(e); err != nil {
		return err
	}
	z := goredis.Z{Score: float64(e.Score), Member: packedMember(e)}
	args := []any{e.Score, z.Member, ib.cap, ib.headMaxArg()}
	var compacts []scriptCall
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			if !trimsOn(e.PostID, u) {
				p.ZAdd(ctx, ib.key(u), z)
				continue
			}
			c := scriptCall{keys: ib.keys(u), args: args}
			c.cmd = deliverCompactScript.EvalSha(ctx, p, c.keys, c.args...)
			compacts = append(compacts, c)
		}
		return nil
	})
	return retryNoScript(ctx, ib.rdb, deliverCompactScript, cmds, err, compacts)
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
