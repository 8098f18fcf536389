package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// seedKey is the key of the tutorial's inbox of userID ("feed:" + userId,
// the seed design's own layout, not feedd's), under the benchmark's prefix.
func seedKey(prefix string, userID int64) string {
	return prefix + "seed:feed:" + strconv.FormatInt(userID, 10)
}

// limitKey is the key the limit run writes for userID: an inbox key of
// feedd's layout, under a prefix of the run's own.
func limitKey(prefix string, userID int64) string {
	return redis.InboxKey(prefix+"limit:", userID)
}

// seedDeliverRedis is the tutorial's fan-out, faithfully: for each follower,
// one ZADD of the post into that follower's inbox, waiting for its reply
// before the next, on one connection (Spring's StringRedisTemplate in a
// for loop inside the publish request).
func seedDeliverRedis(ctx context.Context, rdb *goredis.Client, prefix string, e feed.Entry, followers []int64, progress func(int)) error {
	conn := rdb.Conn()
	defer conn.Close()
	member := strconv.FormatInt(e.PostID, 10)
	for i, u := range followers {
		if err := conn.ZAdd(ctx, seedKey(prefix, u), goredis.Z{Score: float64(e.Score), Member: member}).Err(); err != nil {
			return err
		}
		if i%4096 == 0 {
			progress(i)
		}
	}
	return nil
}

// Limit settings: "the same N ZADDs pipelined in large batches over several
// connections". Four connections with pipelines of 1000 take as many ZADDs
// per second from Redis 7.0 on the 2-core machine of BENCHMARKS.md as
// redis-benchmark's best settings do (4 connections, depth 256-1000; the
// redis-benchmark figures are in BENCHMARKS.md).
const (
	limitConns = 4
	limitDepth = 1000
)

// limitDeliverRedis writes the n ZADDs of one post into the inboxes of
// first..first+n-1 in pipelines of limitDepth over limitConns connections,
// with nothing else: what this Redis takes. The commands are written in
// RESP straight to the sockets, as redis-benchmark does, so no client
// library's cost (the benchmark shares the machine with Redis) lowers the
// ceiling that feedd is compared with.
func limitDeliverRedis(ctx context.Context, rdb *goredis.Client, prefix string, e feed.Entry, first int64, n int) error {
	opts := rdb.Options()
	conns := make([]*respConn, limitConns)
	for i := range conns {
		c, err := dialRESP(ctx, opts)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	score := strconv.FormatInt(e.Score, 10)
	member := strconv.FormatInt(e.PostID, 10)
	batches := (n + limitDepth - 1) / limitDepth
	var next atomic.Int64
	return parallel(ctx, limitConns, limitConns, func(ctx context.Context, w int) error {
		c := conns[w]
		buf := make([]byte, 0, limitDepth*80)
		for {
			b := int(next.Add(1) - 1)
			if b >= batches {
				return nil
			}
			lo := first + int64(b*limitDepth)
			hi := min(lo+limitDepth, first+int64(n))
			buf = buf[:0]
			for u := lo; u < hi; u++ {
				buf = appendCommand(buf, "ZADD", limitKey(prefix, u), score, member)
			}
			if err := c.roundTrip(buf, int(hi-lo)); err != nil {
				return err
			}
		}
	})
}

// respConn is a bare RESP connection to Redis.
type respConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRESP(ctx context.Context, opts *goredis.Options) (*respConn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	var conn net.Conn
	var err error
	if opts.TLSConfig != nil {
		conn, err = (&tls.Dialer{NetDialer: d, Config: opts.TLSConfig}).DialContext(ctx, opts.Network, opts.Addr)
	} else {
		conn, err = d.DialContext(ctx, opts.Network, opts.Addr)
	}
	if err != nil {
		return nil, err
	}
	c := &respConn{Conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	var hello []byte
	k := 0
	if opts.Password != "" {
		if opts.Username != "" {
			hello = appendCommand(hello, "AUTH", opts.Username, opts.Password)
		} else {
			hello = appendCommand(hello, "AUTH", opts.Password)
		}
		k++
	}
	if opts.DB != 0 {
		hello = appendCommand(hello, "SELECT", strconv.Itoa(opts.DB))
		k++
	}
	if k > 0 {
		if err := c.roundTrip(hello, k); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

// roundTrip writes buf (k commands) and reads k simple replies.
func (c *respConn) roundTrip(buf []byte, k int) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(buf); err != nil {
		return err
	}
	for range k {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) > 0 && line[0] == '-' {
			return fmt.Errorf("redis: %s", strings.TrimSpace(string(line[1:])))
		}
	}
	return nil
}

// appendCommand appends one command in RESP.
func appendCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, "\r\n"...)
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, "\r\n"...)
		buf = append(buf, a...)
		buf = append(buf, "\r\n"...)
	}
	return buf
}

