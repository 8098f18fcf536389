package feedtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	feed "github.com/feedd/feedd"
)

// s0 is a realistic score (Unix milliseconds in 2023): backends that keep
// scores as float64 (Redis) hold it exactly.
const s0 = 1_700_000_000_000

// mixedIDs are ids of different decimal lengths. Sorted as strings they are
// in a different order than as numbers, which is the trap of a Redis sorted
// set: equal scores are ordered by member bytes.
var mixedIDs = []int64{7, 42, 100, 999, 1000, 123456789}

// TestInbox runs the contract of feed.Inbox. open must return an empty inbox
// on every call (a fresh database, or a key prefix of its own) that keeps
// cap entries per user, or the implementation's default cap when cap is 0.
// slack is the implementation's bound on how many entries over cap an inbox
// holds between two of the trims that keep the cap (a hard bound, or one
// that holds with overwhelming probability, for the suite's fixed ids).
func TestInbox(t *testing.T, open func(t *testing.T, cap int) feed.Inbox, slack func(cap int) int) {
	dflt := func(t *testing.T) feed.Inbox { return open(t, 0) }
	t.Run("Empty", func(t *testing.T) { testInboxEmpty(t, dflt(t)) })
	t.Run("DeliverIdempotent", func(t *testing.T) { testInboxDeliverIdempotent(t, dflt(t)) })
	t.Run("DeliverMany", func(t *testing.T) { testInboxDeliverMany(t, dflt(t)) })
	t.Run("AddIdempotent", func(t *testing.T) { testInboxAdd(t, dflt(t)) })
	t.Run("Remove", func(t *testing.T) { testInboxRemove(t, dflt(t)) })
	t.Run("Clear", func(t *testing.T) { testInboxClear(t, dflt(t)) })
	t.Run("Page", func(t *testing.T) { testInboxPage(t, dflt(t)) })
	t.Run("TieOrder", func(t *testing.T) { testInboxTieOrder(t, dflt(t)) })
	t.Run("Trim", func(t *testing.T) { testInboxTrim(t, dflt(t)) })
	t.Run("Random", func(t *testing.T) { testInboxRandom(t, dflt(t)) })
	t.Run("Cap", func(t *testing.T) { testInboxCap(t, open, slack) })
}

// page reads a page and fails t on error.
func page(t testing.TB, ib feed.Inbox, userID, max int64, offset, limit int) []feed.Entry {
	t.Helper()
	es, err := ib.Page(context.Background(), userID, feed.AtMost(max), offset, limit)
	if err != nil {
		t.Fatalf("Page(user %d, max %d, offset %d, limit %d): %v", userID, max, offset, limit, err)
	}
	return es
}

// all reads userID's whole inbox (up to 100000 entries).
func all(t testing.TB, ib feed.Inbox, userID int64) []feed.Entry {
	t.Helper()
	return page(t, ib, userID, maxScore, 0, 100000)
}

// maxScore is above every score the suites use, and exact as a float64.
const maxScore = 1 << 52

func wantInbox(t testing.TB, ib feed.Inbox, userID int64, want []feed.Entry) {
	t.Helper()
	if got := all(t, ib, userID); !slices.Equal(got, want) {
		t.Fatalf("inbox of user %d:\n got %s\nwant %s", userID, fmtEntries(got), fmtEntries(want))
	}
}

