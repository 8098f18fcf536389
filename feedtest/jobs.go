package feedtest

import (
	"context"
	"fmt"

	feed "github.com/feedd/feedd"
)

// audiencePage is how many follower ids Audience reads at a time.
const audiencePage = 100

// Audience returns the inboxes a post of authorID goes to: the author's own
// and every follower's, read in keyset pages with FollowStore.FollowersAfter.
func Audience(ctx context.Context, follows feed.FollowStore, authorID int64) ([]int64, error) {
	ids := []int64{authorID}
	for after := int64(0); ; {
		page, err := follows.FollowersAfter(ctx, authorID, after, audiencePage)
		if err != nil {
			return nil, err
		}
		for _, id := range page {
			if id <= after {
				return nil, fmt.Errorf("FollowersAfter(%d, after %d) returned %v: not ascending past after", authorID, after, page)
			}
			after = id
		}
		ids = append(ids, page...)
		if len(page) < audiencePage {
			return ids, nil
		}
	}
}

// RunJob does what a fan-out worker does with one job: a feed.FanoutJob
// delivers the post's entry to its audience, a feed.RemoveJob removes it.
// A feed.FollowJob (the backfill or removal of the followee's posts in the
// follower's inbox) is accepted and ignored: the suites that run jobs this
// way build their follow graph before any post exists, so there is nothing
// to backfill; the real worker's behaviour is tested with it.
func RunJob(ctx context.Context, b *Backend, job feed.Job) error {
	switch j := job.(type) {
	case feed.FanoutJob:
		to, err := Audience(ctx, b.Follows, j.AuthorID)
		if err != nil {
			return err
		}
		return b.Inbox.Deliver(ctx, feed.Entry{PostID: j.PostID, Score: j.Score}, to)
	case feed.RemoveJob:
		to, err := Audience(ctx, b.Follows, j.AuthorID)
		if err != nil {
			return err
		}
		return b.Inbox.Remove(ctx, feed.Entry{PostID: j.PostID, Score: j.Score}, to)
	case feed.FollowJob:
		return nil
	}
	return fmt.Errorf("feedtest: unknown job %T %#v", job, job)
}

// RunJobs takes the backend's pending jobs and runs them in order.
func RunJobs(ctx context.Context, b *Backend) error {
	for _, j := range b.Jobs() {
		if err := RunJob(ctx, b, j); err != nil {
			return err
		}
	}
	return nil
}