// unlinkKeys deletes the keys key(u) of ids first..first+n-1, pipelined.
func unlinkKeys(ctx context.Context, rdb *goredis.Client, first int64, n int, key func(int64) string) error {
	const batch = 5000
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		keys := make([]string, 0, hi-lo)
		for u := first + int64(lo); u < first+int64(hi); u++ {
			keys = append(keys, key(u))
		}
		if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// redisMissing returns the users among first..first+n-1 whose inbox key(u)
// does not hold e, checked with pipelined ZSCOREs.
func redisMissing(ctx context.Context, rdb *goredis.Client, key func(int64) string, member string, e feed.Entry, ids []int64) ([]int64, error) {
	var missing []int64
	const batch = 10_000
	for lo := 0; lo < len(ids); lo += batch {
		part := ids[lo:min(lo+batch, len(ids))]
		cmds, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, u := range part {
				p.ZScore(ctx, key(u), member)
			}
			return nil
		})
		if err != nil && err != goredis.Nil {
			return nil, err
		}
		for i, c := range cmds {
			s, err := c.(*goredis.FloatCmd).Result()
			if err == goredis.Nil || (err == nil && int64(s) != e.Score) {
				missing = append(missing, part[i])
			} else if err != nil {
				return nil, err
			}
		}
	}
	return missing, nil
}

// DeleteKeys deletes every key that starts with prefix (SCAN, then UNLINK)
// and returns how many it deleted. The prefix must be the benchmark's own.
func DeleteKeys(ctx context.Context, rdb *goredis.Client, prefix string) (int, error) {
	if prefix == "" {
		return 0, fmt.Errorf("bench: refusing to delete keys with an empty prefix")
	}
	pattern := globEscape(prefix) + "*"
	var cursor uint64
	n := 0
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 10_000).Result()
		if err != nil {
			return n, err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return n, err
			}
			n += len(keys)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redisInfo returns one field of INFO section.
func redisInfo(ctx context.Context, rdb *goredis.Client, section, field string) (string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("bench: INFO %s has no %s", section, field)
}

// redisCPU returns the CPU time the Redis server has used (INFO cpu), to
// tell how busy it was during a phase.
func redisCPU(ctx context.Context, rdb *goredis.Client) time.Duration {
	var total float64
	for _, f := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := redisInfo(ctx, rdb, "cpu", f)
		if err != nil {
			return 0
		}
		x, _ := strconv.ParseFloat(v, 64)
		total += x
	}
	return time.Duration(total * float64(time.Second))
}

// RedisVersion returns the server's version, for reports.
func RedisVersion(ctx context.Context, rdb *goredis.Client) string {
	v, err := redisInfo(ctx, rdb, "server", "redis_version")
	if err != nil {
		return "?"
	}
	return v
}

// waitStats are the moments of a fan-out seen from Redis.
type waitStats struct {
	first, done time.Time     // first follower's inbox written; DBSIZE reached the target
	cpu         time.Duration // the server's CPU time at done
	// reached, when set, is called at done, before the inboxes are checked
	// (so that a CPU profile of the fan-out ends there).
	reached func()
}

// waitDelivered waits until every inbox of ids (feedd's keys) holds e and
// returns when the last one did. The keys are new (the benchmark's prefix,
// emptied before each run), so each delivery creates one key: DBSIZE, which
// costs Redis nothing, reaching base+len(ids) is the moment of completion,
// polled every millisecond. Then every inbox is checked with ZSCORE; any
// that does not hold e (another client created keys meanwhile) is polled
// until it does, and the completion time moves to then.
func waitDelivered(ctx context.Context, rdb *goredis.Client, ib *redis.Inbox, e feed.Entry, ids []int64, base int64, timeout time.Duration, progress func(int), ws *waitStats) (time.Time, error) {
	var done time.Time
	want := base + int64(len(ids))
	err := poll(ctx, time.Millisecond, timeout, func() (bool, error) {
		n, err := rdb.DBSize(ctx).Result()
		if err != nil {
			return false, err
		}
		if n > base+1 && ws.first.IsZero() {
			ws.first = time.Now()
		}
		progress(int(n - base))
		if n >= want {
			done = time.Now()
			ws.done, ws.cpu = done, redisCPU(ctx, rdb)
			if ws.reached != nil {
				ws.reached()
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return done, fmt.Errorf("bench: waiting for the fan-out: %w", err)
	}
	missing, err := redisMissing(ctx, rdb, ib.HeadKey, ib.HeadMember(e), e, ids)
	if err != nil || len(missing) == 0 {
		return done, err
	}
	err = poll(ctx, time.Millisecond, timeout, func() (bool, error) {
		missing, err = redisMissing(ctx, rdb, ib.HeadKey, ib.HeadMember(e), e, missing)
		return len(missing) == 0, err
	})
	return time.Now(), err
}
