package redis_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/redis"
	"github.com/feedd/feedd/sqlite"
)

// server opens a client of one kind of Redis deployment and returns it with
// a key prefix of the test's own. The test's keys are deleted when it ends.
type server struct {
	name string
	open func(t testing.TB) (goredis.UniversalClient, string)
}

var servers = []server{
	{"Single", openSingle},
	{"Cluster", openCluster},
}

func openSingle(t testing.TB) (goredis.UniversalClient, string) {
	t.Helper()
	url, prefix := testenv.RedisURL(t)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.EnvRedis, err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	return rdb, prefix
}

func openCluster(t testing.TB) (goredis.UniversalClient, string) {
	t.Helper()
	addrs, prefix := testenv.RedisCluster(t)
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { rdb.Close() })
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	return rdb, prefix
}

// deleteKeys removes every key that starts with prefix, on every node.
func deleteKeys(t testing.TB, rdb goredis.UniversalClient, prefix string) {
	ctx := context.Background()
	// One UNLINK per key: keys of different slots cannot share a command.
	del := func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		p := c.Pipeline()
		for iter.Next(ctx) {
			p.Unlink(ctx, iter.Val())
			if p.Len() == 500 {
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
			}
		}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.ErrClosed) && p.Len() > 0 {
			return err
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *goredis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		t.Errorf("delete the test's keys: %v", err)
	}
}

// forEachServer runs f as a subtest on each kind of deployment.
func forEachServer(t *testing.T, f func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string))) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) { f(t, s.open) })
	}
}

// rebuilding is a redis.Inbox that rebuilds a lost inbox on read, as
// feed.Service does, but with no entries from a source of truth. The suites
// expect a fresh backend's inboxes to read as empty, and write them only
// through the Inbox, so everything they hold is already in Redis; without it
// the first read of every inbox would be feed.ErrInboxLost, which is the
// point of the sentinel (TestLostInbox). The suites' own lostInbox wrapper
// still exercises the rebuild through Restore.
type rebuilding struct{ *redis.Inbox }

func (ib rebuilding) Page(ctx context.Context, userID int64, max feed.Bound, offset, limit int) ([]feed.Entry, error) {
	es, err := ib.Inbox.Page(ctx, userID, max, offset, limit)
	if errors.Is(err, feed.ErrInboxLost) {
		if err := ib.Restore(ctx, userID, nil); err != nil {
			return nil, err
		}
		es, err = ib.Inbox.Page(ctx, userID, max, offset, limit)
	}
	return es, err
}

// rebuildingPages is SessionPages with rebuilding's Page: an inbox never
// built is restored empty and read again.
type rebuildingPages struct {
	*redis.SessionPages
	inbox rebuilding
}

func (sp rebuildingPages) SessionPage(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration, userID int64, b feed.Bound, offset, limit int) feed.SessionPage {
	r := sp.SessionPages.SessionPage(ctx, tokenHash, now, ttl, userID, b, offset, limit)
	if errors.Is(r.PageErr, feed.ErrInboxLost) {
		r.Entries, r.PageErr = sp.inbox.Page(ctx, userID, b, offset, limit)
	}
	return r
}

// capSlack bounds how many entries over the cap a Redis inbox holds: the
// deliveries since its last trim, each of which trims with probability 1/16
// (redis.Inbox.Deliver), so more than 150 with probability (15/16)^150 <
// 1e-4. The suites' ids are fixed, so their result is too.
const capSlack = 150

// layouts are the inbox layouts every Redis inbox test runs on: the plain
// sorted set (the default), the packed one, and the packed one compacted at
// every amortised trim (so that small inboxes have a body too).
var layouts = []struct {
	name string
	opts redis.InboxOptions
}{
	{"SortedSet", redis.InboxOptions{Layout: redis.LayoutSortedSet}},
	{"Packed", redis.InboxOptions{Layout: redis.LayoutPacked}},
	{"PackedAlwaysCompact", redis.InboxOptions{Layout: redis.LayoutPacked, HeadMax: -1}},
}

// forEachLayout runs f as a subtest on each layout of layouts.
func forEachLayout(t *testing.T, f func(t *testing.T, opts redis.InboxOptions)) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) { f(t, l.opts) })
	}
}

