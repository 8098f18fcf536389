package feed

// Job is a durable background job. Stores enqueue jobs in the transaction
// of the change that needs them, so a committed change always gets its job
// and a rolled-back one never does. The set is closed: FanoutJob, RemoveJob,
// FollowJob, PushJob and EraseJob are all there is, and only this package can add
// to it.
type Job interface{ isJob() }

// FanoutJob delivers a new post to the inboxes of its author and every
// follower. Stores enqueue it in the transaction that commits the post.
type FanoutJob struct {
	PostID   int64
	AuthorID int64
	Score    int64
}

// RemoveJob removes a deleted post from the inboxes it reached. Stores
// enqueue it in the transaction that deletes the post; until it has run,
// reads skip the entry because the post no longer exists.
type RemoveJob struct {
	PostID   int64
	AuthorID int64
	Score    int64
}

// FollowJob updates a follower's inbox after a follow (backfill the
// followee's recent posts) or an unfollow (remove them). Stores enqueue it
// in the transaction that changes the follow.
type FollowJob struct {
	FollowerID int64
	FolloweeID int64
	Follow     bool
}

// PushJob sends notification group GroupID of UserID to the user's push
// subscription SubscriptionID (Service.DeliverPush). Stores enqueue one
// per subscription that wants the group's kind, in the transaction that
// opens the group.
type PushJob struct {
	SubscriptionID int64
	UserID         int64
	GroupID        int64
}

// EraseJob works the erasure of a user (Service.EraseWork) until it is
// done. AccountStore.StartErasure enqueues it in the transaction that
// records the erasure.
type EraseJob struct {
	ErasureID int64
}

func (FanoutJob) isJob() {}
func (PushJob) isJob()   {}
func (EraseJob) isJob()  {}
func (RemoveJob) isJob() {}
func (FollowJob) isJob() {}
