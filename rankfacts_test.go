package feed

import (
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
	// lookup returns the viewer's entry when it is one (not a mark).
	lookup := func(u int64, ids []int64, facts []rankFact, fr []bool) (*rankViewer, rankToken) {
		v, tok := c.lookupViewer(u)
		c.lookupPosts(ids, now, facts, fr)
		if v != nil && v.expires.IsZero() {
			v = nil
		}
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
	cands := rankCands{entries: []Entry{{PostID: 7, Score: 7}}, n: 150, expires: now.Add(time.Minute)}
	c.putCands(4, v4, cands)
	if v, _ := lookup(4, nil, nil, nil); v == nil || v == v4 || !sameEntries(v.cands.entries, cands.entries) || v.cands.n != 150 || v.cands.expires != cands.expires {
		t.Fatalf("putCands: entry %+v", v)
	}
	// The viewer's own like marks the entry and keeps the candidates (a
	// like changes no feed stream); a follow drops them with the entry.
	c.liked(4, 70)
	if m, _ := c.lookupViewer(4); viewer(4) || m == nil || !sameEntries(m.cands.entries, cands.entries) || m.cands.expires != cands.expires {
		t.Fatalf("after the viewer's like: entry %+v, want a mark with the candidates", m)
	}
	c.followed(4)
	if m, _ := c.lookupViewer(4); m == nil || m.cands.entries != nil {
		t.Fatalf("after a follow: entry %+v, want a mark without candidates", m)
	}
	_, tok = lookup(4, nil, nil, nil)
	c.putViewer(4, entry(), tok)
	stale, _ := lookup(4, nil, nil, nil)
	c.followed(4)
	c.putCands(4, stale, rankCands{entries: []Entry{{PostID: 8, Score: 8}}, n: 150, expires: now.Add(time.Minute)})
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
