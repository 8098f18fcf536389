package feed

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRankCacheRace checks the rule of rankCache's puts: what a read saw
// before a change to its post or viewer is not kept as fresh, even when a
// later read stored meanwhile; a change to another post or viewer spoils
// nothing.
func TestRankCacheRace(t *testing.T) {
	var c rankCache
	now := time.UnixMilli(1_800_000_000_000)
	post := func(id int64) []RankCandidate {
		return []RankCandidate{{PostID: id, AuthorID: 9, Score: 1, Likes: 3}}
	}
	lookup := func(u int64, ids []int64, facts []rankFact, fr []bool) (*rankViewer, rankToken) {
		v, tok := c.lookupViewer(u)
		c.lookupPosts(ids, now, facts, fr)
		return v, tok
	}
	fresh := func(id int64) bool {
		facts, fr := make([]rankFact, 1), make([]bool, 1)
		lookup(1, []int64{id}, facts, fr)
		return fr[0]
	}
	viewer := func(u int64) bool {
		v, _ := lookup(u, nil, nil, nil)
		return v != nil
	}
	entry := func() *rankViewer { return &rankViewer{expires: now.Add(time.Minute), follows: map[int64]time.Time{}} }

	// Post 10: a read, then a like, then the read's put: stale.
	_, tok := lookup(1, []int64{10}, make([]rankFact, 1), make([]bool, 1))
	c.liked(2, 10)
	c.putPosts(post(10), now, time.Minute, tok)
	if fresh(10) {
		t.Fatal("a count read before a like is fresh")
	}
	// A read after the like stores a fresh count; the older read then
	// puts again: still the newer read's answer holds, but the older one
	// must not refresh it.
	_, tok2 := lookup(1, []int64{10}, make([]rankFact, 1), make([]bool, 1))
	c.putPosts(post(10), now, time.Minute, tok2)
	if !fresh(10) {
		t.Fatal("a count read after the like is stale")
	}
	c.putPosts(post(10), now, time.Minute, tok)
	if fresh(10) {
		t.Fatal("a read from before the like made the count fresh again")
	}
	// A like of another post spoils nothing.
	_, tok3 := lookup(1, []int64{11}, make([]rankFact, 1), make([]bool, 1))
	c.liked(2, 12)
	c.putPosts(post(11), now, time.Minute, tok3)
	if !fresh(11) {
		t.Fatal("a like of another post made post 11's count stale")
	}

	// Viewers: a read of 1, then 1 follows someone: not kept; a change to
	// viewer 3 does not stop viewer 4's entry.
	_, tok = lookup(1, nil, nil, nil)
	c.followed(1)
	c.putViewer(1, entry(), tok)
	if viewer(1) {
		t.Fatal("a viewer entry read before a follow was kept")
	}
	_, tok = lookup(1, nil, nil, nil)
	c.putViewer(1, entry(), tok)
	if !viewer(1) {
		t.Fatal("a viewer entry read after the follow was not kept")
	}
	_, tok = lookup(4, nil, nil, nil)
	c.followed(3)
	c.putViewer(4, entry(), tok)
	if !viewer(4) {
		t.Fatal("a change to viewer 3 stopped viewer 4's entry")
	}
	// Candidates go into the entry a page found, not into one a change
	// (or another page) put since.
	v4, _ := lookup(4, nil, nil, nil)
	cands := []Entry{{PostID: 7, Score: 7}}
	c.putCands(4, v4, cands, 150)
	if v, _ := lookup(4, nil, nil, nil); v == v4 || !sameEntries(v.cands, cands) || v.candsN != 150 {
		t.Fatalf("putCands: entry %+v", v)
	}
	stale, _ := lookup(4, nil, nil, nil)
	c.followed(4)
	c.putCands(4, stale, []Entry{{PostID: 8, Score: 8}}, 150)
	if viewer(4) {
		t.Fatal("candidates found before a follow were kept")
	}

	// A block marks both viewers and every count.
	_, tok = lookup(4, nil, nil, nil)
	c.putViewer(4, entry(), tok)
	c.blocked(4, 5)
	if viewer(4) || fresh(11) {
		t.Fatal("a block left viewer 4's entry or post 11's count")
	}
}

// TestMergeHead checks mergeHead against the stream itself, with random
// streams and changes. When every entry that joined the stream since the
// candidates were read lies within its head, a merge it accepts is the
// newest n entries of the stream and of the candidates that left it
// (deleted posts, which pages drop when read), exactly; the stream itself
// when shorter than the head. It refuses only when the head holds none of
// the candidates; when nothing changed it returns the candidates
// themselves (n of them, or a stream shorter than the head).
func TestMergeHead(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 13))
	for range 5000 {
		k, n := 1+r.IntN(24), 1+r.IntN(60)
		var stream []Entry
		id := int64(1)
		for range r.IntN(100) {
			stream = append(stream, Entry{PostID: id, Score: int64(r.IntN(200))})
			id++
		}
		slices.SortFunc(stream, CompareEntries)
		cands := slices.Clone(stream[:min(n, len(stream))])
		// Entries that leave the stream (any of them, the candidates'
		// newest included).
		var gone []Entry
		for range r.IntN(4) {
			if len(stream) > 0 {
				i := r.IntN(min(len(stream), n+k))
				if slices.Contains(cands, stream[i]) {
					gone = append(gone, stream[i])
				}
				stream = slices.Delete(stream, i, i+1)
			}
		}
		// New entries, only those that end within the head (one below it
		// is what the merge may miss): dropping one moves the others up.
		var added []Entry
		for range r.IntN(k + 3) {
			added = append(added, Entry{PostID: id, Score: int64(r.IntN(260))})
			id++
		}
		for {
			next := MergeEntries(stream, added)
			n0 := len(added)
			added = slices.DeleteFunc(added, func(e Entry) bool { return slices.Index(next, e) >= k })
			if len(added) == n0 {
				stream = next
				break
			}
		}
		head := stream[:min(k, len(stream))]
		got, ok := mergeHead(head, cands, k, n)
		overlap := slices.ContainsFunc(head, func(e Entry) bool { return slices.Contains(cands, e) })
		if ok != (len(head) < k || overlap) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v: ok %v", seed, k, n, head, cands, ok)
		}
		if !ok {
			continue
		}
		want := MergeEntries(stream, gone)
		if len(head) < k {
			want = stream
		}
		want = want[:min(n, len(want))]
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v gone %v: merged %v, want %v", seed, k, n, head, cands, gone, got, want)
		}
		if len(added) == 0 && len(gone) == 0 && len(cands) > 0 && (len(cands) == n || len(stream) < k) && !sameEntries(got, cands) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v: nothing new, and a copy of the candidates", seed, k, n, head, cands)
		}
	}
}
