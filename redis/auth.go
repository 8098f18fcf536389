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
//
// With Durable set (the wiring sets it to the SQL store), Redis is a cache in
// front of the source of truth: sessions are written to both, a session
// missing from Redis (flushed, evicted, a restart without persistence) is
// found in Durable and cached again, the durable copy's expiry is slid at
// most every durableSlack, and when Redis is unreachable every call falls
// through to Durable. So losing Redis logs nobody out and does not stop
// logins.
type AuthStore struct {
	rdb    goredis.UniversalClient
	prefix string

	Durable feed.AuthStore
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

// saveCodeScript stores a new login code unless the last one (used, burned
// or not) was sent less than resendAfter ago (by the caller's clock).
//
//	KEYS[1] code key
//	ARGV[1] code hash
//	ARGV[2] now (ms)
//	ARGV[3] expires-at (ms)
//	ARGV[4] resendAfter (ms)
//	ARGV[5] time to live of the key (ms): garbage collection
//
// Returns 0 when stored; when refused (nothing changed), the time left
// until a new code may be sent (ms, at least 1).
var saveCodeScript = goredis.NewScript(`
local sent = redis.call('HGET', KEYS[1], 'sent')
if sent and tonumber(ARGV[2]) - tonumber(sent) < tonumber(ARGV[4]) then
  return tonumber(ARGV[4]) - (tonumber(ARGV[2]) - tonumber(sent))
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'sent', ARGV[2], 'expires', ARGV[3], 'tries', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 0
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
// is wrong (the try is counted: the maxTries-th burns the code, whose key
// stays, so that its resend wait holds).
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
// Returns {user id, durable}: durable is the expiry last written to the
// durable store ("" when none); or nil when there is no live session.
var sessionScript = goredis.NewScript(`
local s = redis.call('HMGET', KEYS[1], 'user', 'expires', 'durable')
if not s[1] or tonumber(s[2]) <= tonumber(ARGV[1]) then
  return false
end
if tonumber(ARGV[2]) - tonumber(s[2]) >= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'expires', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return {s[1], s[3] or ''}
`)

// SaveCode implements feed.AuthStore: one call of saveCodeScript.
// ECONFLICT if the previous code was saved less than resendAfter ago.
func (s *AuthStore) SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error {
	// The key must outlive both the code and the resend window, as the
	// SQLite row does.
	gc := max(ttl, resendAfter) + gcGrace
	wait, err := saveCodeScript.Run(ctx, s.rdb, []string{CodeKey(s.prefix, phone)},
		codeHash, now.UnixMilli(), now.Add(ttl).UnixMilli(), resendAfter.Milliseconds(), gc.Milliseconds()).Int64()
	if err != nil {
		if s.Durable != nil && ctx.Err() == nil {
			return s.Durable.SaveCode(ctx, phone, codeHash, now, ttl, resendAfter)
		}
		return err
	} else if wait > 0 {
		return feed.ResendTooSoon(resendAfter, time.Duration(wait)*time.Millisecond)
	}
	return nil
}

// ConsumeCode implements feed.AuthStore: one call of consumeCodeScript.
// EINVALID when there is no live code or it does not match.
func (s *AuthStore) ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error {
	res, err := consumeCodeScript.Run(ctx, s.rdb, []string{CodeKey(s.prefix, phone)}, codeHash, now.UnixMilli(), maxTries).Int()
	switch {
	case err != nil:
		if s.Durable != nil && ctx.Err() == nil {
			return s.Durable.ConsumeCode(ctx, phone, codeHash, now, maxTries)
		}
		return err
	case res == 0:
		if s.Durable != nil {
			// A code saved while Redis was unreachable lives in Durable.
			return s.Durable.ConsumeCode(ctx, phone, codeHash, now, maxTries)
		}
		return feed.Errorf(feed.EINVALID, "the code has expired or was not requested; ask for a new code")
	case res == 2:
		return feed.Errorf(feed.EINVALID, "the code is wrong")
	}
	return nil
}

// CreateSession implements feed.AuthStore: one MULTI/EXEC on the session's
// key (after the durable store's insert, when there is one). The key is
// garbage-collected gcGrace after expires by the server's clock, and never
// sooner than gcGrace from now.
func (s *AuthStore) CreateSession(ctx context.Context, tokenHash string, userID int64, now, expires time.Time) error {
	if s.Durable != nil {
		if err := s.Durable.CreateSession(ctx, tokenHash, userID, now, expires); err != nil {
			return err
		}
	}
	err := s.cacheSession(ctx, tokenHash, userID, expires)
	if s.Durable != nil {
		return nil // the durable copy is enough; the cache fills on the next read
	}
	return err
}

func (s *AuthStore) cacheSession(ctx context.Context, tokenHash string, userID int64, expires time.Time) error {
	key := SessionKey(s.prefix, tokenHash)
	gc := max(time.Until(expires), 0) + gcGrace
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, "user", userID, "expires", expires.UnixMilli(), "durable", expires.UnixMilli())
		p.PExpire(ctx, key, gc)
		return nil
	})
	return err
}

// sessionSlack is how stale an expiry may get before a read extends it: a
// session is written at most once a minute, not on every request (as in the
// SQLite store).
const sessionSlack = time.Minute

// durableSlack is how stale the durable copy's expiry may get: it is
// extended at most every five minutes, so a user active in the last
// ttl - durableSlack stays logged in through a Redis outage.
const durableSlack = 5 * time.Minute

// Session implements feed.AuthStore: one call of sessionScript, which
// returns the user of a live session and slides its expiry to now+ttl.
// EUNAUTHORIZED when there is no live session.
func (s *AuthStore) Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error) {
	res, err := sessionScript.Run(ctx, s.rdb, []string{SessionKey(s.prefix, tokenHash)}, sessionArgs(now, ttl)...).StringSlice()
	switch {
	case errors.Is(err, goredis.Nil) && s.Durable != nil:
		// Not in Redis: logged out, expired, or lost from the cache.
		id, err := s.Durable.Session(ctx, tokenHash, now, ttl)
		if err == nil {
			s.cacheSession(ctx, tokenHash, id, now.Add(ttl))
		}
		return id, err
	case err != nil && !errors.Is(err, goredis.Nil) && s.Durable != nil && ctx.Err() == nil:
		return s.Durable.Session(ctx, tokenHash, now, ttl) // Redis unreachable
	}
	return s.sessionReply(ctx, tokenHash, now, ttl, res, err)
}

// sessionArgs are sessionScript's ARGV for a read at now sliding to now+ttl.
func sessionArgs(now time.Time, ttl time.Duration) []any {
	return []any{now.UnixMilli(), now.Add(ttl).UnixMilli(), sessionSlack.Milliseconds(), (ttl + gcGrace).Milliseconds()}
}

// errNoSession is the refusal of a token without a live session.
var errNoSession = feed.Errorf(feed.EUNAUTHORIZED, "login required")

// sessionReply finishes a read of sessionScript whose reply (or error) is
// res: the user id of a live session (EUNAUTHORIZED when there is none in
// Redis), after extending the durable copy's expiry when it is due.
func (s *AuthStore) sessionReply(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration, res []string, err error) (int64, error) {
	switch {
	case errors.Is(err, goredis.Nil):
		return 0, errNoSession
	case err != nil:
		return 0, err
	case len(res) != 2:
		return 0, errors.New("redis: unexpected session reply")
	}
	id, err := strconv.ParseInt(res[0], 10, 64)
	if err != nil {
		return 0, err
	}
	if s.Durable != nil {
		durable, _ := strconv.ParseInt(res[1], 10, 64)
		if next := now.Add(ttl).UnixMilli(); next-durable >= durableSlack.Milliseconds() {
			if _, err := s.Durable.Session(ctx, tokenHash, now, ttl); err != nil {
				if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
					s.rdb.Del(ctx, SessionKey(s.prefix, tokenHash)) // ended elsewhere
				}
				return 0, err
			}
			s.rdb.HSet(ctx, SessionKey(s.prefix, tokenHash), "durable", next)
		}
	}
	return id, nil
}

// DeleteSession implements feed.AuthStore. Idempotent.
func (s *AuthStore) DeleteSession(ctx context.Context, tokenHash string) error {
	if s.Durable != nil {
		if err := s.Durable.DeleteSession(ctx, tokenHash); err != nil {
			return err
		}
	}
	// If Redis is unreachable the cached copy outlives the logout until the
	// next durable check (durableSlack) finds the session gone; report it.
	return s.rdb.Del(ctx, SessionKey(s.prefix, tokenHash)).Err()
}

// sessionLister is what a durable store has besides feed.AuthStore to end
// a user's sessions in the cache too: the token hashes of their sessions
// (sqlite.DB and postgres.DB).
type sessionLister interface {
	SessionHashes(ctx context.Context, userID int64) ([]string, error)
}

// EndSessions implements feed.AuthStore: the user's sessions are found in
// the durable store, their keys deleted here, then the durable rows.
// Keys first, so that a failure leaves the rows to find them by again.
// Without a durable store that lists sessions, a user's sessions cannot
// be found (they are keyed by token) and EndSessions fails.
func (s *AuthStore) EndSessions(ctx context.Context, userID int64) error {
	l, ok := s.Durable.(sessionLister)
	if !ok {
		return errors.New("redis: ending a user's sessions needs a durable store that lists them")
	}
	hashes, err := l.SessionHashes(ctx, userID)
	if err != nil {
		return err
	}
	if len(hashes) > 0 {
		keys := make([]string, len(hashes))
		for i, h := range hashes {
			keys[i] = SessionKey(s.prefix, h)
		}
		// One DEL per key: a Cluster spreads them over nodes.
		if _, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return s.Durable.EndSessions(ctx, userID)
}
