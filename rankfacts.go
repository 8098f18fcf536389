package feed

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// RankFactsKept bounds the posts, and RankViewersKept the viewers, that
// the ranked timeline's caches hold (rankCache): past half of either, the
// older half is dropped. A post costs about 100 bytes, a viewer about 40
// bytes a like and a followed author and 16 bytes a candidate entry
// (RankSettings.Candidates: 2.4 KB at the default 150).
const (
	RankFactsKept   = 1 << 16
	RankViewersKept = 1 << 14
)

// RankAllFollows is the most follows a RankFactReader reads whole
// (RankReads.AllFollows): a viewer who follows more has only the follows
// of the page's authors read.
const RankAllFollows = 2000

// RankReads is what RankFactReader.RankFacts reads for a first ranked page.
type RankReads struct {
	// Posts are the posts among those asked for that exist, with
	// LikedByViewer false, in no particular order.
	Posts []RankCandidate
	// Likes are the viewer's likes made since `since` or of posts with ids
	// of at least minID, of any author.
	Likes []RankLike
	// Follows holds, for each author asked about and each author of Posts,
	// when the viewer started following them; zero when it does not.
	Follows map[int64]time.Time
	// AllFollows, when set, says that Follows also holds every author the
	// viewer follows: an author absent from it is not followed. (A store
	// reads all of a viewer's follows when there are at most
	// RankAllFollows: one range of an index instead of a lookup per
	// author, and an entry of the cache that knows every author.)
	AllFollows bool
}

// The read-around: a first ranked page that must read at least
// rankReadAroundMin posts whose ids span at most rankReadAround times as
// many ids reads every post of the span instead (RankPostRange, one range
// of the primary key, not a lookup per post), and keeps them all: the
// posts published at the same time as a viewer's candidates are the
// candidates of the viewers who follow their authors. It applies where
// the candidates are dense among all posts (a community where viewers
// follow a good part of the authors, or a process that has just started);
// among many authors the span is too wide and each post is looked up.
const (
	rankReadAroundMin = 32
	rankReadAround    = 4
)

// RankLike is one of a viewer's likes.
type RankLike struct {
	PostID   int64
	AuthorID int64
	At       int64 // ms
}

// rankFact is what the ranked timeline keeps of one candidate post. The
// author and the creation never change; the like count is reused until
// fresh passes (RankSettings.CountsTTL), and only while epoch is the
// cache's. An entry whose author is 0 knows nothing but inval: the last
// invalidation of the post (rankCache.mark).
type rankFact struct {
	author  int64
	created int64 // ms
	likes   int
	fresh   time.Time
	epoch   uint64
	inval   uint64
}

// rankViewer is what the ranked timeline keeps of one viewer: the likes
// (all since `since` and all of posts from minID on) and the follows of the
// authors in follows, read at once, until expires (RankSettings.ViewerTTL).
type rankViewer struct {
	likes   []RankLike
	since   int64 // ms
	minID   int64
	follows map[int64]time.Time
	// allFollows: follows holds every author the viewer follows
	// (RankReads.AllFollows), so it knows every author.
	allFollows bool
	expires    time.Time // zero: an entry that holds only inval
	inval      uint64    // the last invalidation of the viewer (rankCache.mark)
	// cands are the viewer's candidates as the last first page found
	// them (rankEntries). A mark of the viewer's own like keeps them (a
	// like changes no feed stream); one of a follow or block does not.
	cands rankCands
}

// covers reports whether v answers for a page's likes (since, minID) and
// follows (authors) at now.
func (v *rankViewer) covers(since, minID int64, authors []int64, now time.Time) bool {
	if v == nil || !now.Before(v.expires) || since < v.since || minID < v.minID {
		return false
	}
	for _, a := range authors {
		if !v.knows(a) {
			return false
		}
	}
	return true
}

// knows reports whether v says whether the viewer follows author.
func (v *rankViewer) knows(author int64) bool {
	if v.allFollows {
		return true
	}
	_, ok := v.follows[author]
	return ok
}