// forEachServerLayout runs f as a subtest on each kind of deployment and
// each layout.
func forEachServerLayout(t *testing.T, f func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions)) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		forEachLayout(t, func(t *testing.T, opts redis.InboxOptions) { f(t, open, opts) })
	})
}

// withPrefix is opts with a key prefix and a cap (0: the default).
func withPrefix(opts redis.InboxOptions, prefix string, cap int) redis.InboxOptions {
	opts.Prefix, opts.Cap = prefix, cap
	return opts
}

func TestInbox(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		forEachLayout(t, func(t *testing.T, opts redis.InboxOptions) {
			feedtest.TestInbox(t, func(t *testing.T, cap int) feed.Inbox {
				rdb, prefix := open(t)
				return rebuilding{redis.NewInbox(rdb, withPrefix(opts, prefix, cap))}
			}, func(int) int { return capSlack })
		})
	})
}

// openBackend combines a fresh SQLite database (users, posts, follows and
// the job queue, kept in memory) with the Redis AuthStore and Inbox (the
// sorted-set layout; TestPackedFeed and TestPackedHybrid run the packed one). The
// suites' feeds are longer than feed.DefaultInboxCap entries and their model keeps
// everything, so the cap is lifted: the cap is a deployment's choice, which
// TestCap covers.
func openBackend(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) *feedtest.Backend {
	return openBackendLayout(t, open, redis.LayoutSortedSet)
}

// openBackendLayout is openBackend with inboxes of the given layout.
func openBackendLayout(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), layout redis.Layout) *feedtest.Backend {
	db, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	var mu sync.Mutex
	var jobs []feed.Job
	db.Enqueue = func(ctx context.Context, tx *sql.Tx, js ...feed.Job) error {
		mu.Lock()
		defer mu.Unlock()
		jobs = append(jobs, js...)
		return nil
	}
	rdb, prefix := open(t)
	auth := redis.NewAuthStore(rdb, prefix)
	inbox := rebuilding{redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: 1 << 20, Layout: layout})}
	sp, err := redis.NewSessionPages(auth, inbox.Inbox)
	if err != nil {
		t.Fatal(err)
	}
	return &feedtest.Backend{
		Users: db, Posts: db, Follows: db, Social: db, Filters: db, Ranks: db, Reposts: db,
		Snapshots:    redis.NewSnapshots(rdb, prefix),
		Auth:         auth,
		Inbox:        inbox,
		SessionPages: rebuildingPages{sp, inbox},
		Outbox:       redis.NewOutbox(rdb, redis.InboxOptions{Prefix: prefix, Cap: 1 << 20}, &sqlite.Outbox{DB: db}),
		Jobs: func() []feed.Job {
			mu.Lock()
			defer mu.Unlock()
			out := jobs
			jobs = nil
			return out
		},
	}
}

func TestStores(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestStores(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}

func TestHybrid(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestHybrid(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}

func TestFeed(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestFeed(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}

// TestPackedFeed and TestPackedHybrid run the feed and hybrid suites
// (native cursor properties included) on packed inboxes.
func TestPackedFeed(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestFeed(t, func(t *testing.T) *feedtest.Backend { return openBackendLayout(t, open, redis.LayoutPacked) })
	})
}

func TestPackedHybrid(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestHybrid(t, func(t *testing.T) *feedtest.Backend { return openBackendLayout(t, open, redis.LayoutPacked) })
	})
}

const s0 = 1_700_000_000_000

