package fanout

import (
	"context"
	"math"

	feed "github.com/feedd/feedd"
	"github.com/riverqueue/river"
)

// A large audience's ranges: the batch jobs that cover them, and the
// delivery of one range (by its batch job, or by the post job for the
// first).

// insertRanges inserts the batch jobs of the ranges after first's, in
// order: the first few in one transaction as soon as their boundaries are
// known, so that idle workers start at once, then a hundred at a time.
func insertRanges[TTx any](ctx context.Context, client *river.Client[TTx], d *Deps, first BatchArgs) error {
	if first.Upto == math.MaxInt64 {
		return nil
	}
	var params []river.InsertManyParams
	inserted := 0
	flush := func() error {
		if len(params) == 0 {
			return nil
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return err
		}
		d.wake.notify(river.QueueDefault)
		inserted += len(params)
		params = params[:0]
		return nil
	}
	split := d.splitSize()
	for after := first.Upto; ; {
		upto, err := d.Follows.NthFollowerAfter(ctx, first.AuthorID, after, split)
		if err != nil {
			return err
		}
		if upto == 0 {
			// Fewer than SplitSize remain: one last range, if any at all.
			if rest, err := d.Follows.NthFollowerAfter(ctx, first.AuthorID, after, 1); err != nil {
				return err
			} else if rest == 0 {
				return flush()
			}
			upto = math.MaxInt64
		}
		args := first
		args.After, args.Upto = after, upto
		params = append(params, river.InsertManyParams{
			Args: args,
			InsertOpts: &river.InsertOpts{
				Priority:   priorityBatch,
				UniqueOpts: river.UniqueOpts{ByArgs: true},
			},
		})
		if len(params) == 100 || (inserted == 0 && len(params) == firstInserts) {
			if err := flush(); err != nil {
				return err
			}
		}
		if upto == math.MaxInt64 {
			return flush()
		}
		after = upto
	}
}

// firstInserts is how many batch jobs go in the first insert: enough for
// the other workers of a default process (--workers 4) to start together.
const firstInserts = 3

// deliverRange applies a's op to the followers in a's range, in inbox
// writes of BatchSize users, writesInFlight of them under way at once.
func deliverRange(ctx context.Context, d *Deps, a BatchArgs) error {
	e := feed.Entry{PostID: a.PostID, Score: a.Score}
	after, size := a.After, d.batchSize()
	f := newFlight(ctx, writesInFlight)
	for after < a.Upto {
		ids, err := d.audience(f.ctx, a.AuthorID, after, size, a.Since)
		if err != nil {
			return f.wait(err)
		}
		if len(ids) == 0 {
			break
		}
		n := len(ids)
		for n > 0 && ids[n-1] > a.Upto {
			n--
		}
		batch, first := ids[:n], after == 0
		err = f.run(func(ctx context.Context) error {
			// A refused write (some of the batch's inboxes) is returned
			// after the publish: the others hold the post.
			err := apply(ctx, d, a.Op, e, batch)
			if err != nil && !refused(err) {
				return err
			}
			if first && len(batch) > 0 {
				d.observeFirstLag(a.Op, a.Score) // the first range's first batch
			}
			d.publish(ctx, a.Op, e, batch, 0)
			return err
		})
		if err != nil {
			return f.wait(err)
		}
		if n < len(ids) || len(ids) < size {
			break
		}
		after = ids[n-1]
	}
	return f.wait(nil)
}