// gen2 is a map bounded by keeping two generations: lookups promote from
// old to cur, and cur becomes old when it reaches kept/2 entries: an
// approximate LRU without a list. The zero value is ready to use.
type gen2[V any] struct {
	cur, old map[int64]V
}

func (g *gen2[V]) get(k int64, kept int) (V, bool) {
	v, ok := g.cur[k]
	if !ok {
		if v, ok = g.old[k]; ok {
			g.put(k, v, kept)
		}
	}
	return v, ok
}

func (g *gen2[V]) put(k int64, v V, kept int) {
	if g.cur == nil {
		g.cur = make(map[int64]V, 256)
	}
	if len(g.cur) >= kept/2 {
		g.old, g.cur = g.cur, make(map[int64]V, len(g.cur))
	}
	g.cur[k] = v
}

func (g *gen2[V]) delete(k int64) {
	delete(g.cur, k)
	delete(g.old, k)
}

// rankCache is the ranked timeline's per-process cache, so that a first
// ranked page reads from the store only the head of its feed stream and
// what it has not seen lately:
//
//   - of each candidate post, its author and creation (they never change)
//     and its like count for CountsTTL;
//   - of each viewer, their likes and follows, and their candidate
//     entries (merged with the stream's head at each page: rankEntries),
//     for ViewerTTL.
//
// What this process changes it applies at once: a like or unlike marks the
// post's count stale and the liker's entry; a follow or unfollow marks the
// follower's; a block (which removes follows both ways and likes) marks
// both users' and every count; a delete forgets the post. What other
// processes change shows after at most the TTLs (and a deleted post's
// likes count towards affinity until the viewer's entry expires; of the
// entries of the stream, rankEntries says what the merge may miss). Whether
// a post may be shown (deleted, blocked, muted, hidden) is never cached:
// pages are filtered when read (rankViews).
//
// A read that raced a change must not store what it read before the
// change: lookupViewer returns a rankToken, every change takes a sequence number
// and leaves it on the post's or viewer's entry (inval), and the puts keep
// nothing for an entry changed after the token (nor counts of an older
// epoch). So changes to other posts and viewers never spoil a read. The
// zero value is ready to use.
type rankCache struct {
	mu      sync.Mutex
	posts   gen2[rankFact]
	viewers gen2[*rankViewer]
	epoch   uint64 // counts from an older epoch are stale (blocked)
	seq     uint64 // the last change's number
}

// rankToken is what lookup saw: the puts keep only what no later change
// touched.
type rankToken struct{ seq, epoch uint64 }

// lookupViewer returns the viewer's entry, which may be only a mark (nil
// if none), and the token to give the puts of what is read afterwards.
func (c *rankCache) lookupViewer(viewerID int64) (*rankViewer, rankToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, _ := c.viewers.get(viewerID, RankViewersKept)
	return v, rankToken{c.seq, c.epoch}
}

// lookupPosts fills facts[i] for each of ids whose facts are known, and
// fresh[i] when its count is fresh at now.
func (c *rankCache) lookupPosts(ids []int64, now time.Time, facts []rankFact, fresh []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range ids {
		f, ok := c.posts.get(id, RankFactsKept)
		ok = ok && f.author != 0
		facts[i], fresh[i] = f, ok && f.epoch == c.epoch && now.Before(f.fresh)
	}
}

// putPosts stores what the store returned of posts read since lookupViewer
// returned tok. The counts of posts changed since, or of an older epoch,
// are kept stale (their read may predate the change); the facts all the
// same.
func (c *rankCache) putPosts(posts []RankCandidate, now time.Time, ttl time.Duration, tok rankToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range posts {
		f := rankFact{author: r.AuthorID, created: r.Score, likes: r.Likes, fresh: now.Add(ttl), epoch: tok.epoch}
		if old, ok := c.posts.get(r.PostID, RankFactsKept); ok {
			f.inval = old.inval // kept, for reads older still
			if old.inval > tok.seq {
				f.fresh = time.Time{}
			}
		}
		c.posts.put(r.PostID, f, RankFactsKept)
	}
}