func mustDo(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func pageAll(t testing.TB, ib feed.Inbox, userID int64) []feed.Entry {
	t.Helper()
	es, err := ib.Page(context.Background(), userID, feed.AtMost(math.MaxInt64>>10), 0, 1_000_000)
	mustDo(t, err, fmt.Sprintf("Page(user %d)", userID))
	return es
}

func wantEntries(t testing.TB, what string, got, want []feed.Entry) {
	t.Helper()
	if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// inOrder returns entries sorted in feed order.
func inOrder(entries []feed.Entry) []feed.Entry {
	out := slices.Clone(entries)
	feedtest.SortEntries(out)
	return out
}

// TestKeyLayout pins the key layout the package documents: it is what a
// deployment's Redis holds, so a change is a migration, not a refactoring.
func TestKeyLayout(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{redis.InboxKey("p:", 42), "p:feed:{42}"},
		{redis.OutboxKey("p:", 42), "p:outbox:{42}"},
		{redis.CodeKey("p:", "13800000001"), "p:code:{13800000001}"},
		{redis.SessionKey("p:", "abc"), "p:session:{abc}"},
		{redis.InboxKey("", 7), "feed:{7}"},
		{redis.PackedHeadKey("p:", 42), "p:feed:{42}:head"},
		{redis.BodyKey("p:", 42), "p:feed:{42}:packed"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

func TestLostInbox(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, 0))
		const user = 42
		key := ib.HeadKey(user)
		lost := func(what string) {
			t.Helper()
			if _, err := ib.Page(ctx, user, feed.AtMost(math.MaxInt32<<20), 0, 10); !errors.Is(err, feed.ErrInboxLost) {
				t.Fatalf("%s: Page error = %v, want feed.ErrInboxLost", what, err)
			}
		}
		a := feed.Entry{PostID: 10, Score: s0 + 2}
		b := feed.Entry{PostID: 9, Score: s0 + 2}
		c := feed.Entry{PostID: 100, Score: s0 + 1}
		d := feed.Entry{PostID: 7, Score: s0}

		lost("never built")
		// A delivery to a lost inbox is written, but the inbox stays lost.
		mustDo(t, ib.Deliver(ctx, a, []int64{user}), "Deliver")
		lost("after a delivery to a lost inbox")
		if n := rdb.ZCard(ctx, key).Val(); n != 1 {
			t.Fatalf("lost inbox holds %d members after a delivery, want 1", n)
		}
		mustDo(t, ib.Trim(ctx, user, 5), "Trim a lost inbox")
		lost("after Trim")

		// Restore merges with what was delivered, and marks the inbox built.
		mustDo(t, ib.Restore(ctx, user, []feed.Entry{b, c, d}), "Restore")
		wantEntries(t, "after Restore", pageAll(t, ib, user), []feed.Entry{a, b, c, d})
		mustDo(t, ib.Restore(ctx, user, []feed.Entry{b, c}), "Restore again")
		wantEntries(t, "after a second Restore", pageAll(t, ib, user), []feed.Entry{a, b, c, d})
		if got := rdb.ZScore(ctx, key, "-").Val(); !math.IsInf(got, -1) {
			t.Fatalf("sentinel score = %v, want -inf", got)
		}

		// Nothing that removes entries removes the sentinel.
		mustDo(t, ib.Remove(ctx, a, []int64{user}), "Remove")
		wantEntries(t, "after Remove", pageAll(t, ib, user), []feed.Entry{b, c, d})
		mustDo(t, ib.Trim(ctx, user, 2), "Trim")
		wantEntries(t, "after Trim", pageAll(t, ib, user), []feed.Entry{b, c})
		mustDo(t, ib.Trim(ctx, user, 0), "Trim to zero")
		wantEntries(t, "after Trim to zero", pageAll(t, ib, user), nil)
		mustDo(t, ib.Remove(ctx, b, []int64{user}), "Remove from an empty inbox")
		wantEntries(t, "empty built inbox", pageAll(t, ib, user), nil)
		// Pages below every score, or past the end, never show the sentinel.
		mustDo(t, ib.Add(ctx, user, []feed.Entry{d}), "Add")
		for _, max := range []int64{math.MinInt64, -1, 0, s0 - 1, s0, math.MaxInt32 << 20} {
			for offset := 0; offset < 3; offset++ {
				es, err := ib.Page(ctx, user, feed.AtMost(max), offset, 5)
				mustDo(t, err, "Page")
				for _, e := range es {
					if e != d {
						t.Fatalf("Page(max %d, offset %d) = %v", max, offset, es)
					}
				}
			}
		}

		// Losing the key (eviction, flush, restart) is detected.
		mustDo(t, rdb.Del(ctx, key).Err(), "DEL")
		lost("after the key was deleted")
		mustDo(t, ib.Restore(ctx, user, nil), "Restore with no entries")
		wantEntries(t, "restored empty inbox", pageAll(t, ib, user), nil)

		// Another user's inbox is untouched by all of this.
		_, err := ib.Page(ctx, user+1, feed.AtMost(s0*2), 0, 10)
		if !errors.Is(err, feed.ErrInboxLost) {
			t.Fatalf("Page of another, never built inbox: %v, want feed.ErrInboxLost", err)
		}
	})
}

