package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// The fan-out's hot path: Deliver writes its pipeline of ZADDs (and of the
// amortised trims' or compactions' EVALSHAs, by layout) in RESP straight into
// connections of its own, one buffer per Redis node, and reads the integer
// replies in place. go-redis spends ~12 allocations and most of its CPU per
// pipelined command on building Cmd values, boxing arguments and parsing
// replies into them; here a delivery costs its key's bytes and one line of
// reply (BenchmarkDeliverEncode; BENCHMARKS.md "Fan-out").
// Every other command, and every delivery this path cannot carry, goes
// through go-redis as before.
//
// The path gives way to go-redis rather than repeating what go-redis does:
//   - any failure (a dial, a write, a read, a timeout, an error reply such as
//     NOSCRIPT, MOVED, ASK, READONLY, LOADING) closes the connection and the
//     whole batch is sent again through go-redis, whose hooks (the Breaker),
//     redirects, retries and NOSCRIPT handling then apply. A batch is
//     idempotent (ZADD of the same score and member; exact trims), so
//     sending it twice leaves the inboxes as sending it once;
//   - while the client's Breaker is open, deliveries go through go-redis and
//     fail at once with ErrUnavailable, as every other command does;
//   - clients it does not know how to reach (a Ring, credentials providers)
//     always go through go-redis.
//
// On a Cluster the batch is split by the node that owns each key's slot
// (ClusterClient.MasterForKey, go-redis's own slot table), and the nodes'
// pipelines run concurrently, as go-redis does.

// wireIdle is how long an idle connection of the wire path stays open.
const wireIdle = time.Minute

// bodySuffix ends a packed inbox's BodyKey after InboxKey: the wire path
// builds body keys from the head's key it has just built (PackedHeadKey,
// InboxKey and headSuffix).
const bodySuffix = ":packed"

// wireMaxIdle is how many idle connections the wire path keeps per node.
const wireMaxIdle = 16

// wire is one Inbox's connections for the hot path, by node address.
type wire struct {
	mu    sync.Mutex
	pools map[string]*wirePool
	// fallbacks counts the batches sent again through go-redis (tests).
	fallbacks atomic.Int64
}

// wireUsable reports whether deliveries on rdb can take the wire path.
func wireUsable(rdb goredis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *goredis.Client:
		return plainOptions(c.Options())
	case *goredis.ClusterClient:
		o := c.Options()
		return o.CredentialsProvider == nil && o.CredentialsProviderContext == nil && o.StreamingCredentialsProvider == nil
	}
	return false
}

// plainOptions reports whether a connection made from o needs nothing but
// a dial, AUTH and SELECT (what the wire path does).
func plainOptions(o *goredis.Options) bool {
	return o.CredentialsProvider == nil && o.CredentialsProviderContext == nil && o.StreamingCredentialsProvider == nil && o.OnConnect == nil
}

// wireBatch is one node's share of a delivery: its commands and how many,
// and on a packed inbox the users whose inboxes it probes (compactProbe),
// whose probes end buf, after every delivery.
type wireBatch struct {
	opts   *goredis.Options
	buf    []byte
	n      int
	probes []int64
}

// deliverWire sends one delivery batch (see Deliver) on the wire path: a
// ZADD per user, and for the users trimsOn picks what Deliver sends through
// go-redis: deliverTrimScript's EVALSHA on sorted-set inboxes; on packed
// ones a probe after the ZADDs (compactProbe), then compactScript's EVALSHA
// for the inboxes found due, in a second round trip.
func (ib *Inbox) deliverWire(ctx context.Context, e feed.Entry, userIDs []int64) error {
	// Every ZADD ends with the same score and member, every EVALSHA with
	// the same arguments: encoded once. Scores are integers (ms), written
	// as go-redis writes their float64 (exact up to 2^53) and parsed by
	// Redis to the same double.
	packed := ib.layout == LayoutPacked
	m := member(e.PostID)
	if packed {
		m = packedMember(e)
	}
	z := appendBulkString(nil, strconv.FormatInt(e.Score, 10))
	z = appendBulkString(z, m)
	script := append([]byte("*7\r\n$7\r\nEVALSHA\r\n$40\r\n"), deliverTrimScript.Hash()...)
	script = append(script, "\r\n$1\r\n1\r\n"...)
	args := append([]byte(nil), z...)
	args = appendBulkString(args, strconv.Itoa(ib.cap))
	var key []byte
	add := func(b *wireBatch, u int64) {
		key = ib.appendKey(key[:0], ib.prefix, u)
		b.n++
		switch {
		case !trimsOn(e.PostID, u):
		case packed:
			b.probes = append(b.probes, u)
		default:
			b.buf = append(b.buf, script...)
			b.buf = appendBulk(b.buf, key)
			b.buf = append(b.buf, args...)
			return
		}
		b.buf = append(b.buf, "*4\r\n$4\r\nZADD\r\n"...)
		b.buf = appendBulk(b.buf, key)
		b.buf = append(b.buf, z...)
	}
	switch c := ib.rdb.(type) {
	case *goredis.Client:
		buf := wireBufs.Get().(*[]byte)
		defer wireBufs.Put(buf)
		b := wireBatch{opts: c.Options(), buf: (*buf)[:0]}
		for _, u := range userIDs {
			add(&b, u)
		}
		err := ib.sendDelivery(ctx, &b)
		*buf = b.buf
		return err
	case *goredis.ClusterClient:
		batches := map[*goredis.Client]*wireBatch{}
		for _, u := range userIDs {
			node, err := c.MasterForKey(ctx, ib.key(u))
			if err != nil {
				return err
			}
			b := batches[node]
			if b == nil && !plainOptions(node.Options()) {
				return errors.New("redis: no wire path to this node")
			}
			if b == nil {
				b = &wireBatch{opts: node.Options()}
				batches[node] = b
			}
			add(b, u)
		}
		errs := make(chan error, len(batches))
		for _, b := range batches {
			go func() { errs <- ib.sendDelivery(ctx, b) }()
		}
		var err error
		for range batches {
			err = cmpErr(err, <-errs)
		}
		return err
	}
	return errors.New("redis: no wire path for this client")
}

