package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// AuthStore is feed.AuthStore on Redis: one hash per login code and one per
// session, removed by Redis itself when they are no longer needed (PEXPIRE).
//
// Every decision follows the clock the caller passes (now), as the SQLite
// store does, so the logical times (sent, expires) are kept in the hashes and
// compared in the scripts. The native expiry is only garbage collection: it
// is set, relative to the server's clock, a little after the logical time
// when the key can no longer matter.
type AuthStore struct {
	rdb    goredis.UniversalClient
	prefix string
}

var _ feed.AuthStore = (*AuthStore)(nil)

// NewAuthStore returns an AuthStore on rdb whose keys start with prefix.
func NewAuthStore(rdb goredis.UniversalClient, prefix string) *AuthStore {
	return &AuthStore{rdb: rdb, prefix: prefix}
}

// gcGrace is how long a key outlives the logical time after which it can no
// longer matter: room for clock differences between feedd processes and the
// Redis server.
const gcGrace = time.Minute

// saveCodeScript stores a new login code unless the last one was sent less
// than resendAfter ago (by the caller's clock).
//
//	KEYS[1] code key
//	ARGV[1] code hash
//	ARGV[2] now (ms)
//	ARGV[3] expires-at (ms)
//	ARGV[4] resendAfter (ms)
//	ARGV[5] time to live of the key (ms): garbage collection
//
// Returns 1 when stored, 0 when refused (nothing changed).
var saveCodeScript = goredis.NewScript(`
local sent = redis.call('HGET', KEYS[1], 'sent')
if sent and tonumber(ARGV[2]) - tonumber(sent) < tonumber(ARGV[4]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'sent', ARGV[2], 'expires', ARGV[3], 'tries', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// consumeCodeScript checks a login code against the live one.
//
//	KEYS[1] code key
//	ARGV[1] code hash
//	ARGV[2] now (ms)
//	ARGV[3] maxTries
//
// Returns 1 when it matched (the code is deleted); 0 when there is no live
// code (none, expired by now, or burned by maxTries wrong tries); 2 when it
// is wrong (the try is counted).
var consumeCodeScript = goredis.NewScript(`
local c = redis.call('HMGET', KEYS[1], 'hash', 'expires', 'tries')
if not c[1] or tonumber(ARGV[2]) >= tonumber(c[2]) or tonumber(c[3]) >= tonumber(ARGV[3]) then
  return 0
end
if c[1] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HINCRBY', KEYS[1], 'tries', 1)
return 2
`)

// sessionScript reads a session and slides its expiry.
//
//	KEYS[1] session key
//	ARGV[1] now (ms)
//	ARGV[2] new expires-at: now + ttl (ms)
//	ARGV[3] slack (ms): extend only when that moves the expiry this much
//	ARGV[4] time to live of the key after an extension (ms): garbage collection
//
// Returns the user id, or nil when there is no live session.
var sessionScript = goredis.NewScript(`
local s = redis.call('HMGET', KEYS[1], 'user', 'expires')
if not s[1] or tonumber(s[2]) <= tonumber(ARGV[1]) then
  return false
end
if tonumber(ARGV[2]) - tonumber(s[2]) >= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'expires', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return s[1]
`)

// SaveCode implements feed.AuthStore: one call of saveCodeScript.
// ECONFLICT if the previous code was saved less than resendAfter ago.
func (s *AuthStore) SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error {
	// The key must outlive both the code and the resend window, as the
	// SQLite row does.
	gc := max(ttl, resendAfter) + gcGrace
	ok, err := saveCodeScript.Run(ctx, s.rdb, []string{codeKey(s.prefix, phone)},
		codeHash, now.UnixMilli(), now.Add(ttl).UnixMilli(), resendAfter.Milliseconds(), gc.Milliseconds()).Int()
	if err != nil {
		return err
	} else if ok == 0 {
		return feed.Errorf(feed.ECONFLICT, "a code was sent less than %d seconds ago; wait before asking again", int(resendAfter.Seconds()))
	}
	return nil
}

// ConsumeCode implements feed.AuthStore: one call of consumeCodeScript.
// EINVALID when there is no live code or it does not match.
func (s *AuthStore) ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error {
	res, err := consumeCodeScript.Run(ctx, s.rdb, []string{codeKey(s.prefix, phone)}, codeHash, now.UnixMilli(), maxTries).Int()
	switch {
	case err != nil:
		return err
	case res == 0:
		return feed.Errorf(feed.EINVALID, "the code has expired or was not requested; ask for a new code")
	case res == 2:
		return feed.Errorf(feed.EINVALID, "the code is wrong")
	}
	return nil
}

// CreateSession implements feed.AuthStore: one MULTI/EXEC on the session's
// key. The key is garbage-collected gcGrace after expires by the server's
// clock, and never sooner than gcGrace from now.
func (s *AuthStore) CreateSession(ctx context.Context, tokenHash string, userID int64, expires time.Time) error {
	key := sessionKey(s.prefix, tokenHash)
	gc := max(time.Until(expires), 0) + gcGrace
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, "user", userID, "expires", expires.UnixMilli())
		p.PExpire(ctx, key, gc)
		return nil
	})
	return err
}

// sessionSlack is how stale an expiry may get before a read extends it: a
// session is written at most once a minute, not on every request (as in the
// SQLite store).
const sessionSlack = time.Minute

// Session implements feed.AuthStore: one call of sessionScript, which
// returns the user of a live session and slides its expiry to now+ttl.
// EUNAUTHORIZED when there is no live session.
func (s *AuthStore) Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error) {
	id, err := sessionScript.Run(ctx, s.rdb, []string{sessionKey(s.prefix, tokenHash)},
		now.UnixMilli(), now.Add(ttl).UnixMilli(), sessionSlack.Milliseconds(), (ttl + gcGrace).Milliseconds()).Text()
	if errors.Is(err, goredis.Nil) {
		return 0, feed.Errorf(feed.EUNAUTHORIZED, "login required")
	} else if err != nil {
		return 0, err
	}
	return strconv.ParseInt(id, 10, 64)
}

// DeleteSession implements feed.AuthStore. Idempotent.
func (s *AuthStore) DeleteSession(ctx context.Context, tokenHash string) error {
	return s.rdb.Del(ctx, sessionKey(s.prefix, tokenHash)).Err()
}