func TestRestoreCap(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		const cap = 5
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, cap))
		var entries []feed.Entry
		for _, id := range []int64{9, 10, 100, 11, 99, 1000, 8} { // one tie group
			entries = append(entries, feed.Entry{PostID: id, Score: s0})
		}
		entries = append(entries, feed.Entry{PostID: 1, Score: s0 + 1}, feed.Entry{PostID: 12345, Score: s0 - 1})
		mustDo(t, ib.Restore(ctx, 1, entries), "Restore")
		wantEntries(t, "restored over the cap", pageAll(t, ib, 1), inOrder(entries)[:cap])
		mustDo(t, ib.Restore(ctx, 2, nil), "Restore")
		mustDo(t, ib.Add(ctx, 2, entries), "Add")
		wantEntries(t, "added over the cap", pageAll(t, ib, 2), inOrder(entries)[:cap])
	})
}

func TestTieOrder(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, 0))
		ids := []int64{9, 10, 100, 99999999999999999, 99999999999999998, 1 << 53, 1<<53 + 1, math.MaxInt64, 1, 2, 19, 91, 900, 8999}
		var entries []feed.Entry
		for _, id := range ids {
			entries = append(entries, feed.Entry{PostID: id, Score: s0})
		}
		entries = append(entries, feed.Entry{PostID: 5, Score: s0 + 1}, feed.Entry{PostID: 50, Score: s0 - 1})
		const user = 7
		mustDo(t, ib.Restore(ctx, user, nil), "Restore")
		for i, e := range entries {
			mustDo(t, ib.Deliver(ctx, e, []int64{user, int64(100 + i)}), "Deliver")
		}
		want := inOrder(entries)
		if want[1].PostID != math.MaxInt64 || want[len(want)-2].PostID != 1 {
			t.Fatalf("test bug: feed order %v", want)
		}
		wantEntries(t, "inbox", pageAll(t, ib, user), want)
		for limit := 1; limit <= len(want); limit++ {
			for offset := 0; offset <= len(want); offset++ {
				for _, max := range []int64{s0 + 1, s0} {
					w := want
					if max == s0 {
						w = want[1:]
					}
					w = w[min(offset, len(w)):min(offset+limit, len(w))]
					got, err := ib.Page(ctx, user, feed.AtMost(max), offset, limit)
					mustDo(t, err, "Page")
					wantEntries(t, fmt.Sprintf("Page(max %d, offset %d, limit %d)", max, offset, limit), got, w)
				}
			}
		}
		// Trims that cut the tie group keep its numerically highest ids.
		for _, cap := range []int{len(want) - 1, 10, 4, 2, 1} {
			mustDo(t, ib.Trim(ctx, user, cap), "Trim")
			wantEntries(t, fmt.Sprintf("after Trim(%d)", cap), pageAll(t, ib, user), want[:cap])
		}
	})
}

