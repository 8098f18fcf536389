package feed

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Importing another service's data (feedd import; docs/operations.md,
// "Moving from hmdp"). Rows come with the ids they had there, which feedd
// keeps, so links and ids cached by clients keep working; feedd's own ids
// continue above the largest imported one. The importer reads the source
// in key order, in batches, and writes each batch through an ImportStore
// together with its checkpoint, in one transaction: a re-run resumes after
// the last batch committed, and no row is written twice.

// MaxImportID is the largest id an import keeps: a source row whose id is
// above it is skipped. Every imported id then stays exact in a JavaScript
// number (below 2^53, as web clients read ids), with 2^52 ids of room for
// feedd's own above the largest imported one.
const MaxImportID = 1 << 52

// ImportCheckpoint is where the import of one phase of a source stands: a
// phase is one of the source's tables, read in key order, or a step run
// after them (the inboxes).
type ImportCheckpoint struct {
	Source string // "hmdp"
	Phase  string // "tb_user", ..., "inboxes"
	// Last is the key of the last source row done (0: none): a re-run
	// reads on after it.
	Last int64
	// Done: the phase reached the end of its source (a re-run still reads
	// what was added after Last).
	Done   bool
	Counts ImportCounts
}

// ImportCounts counts the rows of a phase over every run: read from the
// source, imported, and skipped or cleaned by reason (the importer's docs
// name the reasons).
type ImportCounts struct {
	Read     int64            `json:"read"`
	Imported int64            `json:"imported"`
	Skipped  map[string]int64 `json:"skipped,omitempty"`
	Cleaned  map[string]int64 `json:"cleaned,omitempty"`
	// Taken lists the source's keys that were skipped with SkipIDTaken:
	// the store's rows with those ids are its own, and rows of the source
	// that refer to them are not theirs.
	Taken []int64 `json:"taken,omitempty"`
}

// Skip counts n rows skipped for reason.
func (c *ImportCounts) Skip(reason string, n int64) {
	if c.Skipped == nil {
		c.Skipped = map[string]int64{}
	}
	c.Skipped[reason] += n
}

// Clean counts n rows cleaned for reason (imported, with that fault fixed).
func (c *ImportCounts) Clean(reason string, n int64) {
	if c.Cleaned == nil {
		c.Cleaned = map[string]int64{}
	}
	c.Cleaned[reason] += n
}

// SkippedTotal is the number of rows skipped for any reason.
func (c ImportCounts) SkippedTotal() int64 {
	var n int64
	for _, k := range c.Skipped {
		n += k
	}
	return n
}

// Clone returns a copy that shares no map with c.
func (c ImportCounts) Clone() ImportCounts {
	c.Skipped, c.Cleaned, c.Taken = maps.Clone(c.Skipped), maps.Clone(c.Cleaned), slices.Clone(c.Taken)
	return c
}

// Reasons an ImportStore skips a row for: what only the store can see.
const (
	// SkipIDTaken: a row of another kind already has the id (the store
	// served its own users, posts or comments before this import).
	SkipIDTaken = "id_taken"
	// SkipDuplicatePhone: another user already has the phone number.
	SkipDuplicatePhone = "duplicate_phone"
	// SkipDuplicate: the follow or like is there already.
	SkipDuplicate = "duplicate"
)

// ImportSkip is a row of a batch the store did not write: its index in
// the batch and the reason.
type ImportSkip struct {
	Index  int
	Reason string
}

// ImportFollow is a follow to import.
type ImportFollow struct {
	FollowerID, FolloweeID int64
	CreatedAt              time.Time
}

// ImportLike is a like to import. AuthorID is the liked post's author.
type ImportLike struct {
	PostID, UserID, AuthorID int64
	CreatedAt                time.Time
}

// ImportCommit is called by a batch method of ImportStore inside its
// transaction, once the rows are written, with the rows it skipped; it
// returns the checkpoints to save in that transaction. It may be called
// more than once (a transaction that runs again) and changes nothing.
type ImportCommit func(skips []ImportSkip) []ImportCheckpoint

