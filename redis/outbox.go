package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// Outbox is feed.Outbox on Redis: one sorted set per author holding their
// own newest posts (capped like an inbox, with the same sentinel and exact
// tie order). Readers following authors in pull mode page all those
// outboxes in one pipeline.
//
// Source is the durable outbox (the posts index in SQL): an outbox lost from
// Redis is rebuilt from it on the read that finds it missing.
type Outbox struct {
	sets   *Inbox
	Source feed.Outbox
}

var _ feed.Outbox = (*Outbox)(nil)

// NewOutbox returns an Outbox on rdb, rebuilding lost outboxes from source.
func NewOutbox(rdb goredis.UniversalClient, opts InboxOptions, source feed.Outbox) *Outbox {
	opts.Layout = LayoutSortedSet // pages of many outboxes are read with pageScript
	sets := NewInbox(rdb, opts)
	sets.keyOf = OutboxKey
	return &Outbox{sets: sets, Source: source}
}

var _ feed.OutboxCache = (*Outbox)(nil)

// Forget implements feed.OutboxCache: a DEL of each outbox, in pipelines
// of forgetBatch (on a Cluster, go-redis splits each by node). A post
// added meanwhile lands in a lost outbox, which the rebuild merges.
func (o *Outbox) Forget(ctx context.Context, authorIDs []int64) (err error) {
	defer func() { err = storeError(err) }()
	for len(authorIDs) > 0 {
		n := min(len(authorIDs), forgetBatch)
		if _, err := o.sets.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, a := range authorIDs[:n] {
				p.Del(ctx, o.sets.key(a))
			}
			return nil
		}); err != nil {
			return err
		}
		authorIDs = authorIDs[n:]
	}
	return nil
}

// forgetBatch is how many outboxes one pipeline of Forget drops.
const forgetBatch = 1000

// Add implements feed.Outbox: a ZADD (and now and then an exact trim).
func (o *Outbox) Add(ctx context.Context, authorID int64, e feed.Entry) error {
	return o.sets.Deliver(ctx, e, []int64{authorID})
}

// Remove implements feed.Outbox.
func (o *Outbox) Remove(ctx context.Context, authorID int64, e feed.Entry) error {
	return o.sets.Remove(ctx, e, []int64{authorID})
}

// Clear implements feed.Outbox: the author's sorted set goes, sentinel
// and all.
func (o *Outbox) Clear(ctx context.Context, authorID int64) error {
	return o.sets.Clear(ctx, authorID)
}

// Entries implements feed.Outbox: one pipeline of pageScript calls, one per
// author; outboxes found lost are rebuilt from Source and read again.
func (o *Outbox) Entries(ctx context.Context, authorIDs []int64, b feed.Bound, limit int) (_ []feed.Entry, err error) {
	defer func() { err = storeError(err) }()
	if len(authorIDs) == 0 || limit <= 0 {
		return []feed.Entry{}, nil
	}
	pages, lost, err := o.pages(ctx, authorIDs, b, limit)
	if err != nil {
		return nil, err
	}
	if len(lost) > 0 {
		for _, a := range lost {
			es, err := o.Source.Entries(ctx, []int64{a}, feed.AtMost(math.MaxInt64), o.sets.cap)
			if err != nil {
				return nil, err
			}
			if err := o.sets.Restore(ctx, a, es); err != nil {
				return nil, err
			}
		}
		again, stillLost, err := o.pages(ctx, lost, b, limit)
		if err != nil {
			return nil, err
		} else if len(stillLost) > 0 {
			return nil, errors.New("redis: outbox lost again while rebuilt")
		}
		pages = append(pages, again...)
	}
	var all []feed.Entry
	for _, p := range pages {
		all = append(all, p...)
	}
	slices.SortFunc(all, feed.CompareEntries)
	return all, nil
}

// pages reads the first limit entries within b of each author's outbox in
// one pipeline; lost lists the authors whose outbox is missing.
func (o *Outbox) pages(ctx context.Context, authorIDs []int64, b feed.Bound, limit int) (pages [][]feed.Entry, lost []int64, err error) {
	run := func() ([]*goredis.Cmd, error) {
		cmds := make([]*goredis.Cmd, len(authorIDs))
		_, err := o.sets.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, a := range authorIDs {
				cmds[i] = pageScript.EvalSha(ctx, p, []string{o.sets.key(a)}, b.Max, limit, sentinel, beforeArg(b))
			}
			return nil
		})
		return cmds, err
	}
	cmds, err := run()
	if err != nil && !errors.Is(err, goredis.Nil) {
		if !isNoScript(err) {
			return nil, nil, err
		}
		if err := pageScript.Load(ctx, o.sets.rdb).Err(); err != nil {
			return nil, nil, err
		}
		if cmds, err = run(); err != nil && !errors.Is(err, goredis.Nil) {
			return nil, nil, err
		}
	}
	for i, c := range cmds {
		res, err := c.Slice()
		if errors.Is(err, goredis.Nil) {
			lost = append(lost, authorIDs[i])
			continue
		} else if err != nil {
			return nil, nil, err
		}
		es, err := parsePage(res, b)
		if err != nil {
			return nil, nil, fmt.Errorf("redis: outbox of %d: %w", authorIDs[i], err)
		}
		pages = append(pages, es[:min(limit, len(es))])
	}
	return pages, lost, nil
}
