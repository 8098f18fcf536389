package redis

import goredis "github.com/redis/go-redis/v9"

// The script of the deliveries that trimsOn picks on a sorted-set inbox.
// Such a delivery is one command, the script, which adds the entry itself,
// rather than a ZADD and then the script: one command less in a pipeline
// for one delivery in trimEvery. (On a packed inbox such a delivery is a
// ZADD and a probe instead, compactProbe.) BENCHMARKS.md "Fan-out" has
// what each cost the server.

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

// compactProbe is what a delivery that trimsOn picks asks of a packed
// inbox after its ZADD, with two plain commands instead of a script: the
// head's size (ZCARD) and whether the inbox has a body (ZSCORE of
// bodyMarker). A head of at most min(headMax, cap) members (sentinel
// included) without the body marker has no body, so compactLua would
// neither merge nor cut: nothing to do, the answer for every new or small
// inbox. Only the inboxes for which compactDue says otherwise get a
// compactScript call, in a second pipeline. The probe costs Redis a
// fraction of what a script making the same three calls costs (INFO
// commandstats under feedd bench fanout; BENCHMARKS.md, "Fan-out").
type compactProbe struct {
	card   int64 // ZCARD of the head
	marked bool  // the head holds bodyMarker
}

// compactDue reports whether the probed inbox needs compactScript, with
// cap and headMax as compactScript takes them.
func (p compactProbe) compactDue(cap, headMax int) bool {
	return p.marked || p.card > int64(headMax) || p.card > int64(cap)
}