// putViewer stores v as viewerID's entry, unless the viewer changed since
// lookup returned tok.
func (c *rankCache) putViewer(viewerID int64, v *rankViewer, tok rankToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.viewers.get(viewerID, RankViewersKept); ok {
		if old.inval > tok.seq {
			return
		}
		v.inval = old.inval // kept, for reads older still
	}
	c.viewers.put(viewerID, v, RankViewersKept)
}

// putCands stores cands as the candidates of viewerID's entry v, in a
// copy of it, unless the entry is no longer v (a change marked it, or
// another page replaced it).
func (c *rankCache) putCands(viewerID int64, v *rankViewer, cands rankCands) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.viewers.get(viewerID, RankViewersKept); !ok || cur != v {
		return
	}
	nv := *v
	nv.cands = cands
	c.viewers.put(viewerID, &nv, RankViewersKept)
}

// markViewers marks the entries of users changed (c.mu held).
func (c *rankCache) markViewers(users ...int64) {
	c.seq++
	for _, u := range users {
		c.viewers.put(u, &rankViewer{inval: c.seq}, RankViewersKept)
	}
}

// liked is told that userID liked or unliked post id. The mark keeps the
// viewer's candidates: a like changes no feed stream.
func (c *rankCache) liked(userID, id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, _ := c.viewers.get(userID, RankViewersKept)
	c.markViewers(userID)
	if old != nil && old.cands.entries != nil {
		c.viewers.put(userID, &rankViewer{inval: c.seq, cands: old.cands}, RankViewersKept)
	}
	f, _ := c.posts.get(id, RankFactsKept)
	f.fresh, f.inval = time.Time{}, c.seq
	c.posts.put(id, f, RankFactsKept)
}

// followed is told that userID followed or unfollowed someone.
func (c *rankCache) followed(userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markViewers(userID)
}

// blocked is told of a block between users: follows and likes went, the
// likes' counts with them.
func (c *rankCache) blocked(users ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markViewers(users...)
	c.epoch++
}

// forgetPost drops post id.
func (c *rankCache) forgetPost(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts.delete(id)
}

