package hmdp

import (
	"context"
	"fmt"
	"slices"
	"sync"

	feed "github.com/feedd/feedd"
)

// inboxBatch is how many users' inboxes one batch builds: an inbox holds
// at most the cap (800 entries by default), and a batch is written in one
// transaction.
func (r *run) inboxBatch() int { return min(500, max(1, r.o.Batch/10)) }

// finish makes the store's derived data true (counts, pull mode) and
// builds the inboxes: from the follows, or from the tutorial's feeds. It
// is skipped when the inboxes were built after the last rows came in.
func (r *run) finish(ctx context.Context) error {
	phase := PhaseInboxes
	if r.o.KeepFeeds {
		phase = PhaseFeeds
	}
	if r.o.Store == nil {
		if r.o.KeepFeeds {
			return r.keepFeeds(ctx)
		}
		return nil // a dry run builds no inbox
	}
	if r.cp(phase).Done {
		r.report.Phases = append(r.report.Phases, PhaseReport{Name: phase, Source: -1, Counts: r.cp(phase).Counts})
		return nil
	}
	pull, err := r.o.Store.FinishImport(ctx, r.o.PullThreshold)
	if err != nil {
		return fmt.Errorf("count follows and set pull mode: %w", err)
	}
	r.report.Pull = len(pull)
	if err := r.forgetOutboxes(ctx); err != nil {
		return err
	}
	pulls := make(map[int64]bool, len(pull))
	for _, id := range pull {
		pulls[id] = true
	}
	if r.o.KeepFeeds {
		return r.keepFeeds(ctx)
	}
	return r.buildInboxes(ctx, pulls)
}

// forgetOutboxes drops the outboxes of the imported posts' authors where
// they are copies of the posts (feed.OutboxCache: Redis), which the import
// did not write to: each is rebuilt from the posts, those brought
// included, at its next read (a pull-mode author's readers, a follow's
// backfill).
func (r *run) forgetOutboxes(ctx context.Context) error {
	oc, ok := r.o.Outbox.(feed.OutboxCache)
	if !ok {
		return nil
	}
	authors := make([]int64, 0, len(r.posts))
	for _, p := range r.posts {
		authors = append(authors, p.author)
	}
	slices.Sort(authors)
	if err := oc.Forget(ctx, slices.Compact(authors)); err != nil {
		return fmt.Errorf("forget the outboxes of the imported authors: %w", err)
	}
	return nil
}

// buildInboxes builds the inbox of every imported user as fan-out and
// backfill would have (feed.BuiltInbox): their own posts and the newest
// --backfill of each push-mode author they follow, the newest --inbox-cap
// of them. Users come in id order; the phase's checkpoint is the last user
// done. A batch written again (after a kill) writes the same entries,
// which inboxes keep once.
func (r *run) buildInboxes(ctx context.Context, pull map[int64]bool) error {
	byAuthor := map[int64][]feed.Entry{}
	for id, p := range r.posts {
		byAuthor[p.author] = append(byAuthor[p.author], feed.Entry{PostID: id, Score: p.score})
	}
	for a, es := range byAuthor {
		slices.SortFunc(es, feed.CompareEntries)
		byAuthor[a] = es[:min(len(es), r.o.InboxCap)]
	}
	users := make([]int64, 0, len(r.users))
	for id := range r.users {
		users = append(users, id)
	}
	slices.Sort(users)
	read := func(ctx context.Context, after int64, n int) ([]int64, error) {
		i, _ := slices.BinarySearch(users, after+1)
		return users[i:min(i+n, len(users))], nil
	}
	return table(ctx, r, PhaseInboxes, int64(len(users)), r.inboxBatch(), read, func(id int64) int64 { return id },
		func(ctx context.Context, ids []int64, b *batch) error {
			followees, err := r.o.Store.ImportedFollowees(ctx, ids[0], ids[len(ids)-1])
			if err != nil {
				return err
			}
			inboxes := make([]feed.UserEntries, 0, len(ids))
			var lists [][]feed.Entry
			for _, u := range ids {
				lists = lists[:0]
				for _, f := range followees[u] {
					if !pull[f] {
						lists = append(lists, byAuthor[f])
					}
				}
				es := feed.BuiltInbox(byAuthor[u], lists, r.o.Backfill, r.o.InboxCap)
				if len(es) > 0 {
					inboxes = append(inboxes, feed.UserEntries{UserID: u, Entries: es})
				}
				b.written += len(es)
			}
			b.read = len(ids)
			return r.storeInboxes(ctx, b, inboxes, false)
		}, nil)
}