// ImportStore is what feedd import writes through. Each batch method
// writes its rows with the ids they carry, skipping those the store
// cannot take (ImportSkip's reasons), and saves the checkpoints commit
// returns, all in one transaction: either the batch and its checkpoints
// are there, or neither is. Rows come in a batch in the source's key
// order; the store's id sequences are moved past every id it writes.
type ImportStore interface {
	// ImportProgress returns the checkpoints saved for source.
	ImportProgress(ctx context.Context, source string) ([]ImportCheckpoint, error)
	// SaveImportProgress saves checkpoints on their own.
	SaveImportProgress(ctx context.Context, cps ...ImportCheckpoint) error

	// ImportUsers writes users (ID, Phone, NickName, Icon, City,
	// Introduce, CreatedAt, ActiveAt; counts start at 0). Skips:
	// SkipIDTaken, SkipDuplicatePhone.
	ImportUsers(ctx context.Context, users []*User, commit ImportCommit) error
	// ImportPosts writes posts (every field; Liked as given). Skips:
	// SkipIDTaken.
	ImportPosts(ctx context.Context, posts []*Post, commit ImportCommit) error
	// ImportFollows writes follows. Skips: SkipDuplicate.
	ImportFollows(ctx context.Context, follows []ImportFollow, commit ImportCommit) error
	// ImportLikes writes likes, earliest first within a post, and sets the
	// like count of each post of posts (which hold every like of the
	// batch) to its number of likes. Skips: SkipDuplicate.
	ImportLikes(ctx context.Context, posts []int64, likes []ImportLike, commit ImportCommit) error
	// ImportComments writes comments (ID, PostID, UserID, ParentID,
	// AnswerID, Text, Liked, Status, CreatedAt, UpdatedAt; neither hidden
	// by the post's author nor deleted) and no notification: an import is
	// history. The caller checks the threads: a reply's ParentID names a
	// top-level comment of its post, written before it. Then the comment
	// count of each post of the batch, and the reply count of each thread
	// a reply of the batch belongs to, become what the store holds (the
	// comments not deleted). Skips: SkipIDTaken.
	ImportComments(ctx context.Context, comments []*Comment, commit ImportCommit) error
	// Comments returns the comments that exist among ids, by id (as
	// CommentStore's): the importer looks up the threads of the replies it
	// reads with it.
	Comments(ctx context.Context, ids []int64) (map[int64]*Comment, error)

	// ImportedUsers calls fn with every user's id, ascending (the
	// importer keeps those the source has).
	ImportedUsers(ctx context.Context, fn func(id int64)) error
	// ImportedPosts calls fn with every post's id, author and score (the
	// importer keeps those the source has, by the same author).
	ImportedPosts(ctx context.Context, fn func(id, authorID, score int64)) error
	// ImportedFollowees returns the users followed by each user whose id
	// is in [from, to].
	ImportedFollowees(ctx context.Context, from, to int64) (map[int64][]int64, error)
	// FinishImport makes what is derived from the rows true again: every
	// user's follower and followee counts, and pull mode (with the follows'
	// flags) for the users with at least pullThreshold followers (0:
	// nobody enters it). It returns the users in pull mode. Idempotent.
	FinishImport(ctx context.Context, pullThreshold int) (pull []int64, err error)
}

// OutboxCache is an Outbox that keeps copies of the posts index (Redis):
// Forget drops the copies of authorIDs, each rebuilt from the posts at its
// next read. feedd import writes posts to the store alone, and forgets the
// outboxes of their authors.
type OutboxCache interface {
	Forget(ctx context.Context, authorIDs []int64) error
}

// UserEntries is the entries of one user's inbox.
type UserEntries struct {
	UserID  int64
	Entries []Entry
}

// InboxLoader is an Inbox that restores many inboxes in one call, as
// Restore does each (merging, keeping the cap); feedd import fills the
// inboxes of an SQL store with it. An Inbox without it gets a Restore per
// user.
type InboxLoader interface {
	RestoreInboxes(ctx context.Context, inboxes []UserEntries) error
}

// BuiltInbox returns the inbox fan-out and backfill would have built for a
// user whose own newest posts are own and who follows the push-mode
// authors whose newest posts are followees (each list in feed order): every
// own post (a post job delivers to its author too), and the newest
// backfill of each followee's (a follow job's backfill), the newest cap of
// them all, in feed order.
func BuiltInbox(own []Entry, followees [][]Entry, backfill, cap int) []Entry {
	backfill = min(backfill, cap)
	n := min(len(own), cap)
	for _, f := range followees {
		n += min(len(f), backfill)
	}
	all := make([]Entry, 0, n)
	all = append(all, own[:min(len(own), cap)]...)
	for _, f := range followees {
		all = append(all, f[:min(len(f), backfill)]...)
	}
	slices.SortFunc(all, CompareEntries)
	all = slices.Compact(all)
	return all[:min(len(all), cap)]
}

// ImportCommentTargets returns the posts of comments and the threads their
// replies belong to, each once, ascending: the counts an ImportComments of
// them moves.
func ImportCommentTargets(comments []*Comment) (posts, threads []int64) {
	for _, c := range comments {
		posts = append(posts, c.PostID)
		if c.ParentID != 0 {
			threads = append(threads, c.ParentID)
		}
	}
	slices.Sort(posts)
	slices.Sort(threads)
	return slices.Compact(posts), slices.Compact(threads)
}
