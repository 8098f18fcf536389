package redis

import goredis "github.com/redis/go-redis/v9"

// The packed layout's Lua: the helpers every packed script shares
// (packedLua), the compaction (compactLua), and the scripts that packed.go
// calls.

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

// packedRemoveEntriesScript removes many entries from one packed inbox,
// from its head and its body, in one call: the body is read once, the
// removed entries cut out in one pass, and written back once (whatever
// their number), so an unfollow costs one call per inbox.
//
//	KEYS[1] head key, KEYS[2] body key
//	ARGV[1], ARGV[2], ... the members (packed entries) to remove
//
// Returns how many the body held.
var packedRemoveEntriesScript = goredis.NewScript(packedLua + `
for i = 1, #ARGV, 1000 do
  redis.call('ZREM', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if not redis.call('ZSCORE', KEYS[1], '=') then return 0 end
local st, nb, capa, found = header(KEYS[2])
if nb == 0 then return 0 end
local drop = {}
for i = 1, #ARGV do drop[ARGV[i]] = true end
local body = linear(KEYS[2], st, nb, capa)
-- Packed entries compare as bytes: Lua's string equality.
local parts, from, removed = {}, 1, 0
for j = 0, nb - 1 do
  if drop[string.sub(body, j * W + 1, (j + 1) * W)] then
    if j * W + 1 > from then parts[#parts + 1] = string.sub(body, from, j * W) end
    from = (j + 1) * W + 1
    removed = removed + 1
  end
end
if removed == 0 then return 0 end
parts[#parts + 1] = string.sub(body, from)
local rest = table.concat(parts)
if #rest == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], '=')
else
  writeLinear(KEYS[2], rest, capa)
end
return removed
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
