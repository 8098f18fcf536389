package redis_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/redis"
)

// The Redis inbox's hot paths: a fan-out batch (Deliver: one pipeline of
// ZADDs, and the amortised trims) and a feed page (Page: one script call).
// The Encode benchmarks run against a stub that answers every command at
// once, so they measure this process's work alone (building, writing and
// reading a pipeline); the others need a real Redis:
//
//	go test -run '^$' -bench 'Encode' -count 10 ./redis
//	FEED_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench 'Inbox' -count 10 ./redis

// stubRedis is a TCP server that reads RESP commands and answers each with
// the integer 0 (HELLO with an error, so the client speaks RESP2).
func stubRedis(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveStub(c)
		}
	}()
	return ln.Addr().String()
}

func serveStub(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReaderSize(c, 64<<10), bufio.NewWriterSize(c, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil || len(line) < 3 || line[0] != '*' {
			return
		}
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		var first []byte
		for i := range n {
			h, err := r.ReadSlice('\n')
			if err != nil || len(h) < 3 {
				return
			}
			size, _ := strconv.Atoi(string(h[1 : len(h)-2]))
			if i == 0 {
				arg := make([]byte, size+2)
				if _, err := io.ReadFull(r, arg); err != nil {
					return
				}
				first = arg[:size]
			} else if _, err := r.Discard(size + 2); err != nil {
				return
			}
		}
		if string(first) == "HELLO" || string(first) == "hello" {
			w.WriteString("-ERR unknown command 'HELLO'\r\n")
		} else {
			w.WriteString(":0\r\n")
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

func userIDs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(1_000_000 + i)
	}
	return ids
}

// BenchmarkDeliverEncode is the client side of one fan-out batch of 1000
// inboxes through go-redis: building the pipeline of ZADDs (and of the
// trims that one delivery in 16 carries), writing it and reading the
// replies.
func BenchmarkDeliverEncode(b *testing.B) {
	rdb := goredis.NewClient(&goredis.Options{Addr: stubRedis(b), Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: "bench:", Layout: redis.LayoutSortedSet})
	ctx := context.Background()
	ids := userIDs(1000)
	post := int64(5_000_000)
	for b.Loop() {
		post++
		if err := ib.Deliver(ctx, feed.Entry{PostID: post, Score: 1_800_000_000_000 + post}, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/delivery")
}

func openRedis(b *testing.B) (*goredis.Client, string) {
	url, prefix := testenv.RedisURL(b)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	b.Cleanup(func() {
		ctx := context.Background()
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				break
			}
			if len(keys) > 0 {
				rdb.Unlink(ctx, keys...)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		rdb.Close()
	})
	return rdb, prefix
}

// BenchmarkInboxDeliver is one fan-out batch on a real Redis: one entry into
// 1000 inboxes (which grow to the cap and are then trimmed). It reports
// deliveries/s; the machine is shared with the server.
func BenchmarkInboxDeliver(b *testing.B) {
	rdb, prefix := openRedis(b)
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Layout: redis.LayoutSortedSet})
	ctx := context.Background()
	ids := userIDs(1000)
	post := int64(5_000_000)
	start := time.Now()
	for b.Loop() {
		post++
		if err := ib.Deliver(ctx, feed.Entry{PostID: post, Score: 1_800_000_000_000 + post}, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((post-5_000_000)*int64(len(ids)))/time.Since(start).Seconds(), "deliveries/s")
}

// BenchmarkInboxPage is the range query of a feed page on a real Redis: one
// script call on an inbox of 800 entries.
func BenchmarkInboxPage(b *testing.B) {
	rdb, prefix := openRedis(b)
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Layout: redis.LayoutSortedSet})
	ctx := context.Background()
	var es []feed.Entry
	for i := range 800 {
		es = append(es, feed.Entry{PostID: int64(5_000_000 + i), Score: 1_800_000_000_000 + int64(i/2)})
	}
	if err := ib.Restore(ctx, 1, es); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if got, err := ib.Page(ctx, 1, feed.AtMost(1<<62), 0, 10); err != nil || len(got) != 10 {
			b.Fatalf("page: %v", err)
		}
	}
}
