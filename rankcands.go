package feed

import (
	"context"
	"slices"
)

// The ranked timeline's candidates, as its cache keeps them from page to
// page (rankViewer.cands): the newest entries of a viewer's feed stream,
// refreshed by a read of the stream's head.

// rankHeadRead is how many entries of the head of a viewer's feed stream a
// first ranked page reads when the cache holds the viewer's candidates
// (rankViewer.cands): the newest, merged into them (mergeHead), instead of
// the Candidates newest.
const rankHeadRead = 20

// rankEntries returns userID's candidate entries: the newest n of the feed
// stream, in feed order. When v holds the viewer's candidates as a page
// read them before (rankViewer.cands), it reads only the stream's head,
// rankHeadRead entries, and merges it into them (mergeHead); otherwise,
// or when the head holds none of them, it reads the n newest.
//
// What the merge may miss, until v expires (RankSettings.ViewerTTL):
// entries that joined the stream below its head since (delivered after
// more than rankHeadRead newer ones, or a follow's backfill through
// another process: one through this one marks v), and entries that left
// it (deleted posts and those of authors no longer followed stay
// candidates, and are dropped when pages are read, as they always are).
func (s *Service) rankEntries(ctx context.Context, userID int64, v *rankViewer, n int) ([]Entry, error) {
	if v != nil && v.cands != nil && v.candsN == n {
		head, err := s.streamPage(ctx, userID, Top(), 0, rankHeadRead)
		if err != nil {
			return nil, err
		}
		if es, ok := mergeHead(head, v.cands, rankHeadRead, n); ok {
			return es, nil
		}
	}
	return s.streamPage(ctx, userID, Top(), 0, n)
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