// rankCached is rankCandidates with the cache (rankCache). It reads the
// candidate entries (rankEntries: only the head of the feed stream when
// the cache holds the viewer's), the posts whose facts are unknown or
// whose count is stale (the whole span of their ids when it is dense: the
// read-around), and the viewer's likes and follows unless the cache holds
// them for these candidates; one RankFacts statement, or only RankPosts or
// RankPostRange of the posts, or nothing.
func (s *Service) rankCached(ctx context.Context, r RankFactReader, userID int64, rs RankSettings, since, now time.Time) ([]RankedItem, error) {
	v, tok := s.rankCache.lookupViewer(userID)
	var cands rankCands
	if v != nil {
		cands = v.cands
	}
	if v != nil && !now.Before(v.expires) { // expired, or a mark
		v = nil
	}
	all, cands, err := s.rankEntries(ctx, userID, cands, rs.Candidates, now, rs.ViewerTTL)
	if err != nil {
		return nil, err
	}
	entries := inWindow(all, rs, now)
	if len(entries) == 0 {
		return nil, nil
	}
	buf := rankBufs.Get().(*rankBuf)
	defer buf.put()
	ids := buf.ids[:0]
	for _, e := range entries {
		ids = append(ids, e.PostID)
	}
	facts, fresh := buf.get(len(ids))
	s.rankCache.lookupPosts(ids, now, facts, fresh)
	read, authors := buf.read[:0], buf.authors[:0]
	minID := ids[0]
	for i, id := range ids {
		minID = min(minID, id)
		if fresh[i] {
			authors = append(authors, facts[i].author)
		} else {
			read = append(read, id)
		}
	}
	var posts []RankCandidate
	if len(read) >= rankReadAroundMin {
		if lo, hi := slices.Min(read), slices.Max(read); hi-lo < int64(rankReadAround*len(read)) {
			if posts, err = r.RankPostRange(ctx, lo, hi); err != nil {
				return nil, err
			}
			slices.SortFunc(posts, byPostID)
			for _, id := range read {
				if k, ok := slices.BinarySearchFunc(posts, id, postIDCmp); ok {
					authors = append(authors, posts[k].AuthorID)
				}
			}
			read = read[:0]
		}
	}
	slices.Sort(authors)
	authors = slices.Compact(authors)
	sinceMS := since.UnixMilli()
	if !v.covers(sinceMS, minID, authors, now) {
		v = nil
	} else if len(read) > 0 {
		if posts, err = r.RankPosts(ctx, read); err != nil {
			return nil, err
		}
		for _, c := range posts {
			if !v.knows(c.AuthorID) {
				v = nil // an author the entry knows nothing of
				break
			}
		}
	}
	if v == nil {
		rr, err := r.RankFacts(ctx, userID, read, authors, minID, since)
		if err != nil {
			return nil, err
		}
		if len(read) > 0 {
			posts = rr.Posts // read is empty after a read-around
		}
		v = &rankViewer{likes: rr.Likes, since: sinceMS, minID: minID, follows: rr.Follows, allFollows: rr.AllFollows,
			expires: now.Add(rs.ViewerTTL), cands: cands}
		if rs.ViewerTTL > 0 {
			s.rankCache.putViewer(userID, v, tok)
		}
	} else if !sameEntries(v.cands.entries, cands.entries) {
		s.rankCache.putCands(userID, v, cands)
	}
	s.rankCache.putPosts(posts, now, rs.CountsTTL, tok)

	// The affinity of the candidates' authors (v.follows may know many
	// more: every author the viewer follows).
	aff := buf.aff
	for _, a := range authors {
		aff[a] = Affinity{FollowedAt: v.follows[a]}
	}
	for _, c := range posts {
		if _, ok := aff[c.AuthorID]; !ok {
			aff[c.AuthorID] = Affinity{FollowedAt: v.follows[c.AuthorID]}
		}
	}
	liked := buf.liked[:0]
	for _, l := range v.likes {
		if l.PostID >= minID {
			liked = append(liked, l.PostID)
		}
		if a, ok := aff[l.AuthorID]; ok && l.At >= sinceMS {
			a.Likes += Decay(now.Sub(time.UnixMilli(l.At)), rs.AffinityHalfLife)
			aff[l.AuthorID] = a
		}
	}
	slices.Sort(liked)
	slices.SortFunc(posts, byPostID)
	buf.ids, buf.read, buf.authors, buf.liked = ids, read, authors, liked // kept for the next page
	rk := newRanker(rs, userID, aff, now)
	defer rk.release()
	for i, e := range entries {
		c := RankCandidate{PostID: e.PostID, AuthorID: facts[i].author, Score: facts[i].created, Likes: facts[i].likes}
		if !fresh[i] {
			k, ok := slices.BinarySearchFunc(posts, e.PostID, postIDCmp)
			if !ok {
				continue // deleted
			}
			c = posts[k]
		}
		_, c.LikedByViewer = slices.BinarySearch(liked, e.PostID)
		rk.add(c, e.Score)
	}
	return rk.sorted(), nil
}

func byPostID(a, b RankCandidate) int         { return cmp.Compare(a.PostID, b.PostID) }
func postIDCmp(c RankCandidate, id int64) int { return cmp.Compare(c.PostID, id) }

// rankBuf is rankCached's scratch space for one page (the cache lookup's
// facts, the lists of ids, the affinities), reused from page to page
// (rankBufs): what a page allocates is how often garbage collection runs
// under it (BENCHMARKS.md "Ranked timeline").
type rankBuf struct {
	facts                     []rankFact
	fresh                     []bool
	ids, read, authors, liked []int64
	aff                       map[int64]Affinity
}

var rankBufs = sync.Pool{New: func() any { return &rankBuf{aff: map[int64]Affinity{}} }}

// get returns n zeroed facts and flags.
func (b *rankBuf) get(n int) ([]rankFact, []bool) {
	if cap(b.facts) < n {
		b.facts, b.fresh = make([]rankFact, n), make([]bool, n)
	}
	b.facts, b.fresh = b.facts[:n], b.fresh[:n]
	clear(b.facts)
	clear(b.fresh)
	return b.facts, b.fresh
}

// put returns b to rankBufs, its map emptied.
func (b *rankBuf) put() {
	clear(b.aff)
	rankBufs.Put(b)
}
