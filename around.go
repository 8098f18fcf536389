package feed

import "context"

// Reading a timeline around a position: the page centred on a post (where
// the reader stopped, marker.go) and the pages before a cursor (newer
// entries), so that a client opens in the middle of its timeline and
// scrolls both ways under exact cursors. Pages after a cursor are
// Timeline's.
//
// A timeline is read newest first, so the entries before a position are
// found by reading from the newest down to it, aroundRead entries a read
// (one read when the position is among the newest aroundRead entries).
// Each read is keyset-bounded below the last, so what is published
// meanwhile (newer than everything read) never shifts the entries found:
// the page before a cursor is exactly the entries nearest to it that come
// before it, and a scroll made of such pages repeats and skips nothing.

// aroundRead is how many entries one read of a scan toward a position
// takes.
const aroundRead = 250

// AroundPage is a page of a timeline read around a position.
type AroundPage struct {
	List []PostView
	// Prev is the cursor whose TimelineBefore page holds the entries
	// before this page (newer): its first entry's, or the position read
	// when the page is empty. Never nil, so a client can always ask for
	// newer entries.
	Prev *Cursor
	// Next is the cursor whose Timeline page continues after this one
	// (older); nil at the end.
	Next *Cursor
	// Newer counts the entries before the page (newer than its first)
	// that the caller may see.
	Newer int
}

// maxBefore is how many entries a scan toward a position reads at most:
// twice what an inbox holds, so a position anywhere in an inbox is
// reached, with room for the posts of pull-mode authors merged in.
func (s *Service) maxBefore() int { return 2 * (s.inboxCap() + InboxSlack(s.inboxCap())) }

// TimelineBefore returns the page of userID's timeline before cursor c:
// the at most limit entries (0: DefaultTimelineLimit) that come nearest
// before c, newest first, as Timeline shows them. EINVALID when more than
// maxBefore entries come before c (the client reads from the top).
func (s *Service) TimelineBefore(ctx context.Context, userID int64, c Cursor, limit int) (*AroundPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	newer, err := s.viewsBefore(ctx, userID, c)
	if err != nil {
		return nil, err
	}
	cut := max(0, len(newer)-limit)
	page := &AroundPage{List: newer[cut:], Newer: cut, Prev: &c}
	if len(page.List) > 0 {
		first, last := page.List[0].Entry(), page.List[len(page.List)-1].Entry()
		page.Prev, page.Next = &first, &last
	}
	return page, nil
}

// TimelineAround returns the page of userID's timeline centred on post
// postID: up to half of limit (0: DefaultTimelineLimit) entries before it
// and the rest from it on, newest first, with the cursors of both ways.
// The post's position is its entry, or, when the post is gone or hidden
// from userID, where userID's timeline marker keeps it (ENOTFOUND when it
// is neither). EINVALID as TimelineBefore.
func (s *Service) TimelineAround(ctx context.Context, userID, postID int64, limit int) (*AroundPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	pos, err := s.aroundPosition(ctx, userID, postID)
	if err != nil {
		return nil, err
	}
	newer, err := s.viewsBefore(ctx, userID, pos)
	if err != nil {
		return nil, err
	}
	cut := max(0, len(newer)-limit/2)
	page := &AroundPage{List: newer[cut:], Newer: cut, Prev: &pos}
	// From the position on: the bound admits the position's own entry.
	from := position{b: Bound{Max: pos.Score, BeforeID: pos.PostID + 1}, keyset: true}
	older, next, more, err := s.readPages(ctx, userID, from, limit-len(page.List), true, nil)
	if err != nil {
		return nil, err
	}
	page.List = append(page.List, older...)
	if len(page.List) > 0 {
		first := page.List[0].Entry()
		page.Prev = &first
	}
	if more {
		page.Next = next.cursor()
	}
	return page, nil
}

// aroundPosition is the position of post postID in userID's timeline: the
// post's entry, or, for a post gone or hidden, the timeline marker's
// position when the marker names it.
func (s *Service) aroundPosition(ctx context.Context, userID, postID int64) (Entry, error) {
	p, err := s.shownPost(ctx, userID, postID)
	if err == nil {
		return p.Entry(), nil
	}
	if ErrorCode(err) != ENOTFOUND || s.Markers == nil {
		return Entry{}, err
	}
	ms, merr := s.Markers.Markers(ctx, userID)
	if merr != nil {
		return Entry{}, merr
	}
	if m, ok := ms[MarkerTimeline]; ok && m.LastReadID == postID {
		return m.Position, nil
	}
	return Entry{}, err
}

// viewsBefore returns the entries of userID's timeline that come before c,
// hydrated (those userID may not see dropped), in feed order. EINVALID
// when more than maxBefore entries come before c.
func (s *Service) viewsBefore(ctx context.Context, userID int64, c Cursor) ([]PostView, error) {
	var raw []Entry
	b, limit := Top(), s.maxBefore()
	for {
		es, err := s.streamPage(ctx, userID, b, 0, aroundRead)
		if err != nil {
			return nil, err
		}
		done := len(es) < aroundRead
		for _, e := range es {
			if !e.Before(c) {
				done = true
				break
			}
			raw = append(raw, e)
		}
		if len(raw) > limit {
			return nil, Errorf(EINVALID, "the position is more than %d entries behind the newest: read the timeline from the top", limit)
		}
		if done {
			break
		}
		b = After(es[len(es)-1])
	}
	if len(raw) == 0 {
		return []PostView{}, nil
	}
	return s.hydrateEntries(ctx, userID, raw)
}