// sendDelivery sends b, a delivery batch of deliverWire, its probes
// appended, and then compactScript's EVALSHA for each probed inbox that
// is due.
func (ib *Inbox) sendDelivery(ctx context.Context, b *wireBatch) error {
	var key []byte
	for _, u := range b.probes {
		key = ib.appendKey(key[:0], ib.prefix, u)
		b.buf = append(b.buf, "*2\r\n$5\r\nZCARD\r\n"...)
		b.buf = appendBulk(b.buf, key)
		b.buf = append(b.buf, "*3\r\n$6\r\nZSCORE\r\n"...)
		b.buf = appendBulk(b.buf, key)
		b.buf = appendBulkString(b.buf, bodyMarker)
	}
	replies := make([]int64, 2*len(b.probes))
	if err := ib.wire.send(ctx, b.opts, b.buf, b.n+len(replies), replies); err != nil || len(b.probes) == 0 {
		return err
	}
	// compactScript's EVALSHA for the inboxes due, over the same buffer.
	b.buf, b.n = b.buf[:0], 0
	headMax := ib.headMaxArg()
	for i, u := range b.probes {
		if !(compactProbe{replies[2*i], replies[2*i+1] != 0}).compactDue(ib.cap, headMax) {
			continue
		}
		key = ib.appendKey(key[:0], ib.prefix, u)
		b.buf = append(b.buf, "*7\r\n$7\r\nEVALSHA\r\n$40\r\n"...)
		b.buf = append(b.buf, compactScript.Hash()...)
		b.buf = append(b.buf, "\r\n$1\r\n2\r\n"...)
		b.buf = appendBulk(b.buf, key)
		// BodyKey: the head's key less ":head", and ":packed".
		ik := key[:len(key)-len(headSuffix)]
		b.buf = append(b.buf, '$')
		b.buf = strconv.AppendInt(b.buf, int64(len(ik)+len(bodySuffix)), 10)
		b.buf = append(b.buf, "\r\n"...)
		b.buf = append(b.buf, ik...)
		b.buf = append(b.buf, bodySuffix+"\r\n"...)
		b.buf = appendBulkString(b.buf, strconv.Itoa(ib.cap))
		b.buf = appendBulkString(b.buf, strconv.Itoa(headMax))
		b.n++
	}
	if b.n == 0 {
		return nil
	}
	return ib.wire.send(ctx, b.opts, b.buf, b.n, nil)
}

// wireBufs are the single node's pipeline buffers, reused from batch to
// batch (~60 bytes a delivery).
var wireBufs = sync.Pool{New: func() any { return new([]byte) }}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// appendBulk appends s as a RESP bulk string.
func appendBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// appendBulkString appends s as a RESP bulk string.
func appendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// wireReplyError is an error reply of Redis on the wire path. Like
// go-redis's own, it is a goredis.Error: an answer, not an outage.
type wireReplyError string

func (e wireReplyError) Error() string { return string(e) }

// RedisError implements goredis.Error.
func (wireReplyError) RedisError() {}

// send writes buf, k commands, on a connection to o's node and reads
// their replies, the last len(tail) of them into tail (see exchange).
func (w *wire) send(ctx context.Context, o *goredis.Options, buf []byte, k int, tail []int64) error {
	p := w.pool(o)
	c, err := p.get(ctx)
	if err != nil {
		return err
	}
	err = c.roundTrip(ctx, o, buf, k, tail)
	var reply wireReplyError
	if err != nil && !errors.As(err, &reply) {
		c.Close()
		return err
	}
	p.put(c)
	return err
}