// TestCap delivers many posts to a few inboxes with a small cap: every
// inbox stays within a bounded slack over the cap, and it always holds the
// newest entries exactly, ties cut by numeric id (ids cross 10, 100, 1000,
// where byte order and numeric order differ).
func TestCap(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		const cap, posts, users, slack = 20, 3000, 40, 150
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, cap))
		all := make([]int64, users)
		for i := range all {
			all[i] = int64(i + 1)
			if i%2 == 0 {
				mustDo(t, ib.Restore(ctx, all[i], nil), "Restore") // half are built
			}
		}
		delivered := map[int64][]feed.Entry{}
		largest := 0
		for id := int64(1); id <= posts; id++ {
			// Scores rise with ids, 7 posts a millisecond: ties everywhere.
			e := feed.Entry{PostID: id, Score: s0 + id/7}
			to := all
			if id%3 != 0 {
				to = all[:users/2+int(id%(users/2))]
			}
			mustDo(t, ib.Deliver(ctx, e, to), "Deliver")
			for _, u := range to {
				delivered[u] = append(delivered[u], e)
			}
			if id%500 != 0 && id != posts {
				continue
			}
			for _, u := range all {
				n, err := ib.Len(ctx, u) // the sentinel not counted
				mustDo(t, err, "Len")
				largest = max(largest, n)
				if n > cap+slack || n < min(cap, len(delivered[u])) {
					t.Fatalf("after %d posts inbox %d holds %d entries; cap %d, %d delivered", id, u, n, cap, len(delivered[u]))
				}
				want := inOrder(delivered[u])[:n]
				if u%2 == 1 {
					wantEntries(t, fmt.Sprintf("inbox %d after %d posts", u, id), pageAll(t, ib, u), want)
				}
			}
		}
		t.Logf("largest inbox: %d entries (cap %d)", largest, cap)
		for _, u := range all {
			mustDo(t, ib.Trim(ctx, u, cap), "Trim")
			if u%2 == 1 {
				wantEntries(t, "after Trim", pageAll(t, ib, u), inOrder(delivered[u])[:cap])
			}
		}
	})
}

// TestAuthClock checks what the feedtest suite cannot see: the store
// follows the injected clock even far from the server's, and every key it
// writes is garbage-collected by Redis.
func TestAuthClock(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		ctx := t.Context()
		rdb, prefix := open(t)
		s := redis.NewAuthStore(rdb, prefix)
		past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		const phone = "13800000001"
		mustDo(t, s.SaveCode(ctx, phone, "h1", past, feed.CodeTTL, feed.CodeResendAfter), "SaveCode")
		if ttl := rdb.PTTL(ctx, redis.CodeKey(prefix, phone)).Val(); ttl <= feed.CodeTTL || ttl > feed.CodeTTL+2*time.Minute {
			t.Fatalf("code key PTTL = %v", ttl)
		}
		err := s.SaveCode(ctx, phone, "h2", past.Add(feed.CodeResendAfter-time.Millisecond), feed.CodeTTL, feed.CodeResendAfter)
		if feed.ErrorCode(err) != feed.ECONFLICT || feed.ErrorMessage(err) != "a code was sent less than 60 seconds ago; wait before asking again" {
			t.Fatalf("SaveCode within resendAfter: %v", err)
		}
		err = s.ConsumeCode(ctx, phone, "h1", past.Add(feed.CodeTTL), feed.CodeMaxTries)
		if feed.ErrorCode(err) != feed.EINVALID || feed.ErrorMessage(err) != "the code has expired or was not requested; ask for a new code" {
			t.Fatalf("ConsumeCode at expiry: %v", err)
		}
		err = s.ConsumeCode(ctx, phone, "h2", past.Add(time.Second), feed.CodeMaxTries)
		if feed.ErrorCode(err) != feed.EINVALID || feed.ErrorMessage(err) != "the code is wrong" {
			t.Fatalf("ConsumeCode of a wrong code: %v", err)
		}
		mustDo(t, s.ConsumeCode(ctx, phone, "h1", past.Add(feed.CodeTTL-time.Millisecond), feed.CodeMaxTries), "ConsumeCode")
		if n := rdb.Exists(ctx, redis.CodeKey(prefix, phone)).Val(); n != 0 {
			t.Fatal("a consumed code is still stored")
		}

		// A session created and read in 2001 works, and its key expires.
		mustDo(t, s.CreateSession(ctx, "tok", 77, past, past.Add(feed.SessionTTL)), "CreateSession")
		key := redis.SessionKey(prefix, "tok")
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 2*time.Minute {
			t.Fatalf("PTTL of a session that expired by the server's clock = %v", ttl)
		}
		id, err := s.Session(ctx, "tok", past.Add(time.Second), feed.SessionTTL)
		mustDo(t, err, "Session")
		if id != 77 {
			t.Fatalf("Session = %d, want 77", id)
		}
		// Within a minute of its last extension a session is not written.
		if ttl := rdb.PTTL(ctx, key).Val(); ttl > 2*time.Minute {
			t.Fatalf("Session extended the key within a minute: PTTL %v", ttl)
		}
		// Later it is, and the key lives ttl more (and a grace).
		_, err = s.Session(ctx, "tok", past.Add(20*time.Minute), feed.SessionTTL)
		mustDo(t, err, "Session")
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= feed.SessionTTL || ttl > feed.SessionTTL+2*time.Minute {
			t.Fatalf("PTTL after an extension = %v", ttl)
		}
		_, err = s.Session(ctx, "tok", past.Add(50*time.Minute-time.Millisecond), feed.SessionTTL)
		mustDo(t, err, "Session before the slid expiry")
		_, err = s.Session(ctx, "tok", past.Add(200*time.Minute), feed.SessionTTL)
		if feed.ErrorCode(err) != feed.EUNAUTHORIZED || feed.ErrorMessage(err) != "login required" {
			t.Fatalf("Session after expiry: %v", err)
		}
		// A session created now lives in Redis until its expiry (and a grace).
		mustDo(t, s.CreateSession(ctx, "tok2", 78, time.Now(), time.Now().Add(feed.SessionTTL)), "CreateSession")
		if ttl := rdb.PTTL(ctx, redis.SessionKey(prefix, "tok2")).Val(); ttl < feed.SessionTTL-time.Minute || ttl > feed.SessionTTL+2*time.Minute {
			t.Fatalf("PTTL of a new session = %v", ttl)
		}
	})
}