func testInboxEmpty(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	for _, u := range mixedIDs {
		if es := page(t, ib, u, maxScore, 0, 10); len(es) != 0 {
			t.Fatalf("empty inbox of user %d: Page returned %s", u, fmtEntries(es))
		}
	}
	e := feed.Entry{PostID: 1000, Score: s0}
	must(t, ib.Deliver(ctx, e, nil), "Deliver to no users")
	must(t, ib.Deliver(ctx, e, []int64{}), "Deliver to an empty list")
	must(t, ib.Add(ctx, 42, nil), "Add no entries")
	must(t, ib.Remove(ctx, e, []int64{42, 7}), "Remove from empty inboxes")
	must(t, ib.Remove(ctx, e, nil), "Remove from no users")
	must(t, ib.Trim(ctx, 42, 10), "Trim an empty inbox")
	must(t, ib.Trim(ctx, 42, 0), "Trim an empty inbox to 0")
	for _, u := range mixedIDs {
		wantInbox(t, ib, u, nil)
	}
	// One user's entry is in no one else's inbox.
	must(t, ib.Deliver(ctx, e, []int64{7}), "Deliver")
	wantInbox(t, ib, 7, []feed.Entry{e})
	for _, u := range mixedIDs[1:] {
		wantInbox(t, ib, u, nil)
	}
	if es := page(t, ib, 7, s0-1, 0, 10); len(es) != 0 {
		t.Fatalf("Page below every score returned %s", fmtEntries(es))
	}
	if es := page(t, ib, 7, maxScore, 1, 10); len(es) != 0 {
		t.Fatalf("Page past the end returned %s", fmtEntries(es))
	}
}

func testInboxDeliverIdempotent(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	e := feed.Entry{PostID: 1000, Score: s0}
	f := feed.Entry{PostID: 999, Score: s0}
	must(t, ib.Deliver(ctx, e, []int64{7, 42}), "Deliver")
	must(t, ib.Deliver(ctx, e, []int64{7, 42}), "Deliver again")
	must(t, ib.Deliver(ctx, e, []int64{42, 100}), "Deliver to an overlapping audience")
	must(t, ib.Deliver(ctx, e, []int64{999, 999, 999}), "Deliver with a repeated user")
	must(t, ib.Deliver(ctx, f, []int64{42}), "Deliver a second post")
	must(t, ib.Deliver(ctx, f, []int64{42}), "Deliver the second post again")
	wantInbox(t, ib, 7, []feed.Entry{e})
	wantInbox(t, ib, 42, []feed.Entry{e, f})
	wantInbox(t, ib, 100, []feed.Entry{e})
	wantInbox(t, ib, 999, []feed.Entry{e})
	wantInbox(t, ib, 1000, nil)
}

func testInboxDeliverMany(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	const n = 5000
	users := make([]int64, n)
	evens := []int64{}
	for i := range users {
		users[i] = int64(i + 1)
		if users[i]%2 == 0 {
			evens = append(evens, users[i])
		}
	}
	e := feed.Entry{PostID: 123456789, Score: s0 + 1}
	f := feed.Entry{PostID: 42, Score: s0 + 1}
	must(t, ib.Deliver(ctx, e, users), "Deliver to 5000 users")
	must(t, ib.Deliver(ctx, f, evens), "Deliver to 2500 users")
	must(t, ib.Deliver(ctx, e, users), "Deliver to 5000 users again")
	check := []int64{1, 2, 7, 42, 99, 100, 999, 1000, 2500, 4998, 4999, 5000}
	for i := int64(3); i < n; i += 97 {
		check = append(check, i)
	}
	for _, u := range check {
		want := []feed.Entry{e}
		if u%2 == 0 {
			want = append(want, f)
		}
		wantInbox(t, ib, u, want)
	}
	wantInbox(t, ib, 0, nil)
	wantInbox(t, ib, n+1, nil)
	must(t, ib.Remove(ctx, e, users), "Remove from 5000 users")
	for _, u := range check {
		var want []feed.Entry
		if u%2 == 0 {
			want = []feed.Entry{f}
		}
		wantInbox(t, ib, u, want)
	}
}

func testInboxAdd(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	a := feed.Entry{PostID: 100, Score: s0 + 2}
	b := feed.Entry{PostID: 7, Score: s0 + 1}
	c := feed.Entry{PostID: 1000, Score: s0 + 1}
	d := feed.Entry{PostID: 999, Score: s0}
	must(t, ib.Add(ctx, 42, []feed.Entry{a, b, c}), "Add")
	must(t, ib.Add(ctx, 42, []feed.Entry{b, c, d}), "Add overlapping entries")
	must(t, ib.Add(ctx, 42, []feed.Entry{a}), "Add an entry again")
	must(t, ib.Add(ctx, 42, []feed.Entry{d, d}), "Add a repeated entry")
	must(t, ib.Deliver(ctx, a, []int64{42, 7}), "Deliver an added entry")
	wantInbox(t, ib, 42, []feed.Entry{a, c, b, d})
	wantInbox(t, ib, 7, []feed.Entry{a})
	wantInbox(t, ib, 100, nil)
}

