package redis

import goredis "github.com/redis/go-redis/v9"

// The scripts of the deliveries that trimsOn picks. Such a delivery is one
// command, the script, which adds the entry itself, rather than a ZADD and
// then the script: one command less in a pipeline for one delivery in
// trimEvery, and, on a packed inbox, no more than three cheap calls when
// there is nothing to compact (a head below headMax and no body: every
// inbox that is new or small), before the helpers of packedLua are even
// defined. BENCHMARKS.md "Fan-out on the wire" has what each cost the
// server.

// deliverTrimScript delivers one entry to a sorted-set inbox and trims it
// exactly (trimLua).
//
//	KEYS[1] inbox key
//	ARGV[1] score, ARGV[2] member: the entry (as ZADD takes them)
//	ARGV[3] cap: how many entries to keep (>= 0)
//
// Returns the number of entries removed.
var deliverTrimScript = goredis.NewScript(`
local key, cap = KEYS[1], tonumber(ARGV[3])
redis.call('ZADD', key, ARGV[1], ARGV[2])
` + trimLua + `
return removed
`)

// deliverCompactScript delivers one entry to a packed inbox's head and then
// compacts the inbox (compactLua), unless there is nothing to compact: a
// head of at most min(headMax, cap) members (sentinel included) without the
// body marker has no body (nb = 0), so compactLua would neither merge nor
// cut.
//
//	KEYS[1] head key (PackedHeadKey), KEYS[2] body key (BodyKey)
//	ARGV[1] score, ARGV[2] member: the entry (as ZADD takes them)
//	ARGV[3] cap, ARGV[4] headMax: as compactScript's
//
// Returns the number of entries removed by the cut to cap.
var deliverCompactScript = goredis.NewScript(`
local head, bkey, cap, headMax = KEYS[1], KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZADD', head, ARGV[1], ARGV[2])
local n = redis.call('ZCARD', head)
if n <= headMax and n <= cap and not redis.call('ZSCORE', head, '=') then
  return 0
end
` + compactLua + `
return removed
`)