// TestNoScript checks that a server without the scripts cached (a restart,
// a failover) is served: the pipelined EVALSHAs are retried after a load.
func TestNoScript(t *testing.T) {
	forEachServerLayout(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string), opts redis.InboxOptions) {
		ctx := t.Context()
		rdb, prefix := open(t)
		ib := redis.NewInbox(rdb, withPrefix(opts, prefix, 1))
		users := make([]int64, 200)
		for i := range users {
			users[i] = int64(i + 1)
		}
		flush := func() {
			t.Helper()
			var err error
			switch c := rdb.(type) {
			case *goredis.ClusterClient:
				err = c.ForEachShard(ctx, func(ctx context.Context, c *goredis.Client) error { return c.ScriptFlush(ctx).Err() })
			default:
				err = rdb.ScriptFlush(ctx).Err()
			}
			mustDo(t, err, "SCRIPT FLUSH")
		}
		for id := int64(1); id <= 40; id++ {
			flush()
			mustDo(t, ib.Deliver(ctx, feed.Entry{PostID: id, Score: s0 + id}, users), "Deliver after SCRIPT FLUSH")
		}
		flush()
		mustDo(t, ib.Restore(ctx, 1, nil), "Restore after SCRIPT FLUSH")
		flush()
		mustDo(t, ib.Trim(ctx, 1, 1), "Trim after SCRIPT FLUSH")
		flush()
		wantEntries(t, "Page after SCRIPT FLUSH", pageAll(t, ib, 1), []feed.Entry{{PostID: 40, Score: s0 + 40}})
	})
}

// BenchmarkDeliver delivers one post to 1000 inboxes per op, in one pipeline,
// on the single node: the inner loop of fan-out.
func BenchmarkDeliver(b *testing.B) {
	rdb, prefix := openSingle(b)
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix})
	users := make([]int64, 1000)
	for i := range users {
		users[i] = int64(i + 1)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ib.Deliver(ctx, feed.Entry{PostID: int64(i + 1), Score: s0 + int64(i)}, users); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(users))/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkPage reads pages of 10 from a full inbox (feed.DefaultInboxCap entries):