// keepFeeds fills the inbox of every imported user with the posts of
// their feed:{userId} in the tutorial's Redis, the newest --inbox-cap of
// them. Entries are scored by their post's creation time, feedd's score
// of every delivery of a post, so that a later delivery or removal of the
// same post finds them. Posts of pull-mode authors stay: a read merges
// them with the author's outbox once.
func (r *run) keepFeeds(ctx context.Context) error {
	read := func(ctx context.Context, after int64, n int) ([]int64, error) { return r.src.userIDs(ctx, after, n) }
	return table(ctx, r, PhaseFeeds, -1, r.inboxBatch(), read, func(id int64) int64 { return id },
		func(ctx context.Context, ids []int64, b *batch) error {
			var users []int64
			var keys []string
			for _, id := range ids {
				if r.users[id] {
					users = append(users, id)
					keys = append(keys, r.src.feedKey(id))
				}
			}
			// Twice the cap: entries of posts not imported are dropped
			// before the newest cap are kept.
			sets, err := r.src.sortedSets(ctx, keys, true, 2*int64(r.o.InboxCap))
			if err != nil {
				return err
			}
			inboxes := make([]feed.UserEntries, 0, len(users))
			for i, u := range users {
				var es []feed.Entry
				for _, m := range sets[i] {
					b.read++
					p, ok := r.posts[m.id]
					switch {
					case !m.ok:
						r.skip(b, SkipMalformed, u, fmt.Sprintf("member %q", m.raw))
					case !ok:
						r.skip(b, SkipMissingPost, u, fmt.Sprintf("post %d", m.id))
					default:
						es = append(es, feed.Entry{PostID: m.id, Score: p.score})
					}
				}
				slices.SortFunc(es, feed.CompareEntries)
				es = slices.Compact(es)
				es = es[:min(len(es), r.o.InboxCap)]
				b.written += len(es)
				// Empty too: on Redis, an inbox never built would be built
				// from the follows at its first read.
				inboxes = append(inboxes, feed.UserEntries{UserID: u, Entries: es})
			}
			return r.storeInboxes(ctx, b, inboxes, true)
		}, nil)
}

// storeInboxes writes a batch of inboxes, then its checkpoint.
func (r *run) storeInboxes(ctx context.Context, b *batch, inboxes []feed.UserEntries, empty bool) error {
	cp := r.commit(b)(nil)[0]
	if r.o.Store == nil {
		r.cps[b.phase] = cp
		return nil
	}
	if err := restoreInboxes(ctx, r.o.Inbox, inboxes, empty); err != nil {
		return fmt.Errorf("write inboxes: %w", err)
	}
	if err := r.o.Store.SaveImportProgress(ctx, cp); err != nil {
		return err
	}
	r.cps[b.phase] = cp
	return nil
}

// restoreConcurrency is how many Restore calls run at once on an Inbox
// that is no feed.InboxLoader (Redis: one round trip each).
const restoreConcurrency = 16

// restoreInboxes restores inboxes in one call of a feed.InboxLoader, or
// with a Restore each, restoreConcurrency at a time. An empty inbox is
// restored only when empty is set (it marks a Redis inbox built).
func restoreInboxes(ctx context.Context, ib feed.Inbox, inboxes []feed.UserEntries, empty bool) error {
	if l, ok := ib.(feed.InboxLoader); ok {
		return l.RestoreInboxes(ctx, inboxes)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan feed.UserEntries)
	var wg sync.WaitGroup
	for range restoreConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range work {
				if err := ib.Restore(ctx, in.UserID, in.Entries); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for _, in := range inboxes {
		if len(in.Entries) == 0 && !empty {
			continue
		}
		select {
		case work <- in:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}
