package sqlite

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

// headEntries returns h's entries.
func headEntries(h packedHead) []feed.Entry {
	out := make([]feed.Entry, h.len())
	for i := range out {
		out[i] = h.at(i)
	}
	return out
}

// checkHead fails unless h is a head of top t of the inbox whose entries,
// in feed order, are all: its entries are the newest of those at or below
// t, at most max of them, and all of them when it says it is whole.
func checkHead(t *testing.T, what string, h packedHead, top feed.Entry, all []feed.Entry, max int) {
	t.Helper()
	below := all[slices.IndexFunc(append(all, top), func(e feed.Entry) bool { return !e.Before(top) }):]
	es := headEntries(h)
	if len(es) > max || len(es) > len(below) || !slices.Equal(es, below[:len(es)]) || (h.whole() && len(es) != len(below)) {
		t.Fatalf("%s: head (top %v, whole %v, max %d) %v; inbox %v", what, top, h.whole(), max, es, all)
	}
}

// wantPage is the page of the inbox all within b after offset.
func wantPage(all []feed.Entry, b feed.Bound, offset, limit int) []feed.Entry {
	var want []feed.Entry
	for _, e := range all {
		if b.Admits(e) {
			want = append(want, e)
		}
	}
	want = want[min(offset, len(want)):]
	return want[:min(limit, len(want))]
}

// TestPackedHead: an inbox kept as a sorted list, with a head kept as the
// triggers keep it: deliveries above its top, joins of the entries above
// (or a build when the join says the head is short), removals, builds.
// After each, the head is the newest entries at or below its top, and
// every page the head and the entries above it answer is the inbox's; they
// answer every page within them. Scores and ids take both signs and the
// extremes (the packed bytes compare as the integers).
func TestPackedHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []int64{math.MinInt64 + 1, -5, -1, 0, 1, 2, 3, 1000, math.MaxInt64 - 1, math.MaxInt64}
	entry := func() feed.Entry {
		return feed.Entry{Score: vals[rng.IntN(len(vals))], PostID: vals[rng.IntN(len(vals))]}
	}
	build := func(all []feed.Entry, m int) packedHead {
		return newHead(all[:min(m, len(all))], len(all) <= m)
	}
	answered, joined, short := 0, 0, 0
	for round := range 400 {
		hmax := 2 + rng.IntN(6)
		var all []feed.Entry
		h := build(nil, hmax)
		top := h.top()
		for op := range 60 {
			what := fmt.Sprintf("round %d op %d", round, op)
			switch k := rng.IntN(10); {
			case k < 4: // a delivery
				e := entry()
				if _, found := slices.BinarySearchFunc(all, e, feed.CompareEntries); !found {
					all = feed.MergeEntries(all, []feed.Entry{e})
				}
				if !e.Before(top) { // at or below the top: built again
					h = build(all, hmax)
					top = h.top()
				}
			case k < 6: // the refresh
				var above []feed.Entry
				for _, e := range all {
					if e.Before(top) {
						above = append(above, e)
					}
				}
				if j := join(build(above, hmax), h, hmax); j != nil {
					h = j
					joined++
				} else {
					h = build(all, hmax)
					short++
				}
				top = h.top()
			case k < 9:
				e := entry()
				if rng.IntN(3) > 0 && len(all) > 0 {
					e = all[rng.IntN(len(all))]
				}
				h = h.del(e)
				all = slices.DeleteFunc(all, func(x feed.Entry) bool { return x == e })
			default:
				h = build(all, hmax)
				top = h.top()
			}
			checkHead(t, what, h, top, all, hmax)
			b := feed.Bound{Max: vals[rng.IntN(len(vals))]}
			if rng.IntN(2) == 0 {
				b.BeforeID = vals[rng.IntN(len(vals))]
			}
			offset, limit := rng.IntN(3), 1+rng.IntN(4)
			var above []feed.Entry
			for _, e := range all {
				if e.Before(top) && b.Admits(e) {
					above = append(above, e)
				}
			}
			got, ok := h.pageAbove(above, b, offset, limit)
			want := wantPage(all, b, offset, limit)
			if ok {
				answered++
				if !slices.Equal(got, want) {
					t.Fatalf("%s: page(%+v, %d, %d) = %v, want %v; above %v head %v", what, b, offset, limit, got, want, above, headEntries(h))
				}
			} else if start := slices.IndexFunc(all, func(e feed.Entry) bool { return b.Admits(e) && !e.Before(top) }); start >= 0 &&
				max(offset-len(above), 0)+limit <= h.len() && h.whole() {
				t.Fatalf("%s: page(%+v, %d, %d) within a whole head not answered", what, b, offset, limit)
			}
		}
	}
	if answered == 0 || joined == 0 || short == 0 {
		t.Fatalf("pages answered %d, joins %d, joins short %d: the test did not reach every case", answered, joined, short)
	}
}

