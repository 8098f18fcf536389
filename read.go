package feed

import (
	"context"
	"errors"
	"slices"
	"time"
)

// ErrInboxLost is returned by Inbox.Page when a user's inbox is not there:
// never built, or lost from a cache (a Redis restart without persistence,
// eviction, a flush). The caller rebuilds it with Inbox.Restore.
var ErrInboxLost = errors.New("inbox lost")

// ErrUnavailable is in the chain of an Inbox's or Outbox's error when the
// store could not be reached (a refused or lost connection, a timeout, an
// open circuit breaker, a server loading or failing over): the same call
// may succeed later, unchanged. Any other error is an answer (a key of the
// wrong type, a script error, an entry refused) that the same call will
// get again. Fan-out waits out the first kind without spending a job's
// attempts, and spends one on the second.
var ErrUnavailable = errors.New("store unavailable")

// Inbox holds one sorted set of entries per user: the push side of the feed.
// Implementations: sqlite.Inbox, postgres.Inbox, redis.Inbox.
// feedtest.TestInbox is the contract every implementation passes.
type Inbox interface {
	// Deliver adds entry e to the inbox of every user in userIDs, in bulk
	// (never one round trip per user). Idempotent: delivering the same entry
	// again leaves one entry.
	Deliver(ctx context.Context, e Entry, userIDs []int64) error

	// Add adds entries to one user's inbox (backfill). Idempotent.
	Add(ctx context.Context, userID int64, entries []Entry) error

	// Remove removes entry e from the inboxes of userIDs. Absent entries are
	// not an error.
	Remove(ctx context.Context, e Entry, userIDs []int64) error

	// Page returns at most limit entries of userID's inbox within b, in
	// feed order, after skipping the first offset of them. One atomic read.
	Page(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error)

	// Trim keeps the newest cap entries of userID's inbox and drops the rest.
	Trim(ctx context.Context, userID int64, cap int) error

	// Clear removes userID's whole inbox (an erasure). Idempotent.
	Clear(ctx context.Context, userID int64) error

	// Restore adds entries to userID's inbox and marks it complete, so that
	// Page stops returning ErrInboxLost. It merges rather than replaces, so
	// deliveries racing a rebuild are kept. Idempotent.
	Restore(ctx context.Context, userID int64, entries []Entry) error
}

// InboxSlack is how many entries over cap the SQL inboxes (sqlite.Inbox,
// postgres.Inbox) of that cap may hold: an inbox is trimmed exactly to cap
// by the delivery that would take it past cap + InboxSlack(cap) (62 at a
// cap of 50, 1000 at 800), and then again every InboxSlack(cap)+1
// deliveries.
func InboxSlack(cap int) int { return cap / 4 }

// Outbox holds each author's own entries, newest first: their posts and
// reposts (Repost.Entry). It is the pull side of the feed: entries of
// authors in pull mode (huge audiences) are not fanned out; readers merge
// these authors' outboxes into their inbox at read time; and backfills and
// unfollows copy and remove a followee's entries from it.
// Implementations: the posts and reposts indexes in SQL (sqlite.Outbox,
// postgres.Outbox), a sorted set per author in Redis (redis.Outbox).
type Outbox interface {
	// Add records a post of authorID. Idempotent.
	Add(ctx context.Context, authorID int64, e Entry) error
	// Remove forgets a deleted post of authorID. Idempotent.
	Remove(ctx context.Context, authorID int64, e Entry) error
	// Clear forgets authorID's outbox as a whole, once their posts are
	// gone (an erasure). Idempotent.
	Clear(ctx context.Context, authorID int64) error
	// Entries returns, for every author in authorIDs, their first (at most
	// limit) entries within b, all merged in feed order. One round trip
	// whatever the number of authors.
	Entries(ctx context.Context, authorIDs []int64, b Bound, limit int) ([]Entry, error)
}

// SessionPager reads a session and a page of an inbox in one round trip:
// where Redis holds both (redis.SessionPages), a read names the inbox by
// the user id its token claims (TokenUser) and sends both calls at once.
type SessionPager interface {
	// SessionPage is AuthStore.Session(tokenHash, now, ttl) and
	// Inbox.Page(userID, b, offset, limit) in one round trip. The page
	// belongs to the caller only when the session is live and its user is
	// userID; otherwise the caller drops it unread.
	SessionPage(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration, userID int64, b Bound, offset, limit int) SessionPage
}