// testInboxClear: Clear empties one inbox (an erased user's), leaves the
// others, and is idempotent. A cleared inbox reads empty or as lost (a
// Redis inbox, which a read would rebuild).
func testInboxClear(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	e1 := feed.Entry{PostID: 10, Score: s0 + 1}
	e2 := feed.Entry{PostID: 11, Score: s0 + 2}
	for _, e := range []feed.Entry{e1, e2} {
		must(t, ib.Deliver(ctx, e, []int64{7, 8}), "Deliver")
	}
	must(t, ib.Clear(ctx, 7), "Clear")
	must(t, ib.Clear(ctx, 7), "Clear again")
	must(t, ib.Clear(ctx, 123456), "Clear an inbox never written")
	es, err := ib.Page(ctx, 7, feed.AtMost(maxScore), 0, 100)
	if (err != nil && !errors.Is(err, feed.ErrInboxLost)) || len(es) != 0 {
		t.Fatalf("a cleared inbox reads %s, %v", fmtEntries(es), err)
	}
	wantInbox(t, ib, 8, []feed.Entry{e2, e1})
}

func testInboxRemove(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	e1 := feed.Entry{PostID: 1000, Score: s0 + 1}
	e2 := feed.Entry{PostID: 999, Score: s0 + 1}
	e3 := feed.Entry{PostID: 42, Score: s0}
	for _, e := range []feed.Entry{e1, e2, e3} {
		must(t, ib.Deliver(ctx, e, []int64{7, 42, 100}), "Deliver")
	}
	must(t, ib.Remove(ctx, e2, []int64{7, 42}), "Remove")
	wantInbox(t, ib, 7, []feed.Entry{e1, e3})
	wantInbox(t, ib, 42, []feed.Entry{e1, e3})
	wantInbox(t, ib, 100, []feed.Entry{e1, e2, e3})
	must(t, ib.Remove(ctx, e2, []int64{7}), "Remove an entry already removed")
	must(t, ib.Remove(ctx, feed.Entry{PostID: 555, Score: s0 + 1}, []int64{7, 123456789}), "Remove an entry never delivered")
	must(t, ib.Remove(ctx, e1, nil), "Remove from no users")
	wantInbox(t, ib, 7, []feed.Entry{e1, e3})
	wantInbox(t, ib, 100, []feed.Entry{e1, e2, e3})
	must(t, ib.Remove(ctx, e3, []int64{7, 42, 100, 1000}), "Remove from some inboxes without it")
	wantInbox(t, ib, 7, []feed.Entry{e1})
	wantInbox(t, ib, 42, []feed.Entry{e1})
	wantInbox(t, ib, 100, []feed.Entry{e1, e2})
	// A removed entry can be delivered again (a post is never re-published,
	// but a retried fan-out after a removal must not be refused).
	must(t, ib.Deliver(ctx, e3, []int64{7}), "Deliver after Remove")
	wantInbox(t, ib, 7, []feed.Entry{e1, e3})
}

// pageFixture is one inbox with ties of mixed-length ids, and its feed order.
func pageFixture() (entries, order []feed.Entry) {
	entries = []feed.Entry{{PostID: 3, Score: s0}, {PostID: 8, Score: s0 + 1}, {PostID: 1001, Score: s0 + 1}, {PostID: 5, Score: s0 + 3}}
	for _, id := range mixedIDs {
		entries = append(entries, feed.Entry{PostID: id, Score: s0 + 2})
	}
	order = []feed.Entry{
		{PostID: 5, Score: s0 + 3},
		{PostID: 123456789, Score: s0 + 2},
		{PostID: 1000, Score: s0 + 2},
		{PostID: 999, Score: s0 + 2},
		{PostID: 100, Score: s0 + 2},
		{PostID: 42, Score: s0 + 2},
		{PostID: 7, Score: s0 + 2},
		{PostID: 1001, Score: s0 + 1},
		{PostID: 8, Score: s0 + 1},
		{PostID: 3, Score: s0},
	}
	return entries, order
}