// TestInboxHeads: random deliveries (some late, below the head's top),
// backfills, removals, trims (explicit, and those of a cap of 250) and
// restores through Inbox; after each, every inbox's head (unless it is to
// be built) is the newest of its rows at or below its top, and random
// pages read through Inbox are the rows'. The test fails unless it saw
// heads that are whole, heads that are not and heads to be built.
func TestInboxHeads(t *testing.T) {
	ctx := t.Context()
	db, err := OpenOptions(ctx, t.TempDir(), Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ib := &Inbox{DB: db, Cap: 250}
	rng := rand.New(rand.NewPCG(5, 6))
	users := []int64{1, 2, 3, 4}
	some := func() []int64 {
		var out []int64
		for _, u := range users {
			if rng.IntN(2) == 0 {
				out = append(out, u)
			}
		}
		return out
	}
	clock := int64(1_000_000)
	entry := func() feed.Entry {
		clock += int64(rng.IntN(3))
		s := clock
		if rng.IntN(8) == 0 { // late
			s -= int64(rng.IntN(400))
		}
		return feed.Entry{Score: s, PostID: s*10 + int64(rng.IntN(3))}
	}
	rows := func(u int64) []feed.Entry {
		var s, p sql.NullString
		must(t, db.Read.QueryRowContext(ctx, `SELECT group_concat(score), group_concat(post_id) FROM inbox WHERE user_id = ?`, u).Scan(&s, &p))
		all, err := parseEntries(s.String, p.String, 0)
		must(t, err)
		return all
	}
	var whole, part, pending int
	for op := range 800 {
		u := users[rng.IntN(len(users))]
		var what string
		switch k := rng.IntN(40); {
		case k < 30:
			e, us := entry(), some()
			what = fmt.Sprintf("Deliver(%v, %v)", e, us)
			must(t, ib.Deliver(ctx, e, us))
		case k < 32:
			es := []feed.Entry{entry(), entry(), entry()}
			what = fmt.Sprintf("Add(%d, %v)", u, es)
			must(t, ib.Add(ctx, u, es))
		case k < 33:
			es := []feed.Entry{entry()}
			what = fmt.Sprintf("Restore(%d, %v)", u, es)
			must(t, ib.Restore(ctx, u, es))
		case k < 39:
			e := entry()
			if all := rows(u); len(all) > 0 && rng.IntN(4) > 0 {
				e = all[rng.IntN(len(all))]
			}
			us := some()
			what = fmt.Sprintf("Remove(%v, %v)", e, us)
			must(t, ib.Remove(ctx, e, us))
		default:
			c := 150 + rng.IntN(150)
			what = fmt.Sprintf("Trim(%d, %d)", u, c)
			must(t, ib.Trim(ctx, u, c))
		}
		for _, u := range users {
			all := rows(u)
			var top feed.Entry
			var ts, tp sql.NullInt64
			var h []byte
			err := db.Read.QueryRowContext(ctx, `SELECT t.head_score, t.head_post, h.head FROM inbox_trim t
				LEFT JOIN inbox_head h USING (user_id) WHERE t.user_id = ?`, u).Scan(&ts, &tp, &h)
			if err == sql.ErrNoRows {
				if len(all) > 0 {
					t.Fatalf("op %d %s: user %d has entries and no inbox_trim row", op, what, u)
				}
				continue
			}
			must(t, err)
			if !ts.Valid { // head_score cleared or never set
				pending++ // to be built within headBuild deliveries
			} else if !ts.Valid || !tp.Valid || !validHead(h) {
				t.Fatalf("op %d %s: user %d: head top (%v, %v), head %x", op, what, u, ts, tp, h)
			} else {
				top = feed.Entry{Score: ts.Int64, PostID: tp.Int64}
				checkHead(t, fmt.Sprintf("op %d %s: user %d", op, what, u), h, top, all, headMax)
				if packedHead(h).whole() {
					whole++
				} else {
					part++
				}
			}
			if u != users[op%len(users)] {
				continue // one user's pages an operation
			}
			b := feed.Top()
			if len(all) > 0 && rng.IntN(2) == 0 {
				b = feed.After(all[rng.IntN(len(all))])
			}
			offset, limit := rng.IntN(20), 1+rng.IntN(160)
			got, err := ib.Page(ctx, u, b, offset, limit)
			must(t, err)
			if want := wantPage(all, b, offset, limit); !slices.Equal(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Fatalf("op %d %s: user %d: Page(%+v, %d, %d) = %v, want %v", op, what, u, b, offset, limit, got, want)
			}
		}
	}
	if whole == 0 || part == 0 || pending == 0 {
		t.Fatalf("heads seen: %d whole, %d not, %d to be built: the test did not reach every case", whole, part, pending)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The triggers of migration 007_inbox_head.sql (of feedd.db and inbox.db
// both) write headMax and headRefresh as numbers: they are this package's.
func TestInboxHeadMigration(t *testing.T) {
	for _, name := range []string{"migrations/007_inbox_head.sql"} {
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(body)
		for _, want := range []string{
			fmt.Sprintf("feedd_head(score, post_id, %d)", headMax),
			fmt.Sprintf("LIMIT %d)", headMax+1),
			fmt.Sprintf("new.room %% %d = 0 OR (new.head_score IS NULL AND (new.head_post IS NOT NULL OR new.room %% %d = 0))", headRefresh, headBuild),
			fmt.Sprintf("(SELECT head FROM inbox_head WHERE user_id = new.user_id), %d)", headMax),
		} {
			if !strings.Contains(s, want) {
				t.Errorf("%s has no %q", name, want)
			}
		}
	}
}
