package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/redis"
)

// MemoryOptions configure Memory.
type MemoryOptions struct {
	Prefix   string // the benchmark's key prefix
	Inboxes  int    // inboxes filled to the cap
	Cap      int    // feedd's --inbox-cap
	Progress io.Writer
}

// RecommendedListpackEntries is the zset-max-listpack-entries feedd
// recommends for an inbox cap: the cap plus the entries an inbox gathers
// between two of Deliver's amortised trims (one delivery in 16 trims, so more
// than 224 untrimmed deliveries in a row happen with probability
// (15/16)^224 < 1e-6), rounded up to a power of two. An inbox that ever
// outgrows the setting is converted to a skiplist for good, so the margin
// matters more than the last byte.
func RecommendedListpackEntries(cap int) int {
	n := 128
	for n < cap+224 {
		n *= 2
	}
	return n
}

// MemorySetting is one inbox layout and encoding setting measured.
type MemorySetting struct {
	Layout          string  `json:"layout"`
	ListpackEntries int     `json:"zset_max_listpack_entries"`
	ListpackValue   int     `json:"zset_max_listpack_value"`
	Encoding        string  `json:"encoding"`
	EntriesPerInbox float64 `json:"entries_per_inbox"`
	BytesPerEntry   float64 `json:"bytes_per_entry"`
	KeyBytesPerEnt  float64 `json:"memory_usage_bytes_per_entry"`
	AtCapPerS       float64 `json:"deliveries_per_s_at_cap"`
	// RedisCPUAtCap is the Redis server's CPU time (INFO cpu, user + sys)
	// per delivery into inboxes at the cap, in µs: what the layout costs
	// Redis, less sensitive than the wall-clock rate to a client sharing
	// the machine's cores.
	RedisCPUAtCap float64 `json:"redis_cpu_us_per_delivery_at_cap"`
}

// MemoryResult is the result of Memory.
type MemoryResult struct {
	Inboxes int `json:"inboxes"`
	Cap     int `json:"cap"`
	// Default is plain sorted sets (redis.LayoutSortedSet) under Redis's
	// default encoding settings: skiplists at the cap.
	Default MemorySetting `json:"default"`
	// Listpack is plain sorted sets with zset-max-listpack-entries raised
	// to RecommendedListpackEntries(cap): feedd's advice before the packed
	// layout.
	Listpack MemorySetting `json:"listpack"`
	// Feedd is what feedd ships: redis.LayoutPacked, Redis's default
	// settings.
	Feedd MemorySetting `json:"feedd"`
}

// Text renders r for people.
func (r *MemoryResult) Text() string {
	line := func(name string, s MemorySetting) string {
		return fmt.Sprintf("  %-8s %-6s zset-max-listpack-entries %-5d %-15s %6.1f entries/inbox  %6.1f B/entry (INFO)  %6.1f B/entry (MEMORY USAGE)  %8.0f deliveries/s at the cap\n",
			name, s.Layout, s.ListpackEntries, s.Encoding, s.EntriesPerInbox, s.BytesPerEntry, s.KeyBytesPerEnt, s.AtCapPerS)
	}
	return fmt.Sprintf("Redis memory per inbox entry, %d inboxes at the cap (%d)\n", r.Inboxes, r.Cap) +
		line("default", r.Default) + line("listpack", r.Listpack) + line("feedd", r.Feedd) +
		fmt.Sprintf("  feedd/default: %.2fx the deliveries/s (%.2fx by Redis CPU), %.2fx the bytes/entry\n", r.Feedd.AtCapPerS/r.Default.AtCapPerS, r.Default.RedisCPUAtCap/r.Feedd.RedisCPUAtCap, r.Feedd.BytesPerEntry/r.Default.BytesPerEntry)
}