func testInboxPage(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	entries, order := pageFixture()
	const user = 42
	// Delivered one by one in an order unrelated to the feed order.
	for _, i := range []int{5, 0, 9, 2, 7, 1, 4, 8, 3, 6} {
		must(t, ib.Deliver(ctx, entries[i], []int64{user, 1000}), "Deliver")
	}
	wantInbox(t, ib, user, order)
	cases := []struct {
		max           int64
		offset, limit int
		want          []feed.Entry
	}{
		{maxScore, 0, 3, order[:3]},
		{s0 + 3, 0, 10, order},
		{s0 + 2, 0, 10, order[1:]},             // max is inclusive
		{s0 + 2, 3, 2, order[4:6]},             // skip within a tie group
		{s0 + 2, 6, 2, order[7:9]},             // skip a whole tie group
		{s0 + 1, 0, 1, order[7:8]},             // highest id of the group first
		{s0 + 1, 2, 5, order[9:]},              // short last page
		{s0, 1, 5, nil},                        // past the end
		{s0 - 1, 0, 5, nil},                    // below every score
		{math.MaxInt32, 0, 5, nil},             // a small max (1970)
		{s0 + 2, 0, 100, order[1:]},            // limit larger than the rest
		{s0 + 2, 100, 100, nil},                // offset larger than the rest
		{s0 + 1000, 9, 1, order[9:]},           // max between scores
		{s0 + 2, 5, 1, []feed.Entry{order[6]}}, // the lowest id of the group
	}
	for _, c := range cases {
		got := page(t, ib, user, c.max, c.offset, c.limit)
		if !slices.Equal(got, c.want) {
			t.Errorf("Page(max %d, offset %d, limit %d):\n got %s\nwant %s", c.max, c.offset, c.limit, fmtEntries(got), fmtEntries(c.want))
		}
	}
	// Every (max, offset, limit) against the model.
	m := NewModel()
	must(t, m.Add(ctx, user, entries), "model Add")
	for max := int64(s0 - 1); max <= s0+4; max++ {
		for offset := 0; offset <= len(order)+1; offset++ {
			for limit := 1; limit <= len(order)+1; limit++ {
				want, _ := m.Page(ctx, user, feed.AtMost(max), offset, limit)
				if got := page(t, ib, user, max, offset, limit); !slices.Equal(got, want) {
					t.Fatalf("Page(max %d, offset %d, limit %d):\n got %s\nwant %s", max, offset, limit, fmtEntries(got), fmtEntries(want))
				}
			}
		}
	}
}

