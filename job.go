package feed

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