// the first page, a deep one, and the worst case where every entry has the
// same score, so each page reads the whole tie group.
func BenchmarkPage(b *testing.B) {
	rdb, prefix := openSingle(b)
	ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix})
	ctx := context.Background()
	spread := make([]feed.Entry, feed.DefaultInboxCap)
	tied := make([]feed.Entry, feed.DefaultInboxCap)
	for i := range spread {
		spread[i] = feed.Entry{PostID: int64(1_000_000 + i), Score: s0 + int64(i)}
		tied[i] = feed.Entry{PostID: int64(1_000_000 + i), Score: s0}
	}
	if err := ib.Restore(ctx, 1, spread); err != nil {
		b.Fatal(err)
	}
	if err := ib.Restore(ctx, 2, tied); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		user   int64
		offset int
	}{{"first", 1, 0}, {"offset500", 1, 500}, {"tied", 2, 100}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				es, err := ib.Page(ctx, c.user, feed.AtMost(s0+feed.DefaultInboxCap), c.offset, 10)
				if err != nil || len(es) != 10 {
					b.Fatalf("Page: %d entries, %v", len(es), err)
				}
			}
		})
	}
}

// TestPackedBodyLost: a packed inbox whose body is lost (evicted) while its
// head survives reads as lost, like a lost sorted set, and is rebuilt by
// Restore; a head lost with its body surviving loses the body's entries too.
func TestPackedBodyLost(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		ctx := t.Context()
		rdb, prefix := open(t)
		ib := redis.NewInbox(rdb, redis.InboxOptions{Prefix: prefix, Layout: redis.LayoutPacked})
		const user = 42
		var entries []feed.Entry
		for i := int64(1); i <= 100; i++ {
			entries = append(entries, feed.Entry{PostID: i, Score: s0 + i/3})
		}
		mustDo(t, ib.Restore(ctx, user, entries), "Restore")
		if n := rdb.StrLen(ctx, redis.BodyKey(prefix, user)).Val(); n != redis.PackedHeaderSize+100*redis.PackedEntrySize {
			t.Fatalf("body of %d bytes after a Restore of 100, want %d", n, redis.PackedHeaderSize+100*redis.PackedEntrySize)
		}
		wantEntries(t, "restored", pageAll(t, ib, user), inOrder(entries))
		mustDo(t, rdb.Del(ctx, redis.BodyKey(prefix, user)).Err(), "DEL body")
		if _, err := ib.Page(ctx, user, feed.AtMost(s0*2), 0, 10); !errors.Is(err, feed.ErrInboxLost) {
			t.Fatalf("Page after the body was lost: %v, want feed.ErrInboxLost", err)
		}
		mustDo(t, ib.Trim(ctx, user, 5), "Trim an inbox whose body was lost")
		if _, err := ib.Page(ctx, user, feed.AtMost(s0*2), 0, 10); !errors.Is(err, feed.ErrInboxLost) {
			t.Fatalf("Page after Trim of a lost body: %v, want feed.ErrInboxLost", err)
		}
		mustDo(t, ib.Restore(ctx, user, entries[:50]), "Restore")
		wantEntries(t, "rebuilt", pageAll(t, ib, user), inOrder(entries[:50]))

		// The head lost, the body kept: the inbox is lost, and the rebuild
		// does not bring the old body's entries back.
		mustDo(t, rdb.Del(ctx, redis.PackedHeadKey(prefix, user)).Err(), "DEL head")
		if _, err := ib.Page(ctx, user, feed.AtMost(s0*2), 0, 10); !errors.Is(err, feed.ErrInboxLost) {
			t.Fatalf("Page after the head was lost: %v, want feed.ErrInboxLost", err)
		}
		mustDo(t, ib.Restore(ctx, user, entries[90:]), "Restore")
		wantEntries(t, "rebuilt after losing the head", pageAll(t, ib, user), inOrder(entries[90:]))
		n, err := ib.Len(ctx, user)
		mustDo(t, err, "Len")
		if n != 10 {
			t.Fatalf("Len = %d, want 10", n)
		}
	})
}

func TestFilters(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestFilters(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}

// TestReposts and TestPackedReposts run the reposts suite on both inbox
// layouts, on one node and on a Cluster.
func TestReposts(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestReposts(t, func(t *testing.T) *feedtest.Backend { return openBackend(t, open) })
	})
}

func TestPackedReposts(t *testing.T) {
	forEachServer(t, func(t *testing.T, open func(t testing.TB) (goredis.UniversalClient, string)) {
		feedtest.TestReposts(t, func(t *testing.T) *feedtest.Backend { return openBackendLayout(t, open, redis.LayoutPacked) })
	})
}
