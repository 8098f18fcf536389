package feed

import (
	"context"
	"slices"
	"time"
)

// The ranked timeline's candidates, as its cache keeps them from page to
// page (rankViewer.cands): the newest entries of a viewer's feed stream,
// refreshed by a read of the stream's head.

// rankHeadRead is how many entries of the head of a viewer's feed stream a
// first ranked page reads when the cache holds the viewer's candidates
// (rankViewer.cands): the newest, merged into them (mergeHead), instead of
// the Candidates newest.
const rankHeadRead = 20

// rankCands are a viewer's candidate entries as a first ranked page found
// them: the newest n entries of the feed stream, in feed order, never
// changed once stored (a page that finds new entries stores new ones).
// They are merged with the stream's head until expires: ViewerTTL after
// they were last read whole, whatever was merged into them since.
type rankCands struct {
	entries []Entry
	n       int
	expires time.Time
}

// rankEntries returns userID's candidate entries, the newest n of the
// feed stream in feed order, and the rankCands to keep: when cands are the
// viewer's candidates as a page read them before, it reads only the
// stream's head, rankHeadRead entries, and merges it into them
// (mergeHead); otherwise, or when the head holds none of them, it reads
// the n newest, to be kept until now+ttl.
//
// What the merge may miss, until cands expire: entries that joined the
// stream below its head since (delivered after more than rankHeadRead
// newer ones, or a follow's backfill through another process: one through
// this one drops the viewer's candidates), and entries that left it
// (deleted posts and those of authors no longer followed stay candidates,
// and are dropped when pages are read, as they always are).
func (s *Service) rankEntries(ctx context.Context, userID int64, cands rankCands, n int, now time.Time, ttl time.Duration) ([]Entry, rankCands, error) {
	if cands.entries != nil && cands.n == n && now.Before(cands.expires) {
		head, err := s.streamPage(ctx, userID, Top(), 0, rankHeadRead)
		if err != nil {
			return nil, cands, err
		}
		if es, ok := mergeHead(head, cands.entries, rankHeadRead, n); ok {
			cands.entries = es
			return es, cands, nil
		}
	}
	es, err := s.streamPage(ctx, userID, Top(), 0, n)
	return es, rankCands{entries: es, n: n, expires: now.Add(ttl)}, err
}

// mergeHead returns the newest n entries of a feed stream whose newest k
// entries are head (the whole stream when fewer) and whose newest entries
// were cands when last read, and true; or false when it cannot tell them:
// head is full and holds none of cands, so entries may lie between (cands'
// newest may also have left the stream: only an entry in both says where
// head meets cands). Entries of cands that left the stream stay in the
// result (a deleted post, an author no longer followed: pages drop them
// when read). Nothing new returns cands itself (when cands are n
// entries, or the stream is shorter than its head).
func mergeHead(head, cands []Entry, k, n int) ([]Entry, bool) {
	if len(head) < k {
		if h := head[:min(n, len(head))]; !slices.Equal(h, cands) {
			return h, true
		}
		return cands, true
	}
	if h := min(k, n); len(cands) == n && slices.Equal(head[:h], cands[:h]) {
		return cands, true
	}
	if !slices.ContainsFunc(head, func(e Entry) bool {
		_, ok := slices.BinarySearchFunc(cands, e, CompareEntries)
		return ok
	}) {
		return nil, false
	}
	m := MergeEntries(head, cands)
	return m[:min(n, len(m))], true
}

// sameEntries reports whether a and b are the same slice.
func sameEntries(a, b []Entry) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
