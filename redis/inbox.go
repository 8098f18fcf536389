package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// sentinel is the member that marks an inbox as built. It can never be an
// entry's member (a post id's decimal digits, or on a packed head a 14-byte
// packed entry), and its score -inf sorts it below every entry,
// so every read of entries uses the score range (-inf, max] and never sees it,
// and every trim by score keeps it.
const sentinel = "-"

// InboxOptions configure an Inbox.
type InboxOptions struct {
	// Prefix starts every key (see the package documentation); "" for none.
	Prefix string
	// Cap is how many entries each inbox keeps: Add, Restore and a share of
	// the deliveries trim an inbox exactly to Cap, so it holds Cap entries
	// plus those delivered since its last trim (see Deliver). 0 means
	// feed.DefaultInboxCap.
	Cap int
	// Layout is how inboxes are kept: "" means LayoutPacked.
	Layout Layout
	// HeadMax is, for LayoutPacked, how many entries an inbox's head gathers
	// before it is compacted into its body while the inbox is below its cap:
	// 0 means 32; a negative value compacts at every amortised trim (tests
	// use it to exercise the body).
	HeadMax int
}

// Inbox is feed.Inbox on Redis: one sorted set per user, score = the post's
// time in ms, member = the decimal post id, plus a sentinel member that tells
// a built inbox from a lost one (LayoutSortedSet; LayoutPacked, the default,
// is described there).
//
// Redis orders equal scores by member bytes ("9" after "10"); feed order is
// by numeric post id. Page and Trim therefore read whole tie groups and
// order them numerically, so their results equal the SQLite inbox's exactly.
// (A packed head's members are packed entries, whose byte order is feed
// order.)
type Inbox struct {
	rdb    goredis.UniversalClient
	prefix string
	cap    int
	keyOf  func(prefix string, id int64) string
	layout Layout
	// headMax is InboxOptions.HeadMax.
	headMax int
}

var _ feed.Inbox = (*Inbox)(nil)

// NewInbox returns an Inbox on rdb.
func NewInbox(rdb goredis.UniversalClient, opts InboxOptions) *Inbox {
	if opts.Cap <= 0 {
		opts.Cap = feed.DefaultInboxCap
	}
	ib := &Inbox{rdb: rdb, prefix: opts.Prefix, cap: opts.Cap, keyOf: InboxKey, layout: cmp.Or(opts.Layout, LayoutPacked), headMax: opts.HeadMax}
	if ib.layout == LayoutPacked {
		ib.keyOf = PackedHeadKey
	}
	return ib
}

func (ib *Inbox) key(userID int64) string { return ib.keyOf(ib.prefix, userID) }

// HeadKey is the sorted set that takes userID's deliveries: InboxKey, or on
// a packed inbox its head (PackedHeadKey). For tests and benchmarks that
// look into Redis.
func (ib *Inbox) HeadKey(userID int64) string { return ib.key(userID) }

// HeadMember is e's member in HeadKey: the decimal post id, or on a packed
// inbox the packed entry.
func (ib *Inbox) HeadMember(e feed.Entry) string {
	if ib.layout == LayoutPacked {
		return packedMember(e)
	}
	return member(e.PostID)
}

func member(postID int64) string { return strconv.FormatInt(postID, 10) }