func (w *wire) pool(o *goredis.Options) *wirePool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pools[o.Addr]
	if p == nil || p.opts != o {
		if w.pools == nil {
			w.pools = map[string]*wirePool{}
		}
		p = &wirePool{opts: o}
		w.pools[o.Addr] = p
	}
	return p
}

// wirePool is the idle connections to one node.
type wirePool struct {
	opts  *goredis.Options
	mu    sync.Mutex
	idle  []*wireConn
	timer *time.Timer
}

// wireConn is one connection of the wire path.
type wireConn struct {
	net.Conn
	r    *bufio.Reader
	used time.Time
}

func (p *wirePool) get(ctx context.Context) (*wireConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return dialWire(ctx, p.opts)
}

func (p *wirePool) put(c *wireConn) {
	c.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= wireMaxIdle {
		c.Close()
		return
	}
	p.idle = append(p.idle, c)
	if p.timer == nil {
		p.timer = time.AfterFunc(wireIdle, p.reap)
	}
}

// reap closes the connections idle for wireIdle, and comes back while any
// remain.
func (p *wirePool) reap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.idle[:0]
	for _, c := range p.idle {
		if time.Since(c.used) >= wireIdle {
			c.Close()
		} else {
			keep = append(keep, c)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.timer = nil
	if len(p.idle) > 0 {
		p.timer = time.AfterFunc(wireIdle, p.reap)
	}
}

// wireName is the name of the wire path's connections (CLIENT LIST).
const wireName = "feedd-wire"

// dialWire opens a connection as go-redis would (its Dialer: TCP or unix,
// TLS), then authenticates, names it wireName and selects the database.
func dialWire(ctx context.Context, o *goredis.Options) (*wireConn, error) {
	conn, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, err
	}
	c := &wireConn{Conn: conn, r: bufio.NewReaderSize(conn, 16<<10)}
	var hello []byte
	k := 0
	if o.Password != "" {
		hello = append(hello, "*"...)
		if o.Username != "" {
			hello = append(hello, "3\r\n$4\r\nAUTH\r\n"...)
			hello = appendBulkString(hello, o.Username)
		} else {
			hello = append(hello, "2\r\n$4\r\nAUTH\r\n"...)
		}
		hello = appendBulkString(hello, o.Password)
		k++
	}
	hello = append(hello, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n"...)
	hello = appendBulkString(hello, wireName)
	k++
	if o.DB != 0 {
		hello = append(hello, "*2\r\n$6\r\nSELECT\r\n"...)
		hello = appendBulkString(hello, strconv.Itoa(o.DB))
		k++
	}
	if err := c.roundTrip(ctx, o, hello, k, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// roundTrip writes buf, which holds k commands, and reads their k replies
// (exchange), the last len(tail) of them into tail. It
// returns the first error reply, once every reply is read; any other error
// leaves the connection unusable. The deadline is ctx's, or the client's
// read and write timeouts from now; cancelling ctx interrupts it.
func (c *wireConn) roundTrip(ctx context.Context, o *goredis.Options, buf []byte, k int, tail []int64) error {
	deadline := time.Time{}
	if t := max(o.ReadTimeout, 0) + max(o.WriteTimeout, 0); t > 0 {
		deadline = time.Now().Add(t)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err := c.exchange(buf, k, tail)
	if !stop() {
		return cmpErr(ctx.Err(), err)
	}
	return err
}

// exchange writes buf, which holds k commands, and reads their k replies:
// integers, statuses, error replies, and in the last len(tail) also bulk
// strings (anything else is a protocol error). Each of the last len(tail)
// replies goes into tail: an integer as itself, a bulk string as 1, a nil
// one as 0.
func (c *wireConn) exchange(buf []byte, k int, tail []int64) error {
	if _, err := c.Write(buf); err != nil {
		return err
	}
	var first error
	for i := range k {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) < 3 || line[len(line)-2] != '\r' {
			return fmt.Errorf("redis: wire path: malformed reply %q", line)
		}
		t := i - (k - len(tail)) // the reply's index in tail, if >= 0
		switch {
		case line[0] == ':' && t >= 0:
			n, err := strconv.ParseInt(string(line[1:len(line)-2]), 10, 64)
			if err != nil {
				return fmt.Errorf("redis: wire path: malformed reply %q", line)
			}
			tail[t] = n
		case line[0] == ':', line[0] == '+':
		case line[0] == '-':
			if first == nil {
				first = wireReplyError(line[1 : len(line)-2])
			}
		case line[0] == '$' && t >= 0:
			n, err := strconv.Atoi(string(line[1 : len(line)-2]))
			if err != nil || n < -1 {
				return fmt.Errorf("redis: wire path: malformed reply %q", line)
			}
			if n >= 0 {
				if _, err := c.r.Discard(n + 2); err != nil {
					return err
				}
			}
			tail[t] = min(int64(n)+1, 1)
		default:
			return fmt.Errorf("redis: wire path: unexpected reply %q", line)
		}
	}
	return first
}