// tieIDs returns ids of every decimal length from 1 to 12 digits.
func tieIDs() []int64 {
	var ids []int64
	for p := int64(1); p <= 100_000_000_000; p *= 10 {
		ids = append(ids, p, p+1, 2*p+3, 9*p+p-1)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func testInboxTieOrder(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	ids := tieIDs()
	var entries []feed.Entry
	for _, id := range ids {
		entries = append(entries, feed.Entry{PostID: id, Score: s0})
	}
	// A neighbour score on each side, so a Page crosses group boundaries.
	entries = append(entries, feed.Entry{PostID: 6, Score: s0 + 1}, feed.Entry{PostID: 50, Score: s0 - 1})
	const user = 123456789
	for i, e := range entries {
		if i%2 == 0 {
			must(t, ib.Deliver(ctx, e, []int64{user}), "Deliver")
		} else {
			must(t, ib.Add(ctx, user, []feed.Entry{e}), "Add")
		}
	}
	want := slices.Clone(entries)
	SortEntries(want)
	wantInbox(t, ib, user, want)
	// Paged through the tie group with a small page.
	for _, limit := range []int{1, 7, 10} {
		var got []feed.Entry
		for off := 0; ; off += limit {
			es := page(t, ib, user, s0, off, limit)
			got = append(got, es...)
			if len(es) < limit {
				break
			}
		}
		if !slices.Equal(got, want[1:]) {
			t.Fatalf("paged with limit %d:\n got %s\nwant %s", limit, fmtEntries(got), fmtEntries(want[1:]))
		}
	}
}

func testInboxTrim(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	entries, order := pageFixture()
	must(t, ib.Add(ctx, 42, entries), "Add")
	must(t, ib.Add(ctx, 7, entries), "Add")
	must(t, ib.Trim(ctx, 42, len(order)), "Trim to the current size")
	wantInbox(t, ib, 42, order)
	must(t, ib.Trim(ctx, 42, 100), "Trim to a larger cap")
	wantInbox(t, ib, 42, order)
	// The cut falls inside the tie group: the higher ids stay.
	must(t, ib.Trim(ctx, 42, 4), "Trim")
	wantInbox(t, ib, 42, order[:4])
	must(t, ib.Trim(ctx, 42, 4), "Trim again")
	wantInbox(t, ib, 42, order[:4])
	wantInbox(t, ib, 7, order) // other inboxes are untouched
	must(t, ib.Trim(ctx, 7, 6), "Trim")
	wantInbox(t, ib, 7, order[:6])
	must(t, ib.Trim(ctx, 7, 1), "Trim to one")
	wantInbox(t, ib, 7, order[:1])
	must(t, ib.Trim(ctx, 42, 0), "Trim to zero")
	wantInbox(t, ib, 42, nil)
	// Entries added after a trim are kept by the next one only if newest.
	must(t, ib.Add(ctx, 7, entries), "Add after Trim")
	wantInbox(t, ib, 7, order)
	must(t, ib.Trim(ctx, 7, 8), "Trim")
	wantInbox(t, ib, 7, order[:8])
}

// testInboxRandom runs random operations on the inbox and on the model and
// compares every read. Every post has one score, as in the domain, and the
// scores are few so that ties are the rule.
func testInboxRandom(t *testing.T, ib feed.Inbox) {
	ctx := t.Context()
	r := newRand(t)
	m := NewModel()
	scores := []int64{s0, s0 + 1, s0 + 2, s0 + 1000, s0 + 1001}
	posts := []feed.Entry{}
	ids := append(tieIDs(), 2, 3, 9, 11, 55, 99, 101, 998, 1001, 5000, 77777)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) { // one score per post
		posts = append(posts, feed.Entry{PostID: id, Score: scores[r.IntN(len(scores))]})
	}
	users := mixedIDs
	someUsers := func() []int64 {
		var out []int64
		for _, u := range users {
			if r.IntN(2) == 0 {
				out = append(out, u)
			}
		}
		return out
	}
	somePosts := func(n int) []feed.Entry {
		out := make([]feed.Entry, n)
		for i := range out {
			out[i] = posts[r.IntN(len(posts))]
		}
		return out
	}
	const ops = 1500
	for op := 0; op < ops; op++ {
		u := users[r.IntN(len(users))]
		switch k := r.IntN(100); {
		case k < 30:
			e, us := posts[r.IntN(len(posts))], someUsers()
			must(t, ib.Deliver(ctx, e, us), "Deliver")
			m.Deliver(ctx, e, us)
		case k < 45:
			es := somePosts(1 + r.IntN(8))
			must(t, ib.Add(ctx, u, es), "Add")
			m.Add(ctx, u, es)
		case k < 60:
			e, us := posts[r.IntN(len(posts))], someUsers()
			must(t, ib.Remove(ctx, e, us), "Remove")
			m.Remove(ctx, e, us)
		case k < 64:
			cap := r.IntN(40)
			must(t, ib.Trim(ctx, u, cap), "Trim")
			m.Trim(ctx, u, cap)
		default:
			max := scores[r.IntN(len(scores))] + int64(r.IntN(3)-1)
			if r.IntN(5) == 0 {
				max = maxScore
			}
			offset, limit := r.IntN(40), 1+r.IntN(50)
			if r.IntN(3) == 0 {
				offset = 0
			}
			want, _ := m.Page(ctx, u, feed.AtMost(max), offset, limit)
			if got := page(t, ib, u, max, offset, limit); !slices.Equal(got, want) {
				t.Fatalf("operation %d: Page(user %d, max %d, offset %d, limit %d):\n got %s\nwant %s",
					op, u, max, offset, limit, fmtEntries(got), fmtEntries(want))
			}
		}
	}
	for _, u := range users {
		wantInbox(t, ib, u, m.All(u))
	}
}

// testInboxCap: an inbox keeps its cap. 130 posts are delivered one by one
// with a cap of 50 (scores rising, three posts a millisecond, ids crossing
// 10, 100 and 1000 so that ties are cut by numeric id) to users of whom one
// gets every other post, some deliveries retried. After every delivery each
// inbox holds the newest entries it was sent, in feed order: at least
// min(cap, sent) and at most cap + slack(cap) of them. Restore and Add of
// 130 entries keep the cap too, and Trim still cuts exactly.
func testInboxCap(t *testing.T, open func(t *testing.T, cap int) feed.Inbox, slack func(cap int) int) {
	ctx := t.Context()
	const cap, posts = 50, 130
	ib := open(t, cap)
	most := cap + slack(cap)
	users := []int64{7, 42, 1000, 123456789}
	sent := map[int64][]feed.Entry{}
	check := func(what string, u int64) {
		t.Helper()
		want := slices.Clone(sent[u])
		SortEntries(want)
		got := all(t, ib, u)
		if n := len(got); n < min(cap, len(want)) || n > most || !slices.Equal(got, want[:min(n, len(want))]) {
			t.Fatalf("%s: inbox of user %d holds %d entries; cap %d, slack %d, %d sent\n got %s\nwant the first of %s",
				what, u, n, cap, most-cap, len(want), fmtEntries(got), fmtEntries(want))
		}
	}
	var all130 []feed.Entry
	for i := 1; i <= posts; i++ {
		e := feed.Entry{PostID: int64(7 * i), Score: s0 + int64(i/3)}
		all130 = append(all130, e)
		to := users[:3]
		if i%2 == 0 {
			to = users
		}
		must(t, ib.Deliver(ctx, e, to), "Deliver")
		for _, u := range to {
			sent[u] = append(sent[u], e)
		}
		if i%5 == 0 { // a retried fan-out: the same entry again
			must(t, ib.Deliver(ctx, e, to), "Deliver again")
		}
		for _, u := range users {
			check(fmt.Sprintf("after %d posts", i), u)
		}
	}
	for _, u := range users {
		if n := len(all(t, ib, u)); n > most {
			t.Fatalf("user %d holds %d entries, more than cap %d + slack %d", u, n, cap, most-cap)
		}
	}

	// Rebuilt or backfilled with more than the cap: the newest are kept.
	const rebuilt, added = 555, 5555
	slices.Reverse(all130) // newest first, as a rebuild reads them
	must(t, ib.Restore(ctx, rebuilt, all130), "Restore")
	sent[rebuilt] = all130
	check("after Restore of 130 entries", rebuilt)
	older := make([]feed.Entry, posts)
	for i := range older {
		older[i] = feed.Entry{PostID: int64(100_000 + i), Score: s0 - 1000 + int64(i/4)}
	}
	must(t, ib.Add(ctx, added, all130[:20]), "Add")
	must(t, ib.Add(ctx, added, older), "Add older entries")
	sent[added] = append(slices.Clone(all130[:20]), older...)
	check("after Add of 20, then 130 older entries", added)

	// An exact Trim still cuts where it is told.
	for _, u := range []int64{7, rebuilt} {
		must(t, ib.Trim(ctx, u, cap), "Trim")
		want := slices.Clone(sent[u])
		SortEntries(want)
		wantInbox(t, ib, u, want[:cap])
	}
}