// trimLua is the body shared by the scripts that trim an inbox exactly: it
// keeps the newest `cap` entries in feed order (score descending, then post id
// descending numerically) and the sentinel, and sets `removed`. It expects
// the locals `key` and `cap`.
//
// It reads the last entry to keep and the first to drop (reverse ranks cap-1
// and cap; the sentinel, at -inf, is always last). When their scores differ,
// as they nearly always do, the cut falls between two tie groups and one
// ZREMRANGEBYSCORE does it. Otherwise ranks would cut the tie group by
// member bytes ("9" after "10"), so it drops every lower score, sorts the
// group numerically and drops the group's tail. Post ids are compared as
// decimal strings, by length then bytes: no conversion to a Lua number,
// which is a double.
const trimLua = `
local removed = 0
if cap <= 0 then
  removed = redis.call('ZREMRANGEBYSCORE', key, '(-inf', '+inf')
else
  local r = redis.call('ZREVRANGE', key, cap - 1, cap, 'WITHSCORES')
  if #r == 4 and r[4] ~= '-inf' then
    local s = r[4]
    if r[2] ~= s then
      removed = redis.call('ZREMRANGEBYSCORE', key, '(-inf', s)
    else
      local above = redis.call('ZCOUNT', key, '(' .. s, '+inf')
      removed = redis.call('ZREMRANGEBYSCORE', key, '(-inf', '(' .. s)
      local group = redis.call('ZRANGEBYSCORE', key, s, s)
      table.sort(group, function(a, b)
        if #a ~= #b then return #a > #b end
        return a > b
      end)
      local drop = {}
      for i = cap - above + 1, #group do
        drop[#drop + 1] = group[i]
        if #drop == 1000 then
          removed = removed + redis.call('ZREM', key, unpack(drop))
          drop = {}
        end
      end
      if #drop > 0 then
        removed = removed + redis.call('ZREM', key, unpack(drop))
      end
    end
  end
end
`

// trimScript trims one inbox exactly, keeping its sentinel.
//
//	KEYS[1] inbox key
//	ARGV[1] cap: how many entries to keep (>= 0)
//
// Returns the number of entries removed.
var trimScript = goredis.NewScript(`
local key, cap = KEYS[1], tonumber(ARGV[1])
` + trimLua + `
return removed
`)

// addScript adds entries to one inbox and, when it then holds more than a
// high-water mark, trims it exactly to its cap.
//
//	KEYS[1] inbox key
//	ARGV[1] cap: how many entries to keep after a trim
//	ARGV[2] high-water mark: trim only when ZCARD (sentinel included) exceeds it
//	ARGV[3], ARGV[4], ... score, member pairs to add (Restore adds the
//	        sentinel as one of them: -inf, "-")
//
// Returns the number of entries removed by the trim.
var addScript = goredis.NewScript(`
local key, cap = KEYS[1], tonumber(ARGV[1])
for i = 3, #ARGV, 1000 do
  redis.call('ZADD', key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if redis.call('ZCARD', key) <= tonumber(ARGV[2]) then return 0 end
` + trimLua + `
return removed
`)

// pageScript reads, in one round trip, what Page needs to build a page in
// numeric feed order.
//
//	KEYS[1] inbox key
//	ARGV[1] max: the highest score to return (inclusive)
//	ARGV[2] n: how many admitted entries to read (offset + limit)
//	ARGV[3] the sentinel member
//	ARGV[4] before: "" to admit the whole millisecond max, else a decimal
//	        post id: at score max only smaller ids are admitted (a keyset
//	        bound). The members it excludes are counted (numerically:
//	        length, then bytes) and that many more entries are read, so
//	        that n admitted ones remain.
//
// Returns nil when the sentinel is missing (the inbox is lost). Otherwise
// {head} or {head, group}: head is the flat member, score list of the first
// entries with score <= max in Redis order (sentinel excluded); group, sent
// only when head may have cut the tie group of its last score, lists every
// member with that score. The caller drops the excluded members.
var pageScript = goredis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then return false end
local n = tonumber(ARGV[2])
local before = ARGV[4]
if before ~= '' then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])) do
    if #m > #before or (#m == #before and m >= before) then n = n + 1 end
  end