// SessionPage is the reply of SessionPager.SessionPage: the session's user
// (or its error, EUNAUTHORIZED when there is no live session in that store)
// and the page (or its error, ErrInboxLost as Inbox.Page).
type SessionPage struct {
	UserID     int64
	SessionErr error
	Entries    []Entry
	PageErr    error
}

// Page is one page of the native timeline.
type Page struct {
	List []PostView
	// Next is the cursor of the page's last entry; nil at the end.
	Next *Cursor
}

// Scroll is one page of the follow feed under the compatible cursor.
type Scroll struct {
	List []PostView
	// MinTime and Offset are the cursor of the following page
	// (ScrollCursor{LastID: MinTime, Offset: Offset}).
	MinTime int64
	Offset  int
}

// ScrollFeed returns the page of userID's feed at cursor c with at most
// size entries (0: the default page size). It returns nil when no entry is
// left.
//
// The cursor counts feed entries, not returned posts: entries whose post was
// deleted are skipped, and a page whose every entry was skipped moves on to
// the next entries instead of ending the scroll.
func (s *Service) ScrollFeed(ctx context.Context, userID int64, c ScrollCursor, size int) (*Scroll, error) {
	if err := validScroll(c, size); err != nil {
		return nil, err
	}
	return s.scroll(ctx, userID, c, size, nil)
}

// ScrollFeedAs is Authenticate(token) and then ScrollFeed for the caller,
// whose id it returns. Where SessionPages is set and the token names its
// user (TokenUser), the session and the first inbox page are read in one
// round trip; the page is used only once the session proved to be that
// user's. EUNAUTHORIZED as Authenticate (before any error of the cursor).
func (s *Service) ScrollFeedAs(ctx context.Context, token string, c ScrollCursor, size int) (int64, *Scroll, error) {
	if err := validScroll(c, size); err != nil {
		id, aerr := s.Authenticate(ctx, token)
		if aerr != nil {
			return 0, nil, aerr
		}
		return id, nil, err
	}
	if size == 0 {
		size = s.pageSize()
	}
	id, first, err := s.authenticatedPage(ctx, token, scrollPosition(c), size)
	if err != nil {
		return 0, nil, err
	}
	page, err := s.scroll(ctx, id, c, size, first)
	return id, page, err
}

func validScroll(c ScrollCursor, size int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return ValidPageSize(size)
}

func (s *Service) scroll(ctx context.Context, userID int64, c ScrollCursor, size int, first *firstPage) (*Scroll, error) {
	if size == 0 {
		size = s.pageSize()
	}
	views, next, more, err := s.readPages(ctx, userID, scrollPosition(c), size, false, first)
	if err != nil || (len(views) == 0 && !more) {
		return nil, err
	}
	// An empty list with more to come: every page looked at was deleted
	// posts; the client keeps scrolling past them because minTime is not 0.
	return &Scroll{List: views, MinTime: next.b.Max, Offset: next.skip}, nil
}

// Timeline returns the page of userID's feed after cursor (nil: from the
// newest), at most limit posts (0: DefaultTimelineLimit).
//
// The cursor is a keyset on (score, post id): the page holds the entries
// that come after it in feed order. It stays exact under any concurrent
// change: posts published in the cursor's millisecond (they have larger ids,
// so they sort before it), deletes of seen or unseen entries, tie groups
// larger than a page, backfills and the pull-mode merge.
func (s *Service) Timeline(ctx context.Context, userID int64, after *Cursor, limit int) (*Page, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	return s.timeline(ctx, userID, after, limit, nil)
}

// TimelineAs is Authenticate(token) and then Timeline for the caller, whose
// id it returns, in one round trip for the session and the first inbox page
// as ScrollFeedAs. EUNAUTHORIZED as Authenticate (before any error of the
// limit).
func (s *Service) TimelineAs(ctx context.Context, token string, after *Cursor, limit int) (int64, *Page, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		id, aerr := s.Authenticate(ctx, token)
		if aerr != nil {
			return 0, nil, aerr
		}
		return id, nil, err
	}
	id, first, err := s.authenticatedPage(ctx, token, keysetPosition(after), limit)
	if err != nil {
		return 0, nil, err
	}
	page, err := s.timeline(ctx, id, after, limit, first)
	return id, page, err
}

func (s *Service) timeline(ctx context.Context, userID int64, after *Cursor, limit int, first *firstPage) (*Page, error) {
	views, next, more, err := s.readPages(ctx, userID, keysetPosition(after), limit, true, first)
	if err != nil {
		return nil, err
	}
	page := &Page{List: views}
	if more {
		page.Next = next.cursor()
	}
	return page, nil
}