// Memory fills inboxes to the cap through feedd's own Redis inbox (Deliver,
// with its amortised trims) under Redis's default sorted-set encoding
// settings and under the recommended ones, and measures the memory per
// entry (INFO memory's used_memory before and after, over all entries; and
// MEMORY USAGE of the keys) and the rate of deliveries into inboxes at the
// cap, in wall clock and in the Redis server's CPU: the cost the smaller
// encoding has. It sets the settings with CONFIG
// SET and restores them afterwards.
func Memory(ctx context.Context, rdb *goredis.Client, opt MemoryOptions) (*MemoryResult, error) {
	if opt.Inboxes < 1 {
		return nil, fmt.Errorf("bench: --inboxes must be at least 1")
	}
	orig, err := rdb.ConfigGet(ctx, "zset-max-listpack-*").Result()
	if err != nil {
		return nil, err
	}
	origEntries, origValue := orig["zset-max-listpack-entries"], orig["zset-max-listpack-value"]
	if origEntries == "" || origValue == "" {
		return nil, fmt.Errorf("bench: this Redis has no zset-max-listpack-* settings (Redis 7 or later needed)")
	}
	defer rdb.ConfigSet(context.WithoutCancel(ctx), "zset-max-listpack-entries", origEntries)
	defer rdb.ConfigSet(context.WithoutCancel(ctx), "zset-max-listpack-value", origValue)

	r := &MemoryResult{Inboxes: opt.Inboxes, Cap: opt.Cap}
	for i, s := range []*MemorySetting{&r.Default, &r.Listpack, &r.Feedd} {
		s.ListpackEntries, s.ListpackValue = 128, 64 // Redis's defaults
		s.Layout = string(redis.LayoutSortedSet)
		switch i {
		case 1:
			s.ListpackEntries = RecommendedListpackEntries(opt.Cap)
		case 2:
			s.Layout = string(redis.LayoutPacked)
		}
		if err := measureMemory(ctx, rdb, opt, s, fmt.Sprintf("%smem%d:", opt.Prefix, i)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func measureMemory(ctx context.Context, rdb *goredis.Client, opt MemoryOptions, s *MemorySetting, prefix string) error {
	if err := rdb.ConfigSet(ctx, "zset-max-listpack-entries", strconv.Itoa(s.ListpackEntries)).Err(); err != nil {
		return err
	}
	if err := rdb.ConfigSet(ctx, "zset-max-listpack-value", strconv.Itoa(s.ListpackValue)).Err(); err != nil {
		return err
	}
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: opt.Cap, Layout: redis.Layout(s.Layout)})
	users := make([]int64, opt.Inboxes)
	for i := range users {
		users[i] = int64(1_000_001 + i)
	}
	key := ib.HeadKey
	defer deleteSync(context.WithoutCancel(ctx), rdb, users, key)
	defer deleteSync(context.WithoutCancel(ctx), rdb, users, func(u int64) string { return redis.BodyKey(prefix, u) })

	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	// Posts: 7-digit ids, scores of today's milliseconds a second apart.
	// The first cap posts fill the inboxes; the next cap/4 are timed, each
	// into inboxes at the cap, four deliveries (workers) at once.
	base := time.Now().UnixMilli() - 3_600_000
	fill, timed := opt.Cap, max(opt.Cap/4, 16)
	deliver := func(from, to int, bar *progress) error {
		var done atomic.Int64
		return parallel(ctx, 4, to-from, func(ctx context.Context, i int) error {
			p := from + i
			e := feed.Entry{PostID: int64(2_000_000 + p), Score: base + int64(p)*1000}
			err := ib.Deliver(ctx, e, users)
			bar.set(int(done.Add(1)))
			return err
		})
	}
	name := s.Layout
	if s.ListpackEntries != 128 {
		name += ", listpack"
	}
	bar := newProgress(opt.Progress, "fill inboxes ("+name+")", fill)
	err = deliver(0, fill, bar)
	bar.finish()
	if err != nil {
		return err
	}
	bar = newProgress(opt.Progress, "deliver at cap ("+name+")", timed)
	cpu0 := redisCPU(ctx, rdb)
	start := time.Now()
	err = deliver(fill, fill+timed, bar)
	d := time.Since(start)
	cpu := redisCPU(ctx, rdb) - cpu0
	bar.finish()
	if err != nil {
		return err
	}
	s.AtCapPerS = round(float64(timed*len(users))/d.Seconds(), 0)
	s.RedisCPUAtCap = round(float64(cpu.Microseconds())/float64(timed*len(users)), 2)

	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	var entries int64
	for _, u := range users {
		n, err := ib.Len(ctx, u)
		if err != nil {
			return err
		}
		entries += int64(n)
	}
	s.EntriesPerInbox = round(float64(entries)/float64(len(users)), 1)
	s.BytesPerEntry = round(float64(after-before)/float64(entries), 1)

	// MEMORY USAGE of a sample of the keys, with every element counted.
	sample := users[:min(100, len(users))]
	var keyBytes, keyEntries int64
	encodings := map[string]int{}
	for _, u := range sample {
		n, err := rdb.MemoryUsage(ctx, key(u), 0).Result()
		if err != nil {
			return err
		}
		keyBytes += n
		if s.Layout == string(redis.LayoutPacked) {
			b, err := rdb.MemoryUsage(ctx, redis.BodyKey(prefix, u), 0).Result()
			if err != nil && !errors.Is(err, goredis.Nil) {
				return err
			}
			keyBytes += b
		}
		held, err := ib.Len(ctx, u)
		if err != nil {
			return err
		}
		keyEntries += int64(held)
		enc, err := rdb.ObjectEncoding(ctx, key(u)).Result()
		if err != nil {
			return err
		}
		if s.Layout == string(redis.LayoutPacked) {
			enc = "packed+" + enc // the head's encoding
		}
		encodings[enc]++
	}
	s.KeyBytesPerEnt = round(float64(keyBytes)/float64(keyEntries), 1)
	for enc, n := range encodings {
		if n*2 > len(sample) {
			s.Encoding = enc
		}
	}
	if len(encodings) > 1 {
		s.Encoding = fmt.Sprint(encodings)
	}
	return nil
}

func usedMemory(ctx context.Context, rdb *goredis.Client) (int64, error) {
	v, err := redisInfo(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// keysMemory is INFO used_memory less the clients' buffers
// (mem_clients_normal, mem_clients_slaves): what the keys take, however
// many connections the server has open at the time (each holds buffers of
// up to tens of KB, and a busier server opens more of them).
func keysMemory(ctx context.Context, rdb *goredis.Client) (int64, error) {
	s, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	var used int64
	var found bool
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory", "mem_clients_normal", "mem_clients_slaves":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: INFO memory %s: %w", k, err)
			}
			if k == "used_memory" {
				used, found = used+n, true
			} else {
				used -= n
			}
		}
	}
	if !found {
		return 0, errors.New("bench: INFO memory has no used_memory")
	}
	return used, nil
}

// deleteSync deletes the keys with DEL (not UNLINK), so that used_memory
// has dropped when it returns.
func deleteSync(ctx context.Context, rdb *goredis.Client, ids []int64, key func(int64) string) error {
	for lo := 0; lo < len(ids); lo += 1000 {
		var keys []string
		for _, u := range ids[lo:min(lo+1000, len(ids))] {
			keys = append(keys, key(u))
		}
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			return err
		}
	}
	return nil
}