end
local head = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '(-inf', 'WITHSCORES', 'LIMIT', 0, n)
if #head < 2 * n then return {head} end
local s = head[#head]
return {head, redis.call('ZRANGEBYSCORE', KEYS[1], s, s)}
`)

// beforeArg is pageScript's ARGV[4] for bound b.
func beforeArg(b feed.Bound) string {
	if b.BeforeID == 0 {
		return ""
	}
	return strconv.FormatInt(b.BeforeID, 10)
}

// Deliver implements feed.Inbox: the whole batch goes in one pipeline (on a
// Cluster, go-redis splits it into one pipeline per node).
//
// Cap scheme: a trim on every delivery would cost a command per inbox (and
// ZREMRANGEBYRANK would cut tie groups by member bytes). Instead each
// delivery is a plain ZADD, and about one delivery in trimEvery is instead
// deliverTrimScript, which adds the entry and trims the inbox exactly to
// Cap. Which deliveries
// trim is a hash of (post id, user id): deterministic, so a retried fan-out
// does the same, and spread, so one batch's trims are spread over the users
// and one inbox's trims over the posts it receives, whatever pattern the
// post ids follow. An inbox thus holds Cap entries plus those delivered since
// its last trim: about trimEvery on average, more than Cap+100 with
// probability (15/16)^100 < 0.2%. BenchmarkCapSchemes measures the Redis
// CPU per delivery into full inboxes of this scheme against ZADD alone
// (uncapped), a ZREMRANGEBYRANK on 1/16 of the deliveries (inexact on
// ties), one on every delivery, and a Lua script per delivery that adds
// and trims: this one costs about what ZADD alone does, the last two
// noticeably more (BENCHMARKS.md, "Micro-benchmarks").
//
// Delivering to a lost inbox writes the entry anyway: the rebuild that the
// next read triggers merges with it (Restore).
func (ib *Inbox) Deliver(ctx context.Context, e feed.Entry, userIDs []int64) (err error) {
	defer func() { err = storeError(err) }()
	if len(userIDs) == 0 {
		return nil
	}
	if ib.layout == LayoutPacked {
		return ib.deliverPacked(ctx, e, userIDs)
	}
	z := goredis.Z{Score: float64(e.Score), Member: member(e.PostID)}
	args := []any{e.Score, z.Member, ib.cap}
	var trims []scriptCall
	cmds, err := ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			key := ib.key(u)
			if !trimsOn(e.PostID, u) {
				p.ZAdd(ctx, key, z)
				continue
			}
			c := scriptCall{keys: []string{key}, args: args}
			c.cmd = deliverTrimScript.EvalSha(ctx, p, c.keys, c.args...)
			trims = append(trims, c)
		}
		return nil
	})
	return retryNoScript(ctx, ib.rdb, deliverTrimScript, cmds, err, trims)
}

// trimEvery is how many deliveries to an inbox there are per trim, on average.
const trimEvery = 16

// trimsOn reports whether delivering postID to userID also trims the inbox:
// true for about one (post, user) pair in trimEvery. The multiplications by
// odd constants (the Fibonacci hashing constant, and a murmur3 one) mix every
// bit of both ids into the top 4 bits, so ids allocated with a stride (say
// every 16th by one node) still trim one time in 16.
func trimsOn(postID, userID int64) bool {
	h := uint64(postID)*0x9E3779B97F4A7C15 ^ uint64(userID)*0xC2B2AE3D27D4EB4F
	return (h*0x9E3779B97F4A7C15)>>60 == 0
}

// Add implements feed.Inbox: one call of addScript, which trims the inbox
// exactly to Cap if it then holds more.
func (ib *Inbox) Add(ctx context.Context, userID int64, entries []feed.Entry) (err error) {
	defer func() { err = storeError(err) }()
	if len(entries) == 0 {
		return nil
	}
	if ib.layout == LayoutPacked {
		return ib.addPacked(ctx, userID, false, entries)
	}
	args := make([]any, 0, 2+2*len(entries))
	args = append(args, ib.cap, ib.cap)
	for _, e := range entries {
		args = append(args, e.Score, member(e.PostID))
	}
	return addScript.Run(ctx, ib.rdb, []string{ib.key(userID)}, args...).Err()
}

// Remove implements feed.Inbox: one pipelined ZREM per inbox.
func (ib *Inbox) Remove(ctx context.Context, e feed.Entry, userIDs []int64) (err error) {
	defer func() { err = storeError(err) }()
	if len(userIDs) == 0 {
		return nil
	}
	if ib.layout == LayoutPacked {
		return ib.removePacked(ctx, e, userIDs)
	}
	m := member(e.PostID)
	_, err = ib.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range userIDs {
			p.ZRem(ctx, ib.key(u), m)
		}
		return nil
	})
	return err
}

// Clear implements feed.Inbox: one DEL of the inbox's keys (the head and
// the body of a packed inbox, of one hash tag). The inbox then reads as
// lost, and a read would rebuild it.
func (ib *Inbox) Clear(ctx context.Context, userID int64) error {
	return storeError(ib.rdb.Del(ctx, ib.key(userID), BodyKey(ib.prefix, userID)).Err())
}

// RemoveEntries removes entries from userID's inbox in one command: a ZREM
// of them all, or on a packed inbox one packedRemoveEntriesScript call,
// which rewrites the body at most once. An unfollow (the followee's posts
// out of the follower's inbox) so costs one round trip whatever the number
// of posts. Absent entries are not an error.
func (ib *Inbox) RemoveEntries(ctx context.Context, userID int64, entries []feed.Entry) (err error) {
	defer func() { err = storeError(err) }()
	members := make([]any, 0, len(entries))
	for _, e := range entries {
		switch {
		case ib.layout != LayoutPacked:
			members = append(members, member(e.PostID))
		case checkPackable(e) == nil:
			// An entry that cannot be packed is in no packed inbox.
			members = append(members, packedMember(e))
		}
	}
	if len(members) == 0 {
		return nil
	}
	if ib.layout == LayoutPacked {
		return packedRemoveEntriesScript.Run(ctx, ib.rdb, ib.keys(userID), members...).Err()
	}
	return ib.rdb.ZRem(ctx, ib.key(userID), members...).Err()
}

// Trim implements feed.Inbox, exactly: the newest cap entries in feed order
// stay, ties cut by numeric post id. The sentinel stays too.
func (ib *Inbox) Trim(ctx context.Context, userID int64, cap int) (err error) {
	defer func() { err = storeError(err) }()
	if ib.layout == LayoutPacked {
		return ib.trimPacked(ctx, userID, cap)
	}
	return trimScript.Run(ctx, ib.rdb, []string{ib.key(userID)}, max(cap, 0)).Err()
}

// Restore implements feed.Inbox: it adds entries to userID's inbox together
// with the sentinel that marks it built, and trims it exactly to Cap if it
// then holds more; all in one call of addScript, so atomic. After Restore,
// Page no longer returns feed.ErrInboxLost for the inbox (until Redis loses
// it again). Entries delivered while the rebuild was computed are kept.
func (ib *Inbox) Restore(ctx context.Context, userID int64, entries []feed.Entry) (err error) {
	defer func() { err = storeError(err) }()
	if ib.layout == LayoutPacked {
		return ib.addPacked(ctx, userID, true, entries)
	}
	args := make([]any, 0, 4+2*len(entries))
	args = append(args, ib.cap, ib.cap, "-inf", sentinel)
	for _, e := range entries {
		args = append(args, e.Score, member(e.PostID))
	}
	return addScript.Run(ctx, ib.rdb, []string{ib.key(userID)}, args...).Err()
}

// Page implements feed.Inbox in one round trip (pageScript), and returns
// feed.ErrInboxLost when the inbox was never built (Restore) or was lost.
//
// Redis returns the first offset+limit entries ordered by score, then by
// member bytes; the last score's tie group may be cut at the wrong members.
// The script also returns that whole group, which replaces the cut one;
// sorted numerically, the entries are in feed order and the page is the
// slice [offset, offset+limit).
func (ib *Inbox) Page(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	if offset < 0 || limit <= 0 {
		return []feed.Entry{}, nil
	}
	script, keys, args := ib.pageCall(userID, b, offset+limit)
	res, err := script.Run(ctx, ib.rdb, keys, args...).Slice()
	return ib.pageReply(userID, b, offset, limit, res, err)
}

// pageCall is the script call that reads the first n entries of userID's
// inbox within b: pageScript, or packedPageScript on a packed inbox.
func (ib *Inbox) pageCall(userID int64, b feed.Bound, n int) (*goredis.Script, []string, []any) {
	if ib.layout == LayoutPacked {
		return packedPageScript, ib.keys(userID), append([]any{b.Max, n, sentinel, beforeArg(b)}, boundArgs(b)...)
	}
	return pageScript, []string{ib.key(userID)}, []any{b.Max, n, sentinel, beforeArg(b)}
}

// pageReply turns the reply (or error) of pageCall into Page's result.
func (ib *Inbox) pageReply(userID int64, b feed.Bound, offset, limit int, res []any, err error) ([]feed.Entry, error) {
	if errors.Is(err, goredis.Nil) {
		return nil, feed.ErrInboxLost
	} else if err != nil {
		return nil, err
	}
	var entries []feed.Entry
	if ib.layout == LayoutPacked {
		entries, err = packedPageEntries(res, b)
	} else {
		entries, err = parsePage(res, b)
	}
	if err != nil {
		return nil, fmt.Errorf("redis: page of inbox %d: %w", userID, err)
	}
	n := offset + limit
	if offset >= len(entries) {
		return []feed.Entry{}, nil
	}
	return entries[offset:min(n, len(entries))], nil
}

// parsePage turns a pageScript reply into the entries within b in feed
// order: the cut tie group of the last score is replaced by the whole group,
// all are sorted numerically, and those b excludes are dropped.
func parsePage(res []any, b feed.Bound) ([]feed.Entry, error) {
	head, ok := res[0].([]any)
	if !ok || len(head)%2 != 0 {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	entries := make([]feed.Entry, 0, len(head)/2)
	for i := 0; i < len(head); i += 2 {
		e, err := parseEntry(head[i], head[i+1])
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(res) > 1 && len(entries) > 0 {
		group, ok := res[1].([]any)
		if !ok {
			return nil, fmt.Errorf("unexpected reply %v", res)
		}
		last := entries[len(entries)-1].Score
		for len(entries) > 0 && entries[len(entries)-1].Score == last {
			entries = entries[:len(entries)-1]
		}
		for _, m := range group {
			e, err := parseEntry(m, nil)
			if err != nil {
				return nil, err
			}
			e.Score = last
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, feed.CompareEntries)
	return slices.DeleteFunc(entries, func(e feed.Entry) bool { return !b.Admits(e) }), nil
}

// parseEntry parses a member and (when score is not nil) a score of a reply.
// Post ids are parsed as integers, never through a float.
func parseEntry(m, score any) (feed.Entry, error) {
	ms, ok := m.(string)
	if !ok {
		return feed.Entry{}, fmt.Errorf("member %v is not a string", m)
	}
	id, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return feed.Entry{}, fmt.Errorf("member %q is not a post id", ms)
	}
	e := feed.Entry{PostID: id}
	if score != nil {
		ss, ok := score.(string)
		if !ok {
			return feed.Entry{}, fmt.Errorf("score %v is not a string", score)
		}
		f, err := strconv.ParseFloat(ss, 64)
		if err != nil {
			return feed.Entry{}, fmt.Errorf("score %q: %w", ss, err)
		}
		e.Score = int64(f)
	}
	return e, nil
}

// scriptCall is one call of a script in a pipeline.
type scriptCall struct {
	keys []string
	args []any
	cmd  *goredis.Cmd
}

// retryNoScript finishes a pipeline (its cmds and error) in which the calls
// ran script with EVALSHA. A server that does not have the script cached
// (after a restart, a failover, SCRIPT FLUSH, on a new node) answers
// NOSCRIPT: then the script is loaded (on every node of a Cluster) and those
// calls are sent again in one pipeline. The scripts run this way must be
// idempotent. An error answered to another command of the pipeline (say
// WRONGTYPE for one inbox) does not keep the NOSCRIPT calls from being
// sent again; it is returned after them.
func retryNoScript(ctx context.Context, rdb goredis.UniversalClient, script *goredis.Script, cmds []goredis.Cmder, err error, calls []scriptCall) error {
	if err == nil {
		return nil
	}
	var answered error
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !isNoScript(err) {
			if outageOf(err) {
				return err
			}
			answered = cmp.Or(answered, err)
		}
	}
	var retry []scriptCall
	for _, c := range calls {
		if isNoScript(c.cmd.Err()) {
			retry = append(retry, c)
		}
	}
	if len(retry) == 0 {
		return err
	}
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return err
	}
	_, err = rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, c := range retry {
			script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	return cmp.Or(err, answered)
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT"))
}