// firstPage is what authenticatedPage read ahead for the first page of
// readPages: the pull-mode followees and the inbox page of that shape.
type firstPage struct {
	pulls   []int64
	b       Bound
	skip, n int
	entries []Entry
	err     error
}

// authenticatedPage authenticates token as Authenticate does and, when it
// can, reads the first inbox page of readPages(at, n) in the same round trip
// as the session (SessionPages). The order is the one mergedPage keeps: the
// pull-mode followees first (of the user the token claims; nothing of it
// leaves this function unless the session proves the claim), then the
// inbox. It returns the caller's id and the page read ahead, or a nil page
// when none was (the caller then reads as usual).
func (s *Service) authenticatedPage(ctx context.Context, token string, at position, n int) (int64, *firstPage, error) {
	claimed, ok := TokenUser(token)
	if !ok || s.SessionPages == nil {
		id, err := s.Authenticate(ctx, token)
		return id, nil, err
	}
	pulls, err := s.Social.PullFollowees(ctx, claimed)
	if err != nil {
		id, err := s.Authenticate(ctx, token) // the page read reports the store's error
		return id, nil, err
	}
	first := &firstPage{pulls: pulls, b: at.b, skip: at.skip, n: n}
	if len(pulls) > 0 {
		first.skip, first.n = 0, at.skip+n // mergedPage's shape
	}
	r := s.SessionPages.SessionPage(ctx, HashSecret(token), s.now(), SessionTTL, claimed, first.b, first.skip, first.n)
	if r.SessionErr != nil || r.UserID != claimed {
		// No live session in Redis (the durable store may hold it), Redis
		// unreachable, or a claim the session denies: Authenticate decides,
		// and the page read ahead is dropped.
		id, err := s.Authenticate(ctx, token)
		return id, nil, err
	}
	regenerated, err := s.touch(ctx, claimed)
	if err != nil {
		return 0, nil, err
	}
	if regenerated {
		return claimed, nil, nil // the page read ahead predates the new inbox
	}
	first.entries, first.err = r.Entries, r.PageErr
	return claimed, first, nil
}

// readPages is the one page loop of both cursors. It reads userID's stream
// from at, n entries at a time, hydrating each read and skipping entries
// whose post is gone, until it holds n views (fill) or any view (!fill),
// the stream ends, or maxEmptyPages reads were made. It returns the views,
// the position after the last entry read, and whether entries may follow.
// first, when not nil, is the first read made ahead (authenticatedPage).
func (s *Service) readPages(ctx context.Context, userID int64, at position, n int, fill bool, first *firstPage) ([]PostView, position, bool, error) {
	views := []PostView{}
	for range maxEmptyPages {
		want := n
		if fill {
			want = n - len(views)
		}
		entries, err := s.streamPageAhead(ctx, userID, at.b, at.skip, want, first)
		first = nil
		if err != nil {
			return nil, at, false, err
		}
		if len(entries) == 0 {
			return views, at, false, nil
		}
		vs, err := s.hydrateEntries(ctx, userID, entries)
		if err != nil {
			return nil, at, false, err
		}
		views = append(views, vs...)
		at = at.advance(entries)
		if len(entries) < want {
			return views, at, false, nil
		}
		if len(views) >= n || (!fill && len(views) > 0) {
			break
		}
	}
	return views, at, true, nil
}

// errStoreDown marks a failed read of the inbox or outbox store.
type errStoreDown struct{ error }

// streamPage is a page of userID's feed stream: their inbox merged with the
// outboxes of the pull-mode authors they follow, in feed order, within b,
// after skipping offset, at most limit. A post both pushed and in an outbox
// (an author crossing the threshold) appears once. The round trips are
// fixed: the pull-mode followees, the inbox, all outboxes at once.
//
// When the inbox or outbox store fails (Redis down) the page is computed
// from the database instead (FeedEntries: every followee's posts, same
// order and cursor), so the feed degrades instead of failing.
func (s *Service) streamPage(ctx context.Context, userID int64, b Bound, offset, limit int) ([]Entry, error) {
	return s.streamPageAhead(ctx, userID, b, offset, limit, nil)
}

// streamPageAhead is streamPage; first, when not nil, holds the pull-mode
// followees and the inbox page read ahead (authenticatedPage), used in
// place of reading them again.
func (s *Service) streamPageAhead(ctx context.Context, userID int64, b Bound, offset, limit int, first *firstPage) ([]Entry, error) {
	es, err := s.mergedPage(ctx, userID, b, offset, limit, first)
	var down errStoreDown
	if errors.As(err, &down) && ctx.Err() == nil {
		s.log().Warn("inbox store unavailable; feed served from the database", "user_id", userID, "error", down.error)
		s.observe().DegradedRead()
		return s.Posts.FeedEntries(ctx, userID, b, offset, limit)
	}
	return es, err
}

func (s *Service) mergedPage(ctx context.Context, userID int64, b Bound, offset, limit int, first *firstPage) ([]Entry, error) {
	var pulls []int64
	if first != nil {
		pulls = first.pulls
	} else {
		var err error
		if pulls, err = s.Social.PullFollowees(ctx, userID); err != nil {
			return nil, err
		}
	}
	s.observe().StreamPage(len(pulls))
	if len(pulls) == 0 {
		return s.inboxPage(ctx, userID, nil, b, offset, limit, first)
	}
	in, err := s.inboxPage(ctx, userID, pulls, b, 0, offset+limit, first)
	if err != nil {
		return nil, err
	}
	out, err := s.Outbox.Entries(ctx, pulls, b, offset+limit)
	if err != nil {
		return nil, errStoreDown{err}
	}
	merged := MergeEntries(in, out)
	if offset >= len(merged) {
		return []Entry{}, nil
	}
	return merged[offset:min(offset+limit, len(merged))], nil
}

// MergeEntries merges entry lists into one in feed order, each entry once.
func MergeEntries(lists ...[]Entry) []Entry {
	all := slices.Concat(lists...)
	slices.SortFunc(all, CompareEntries)
	return slices.Compact(all)
}

// inboxPage reads a page of userID's inbox, rebuilding it first from the
// source of truth when it is lost. pulls are the pull-mode authors userID
// follows, which a rebuild leaves out (their posts are merged at read time).
// ahead, when it is that very read made ahead, is used instead of reading.
func (s *Service) inboxPage(ctx context.Context, userID int64, pulls []int64, b Bound, skip, size int, ahead *firstPage) ([]Entry, error) {
	var entries []Entry
	var err error
	if ahead != nil && ahead.b == b && ahead.skip == skip && ahead.n == size {
		entries, err = ahead.entries, ahead.err
	} else {
		entries, err = s.Inbox.Page(ctx, userID, b, skip, size)
	}
	if errors.Is(err, ErrInboxLost) {
		if err = s.rebuild(ctx, userID, pulls); err == nil {
			entries, err = s.Inbox.Page(ctx, userID, b, skip, size)
		}
	}
	if err != nil {
		return nil, errStoreDown{err}
	}
	return entries, nil
}

// RebuildInbox refills userID's inbox with the newest InboxCap entries that
// fan-out would have put there, computed from the source of truth: the posts
// and reposts of userID and of the push-mode authors they follow. Deliveries that race
// it are kept (Restore merges).
func (s *Service) RebuildInbox(ctx context.Context, userID int64) error {
	pulls, err := s.Social.PullFollowees(ctx, userID)
	if err != nil {
		return err
	}
	return s.rebuild(ctx, userID, pulls)
}

func (s *Service) rebuild(ctx context.Context, userID int64, pulls []int64) error {
	entries, err := s.Posts.FeedEntries(ctx, userID, Top(), 0, s.inboxCap())
	if err != nil {
		return err
	}
	if len(pulls) > 0 && len(entries) > 0 {
		authors, err := s.entryAuthors(ctx, entries)
		if err != nil {
			return err
		}
		entries = slices.DeleteFunc(entries, func(e Entry) bool {
			a, ok := authors[e.PostID]
			return !ok || slices.Contains(pulls, a)
		})
	}
	if err := s.Inbox.Restore(ctx, userID, entries); err != nil {
		return err
	}
	s.log().Info("inbox rebuilt", "user_id", userID, "entries", len(entries))
	s.observe().InboxRebuilt()
	return nil
}

func postIDs(entries []Entry) []int64 {
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.PostID
	}
	return ids
}

// entryAuthors returns, by entry id, whose entries these are: a post's
// author, a repost's reposter (the user whose fan-out delivers it). Ids
// of neither are absent.
func (s *Service) entryAuthors(ctx context.Context, entries []Entry) (map[int64]int64, error) {
	ids := postIDs(entries)
	posts, err := s.Posts.Posts(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(ids))
	var missing []int64
	for _, id := range ids {
		if p := posts[id]; p != nil {
			out[id] = p.UserID
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 && s.Reposts != nil {
		reps, err := s.Reposts.Reposts(ctx, missing)
		if err != nil {
			return nil, err
		}
		for id, r := range reps {
			out[id] = r.UserID
		}
	}
	return out, nil
}
