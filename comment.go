package feed

import (
	"cmp"
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Comments: two-level threads under every post, as the tutorial's
// tb_blog_comments keeps them. A top-level comment (ParentID 0) opens a
// thread; a reply belongs to its top-level comment's thread (ParentID) and
// names the comment it answers (AnswerID: the top-level comment itself, or
// another reply of the thread: a reply to a reply stays in the thread).
//
// The post's comment count (Post.Comments) and a thread's reply count
// (Comment.Replies) are kept by the stores in the transaction that adds or
// deletes a comment, so they are exact under any concurrency. They count
// the comments that are not deleted, hidden ones included: a count is the
// same for every viewer.

// Limits of comments.
const (
	// MaxCommentText bounds a comment's text, in characters.
	MaxCommentText = 1000
	// RepliesShown is how many of a thread's first replies a page of
	// top-level comments carries with each.
	RepliesShown = 2
	// TopCommentsKept is how many top-level comments a scroll in the top
	// order keeps in its order (its cursor carries them: commentcursor.go);
	// the comments beyond them follow newest first.
	TopCommentsKept = 200
	// PurgeBatch is how many comments of a deleted post one transaction
	// removes (PurgeComments).
	PurgeBatch = 500
	// MaxReportedCommentsLimit bounds a page of the admin's list.
	MaxReportedCommentsLimit = 200
)

// CommentPolicy is who may comment on a post, chosen by its author.
type CommentPolicy int

const (
	CommentsEveryone  CommentPolicy = 0 // the default
	CommentsFollowing CommentPolicy = 1 // the people the author follows
	CommentsNobody    CommentPolicy = 2 // nobody but the author
)

var commentPolicyNames = [...]string{"everyone", "following", "nobody"}

// String is the policy's name in the API.
func (p CommentPolicy) String() string {
	if p >= 0 && int(p) < len(commentPolicyNames) {
		return commentPolicyNames[p]
	}
	return "everyone"
}

// ParseCommentPolicy reads a policy's name. EINVALID for any other.
func ParseCommentPolicy(s string) (CommentPolicy, error) {
	for i, n := range commentPolicyNames {
		if s == n {
			return CommentPolicy(i), nil
		}
	}
	return 0, Errorf(EINVALID, "comment_policy must be everyone, following or nobody")
}

// Refusals of comments, one sentence each (See, Service).
var (
	ErrCommentsOff       = Errorf(EFORBIDDEN, "the author has turned comments off on this post")
	ErrCommentsFollowing = Errorf(EFORBIDDEN, "the author allows comments only from people they follow")
	ErrNotCommentDeleter = Errorf(EFORBIDDEN, "only the comment's author or the post's author may delete this comment")
	ErrNotPostAuthor     = Errorf(EFORBIDDEN, "only the post's author may hide its comments")
	ErrNotPolicySetter   = Errorf(EFORBIDDEN, "only the author may change who may comment on this post")
)

// CommentStatus is a comment's moderation state, the tutorial's status
// column: 0 normal, 1 reported (reports not yet enough to hide it), 2
// hidden (by reports or an admin).
type CommentStatus int

const (
	CommentNormal   CommentStatus = 0
	CommentReported CommentStatus = 1
	CommentHidden   CommentStatus = 2
)

// Comment is a comment or a reply, as the store keeps it.
type Comment struct {
	ID       int64
	PostID   int64
	UserID   int64
	ParentID int64 // the thread's top-level comment; 0 for a top-level comment
	AnswerID int64 // the comment answered; 0 for a top-level comment
	Text     string
	Liked    int
	Replies  int // top-level: its thread's replies that are not deleted
	Status   CommentStatus
	// AuthorHidden: the post's author hid it from their post.
	AuthorHidden bool
	// Deleted: a top-level comment deleted while it had replies, kept
	// without its text so that the thread stays readable. It goes with
	// its last reply.
	Deleted   bool
	CreatedAt time.Time // millisecond precision
	UpdatedAt time.Time
}

// Thread is the id of the comment's thread: its own for a top-level one.
func (c *Comment) Thread() int64 {
	if c.ParentID == 0 {
		return c.ID
	}
	return c.ParentID
}

// Deletion is what deleting c does, given its thread's top-level comment
// (nil for a top-level comment, or when gone): a top-level comment with
// replies stays as a placeholder, without text and likes, so that its
// thread stays readable; any other comment goes, and takes its thread's
// placeholder with it when it is the placeholder's last reply.
func (c *Comment) Deletion(thread *Comment) (placeholder, threadGoes bool) {
	if c.ParentID == 0 {
		return c.Replies > 0, false
	}
	return false, thread != nil && thread.Deleted && thread.Replies <= 1
}

// CommentFacts is what a store reads, in the transaction that adds a
// comment, for Plan to decide on: the state the comment commits on.
type CommentFacts struct {
	// Post is the post (nil: there is none): its ID, UserID and
	// CommentPolicy.
	Post *Post
	// PostHidden: moderation hid the post.
	PostHidden bool
	// FollowedByAuthor: the post's author follows the commenter.
	FollowedByAuthor bool
	// Answered is the comment answered, when it is a comment of the post
	// (nil: a top-level comment, or none such).
	Answered *Comment
	// Rel is the commenter's relations (blocks, either way) to the post's
	// author and to Answered's author.
	Rel map[int64]Relation
	// AnsweredBlocked: the post's author blocks Answered's author, who is
	// then not shown the post, nor told of replies under it.
	AnsweredBlocked bool
}

// CommentPlan is what a store writes for a new comment (Plan).
type CommentPlan struct {
	// ParentID is the thread the comment joins (0: it opens one).
	ParentID int64
	// TellReply is told of a reply to their comment, when See shows them
	// the post (0: nobody), and TellComment of a comment on their post:
	// the post's author, unless told of it as a reply.
	TellReply, TellComment int64
}

// Plan decides, on what the store found, whether c (by c.UserID, a reply
// when c.AnswerID is set) may be added, as See decides, and what the store
// writes: ENOTFOUND "post not found" when there is no post or the
// commenter is not shown it; EFORBIDDEN when the post refuses the comment
// (its policy, a block); ENOTFOUND "comment not found" when the answered
// comment is not one of the post's, or may not be answered.
func (f CommentFacts) Plan(c *Comment) (CommentPlan, error) {
	if f.Post == nil {
		return CommentPlan{}, ErrNotFound("post")
	}
	v := Viewer{ID: c.UserID}
	scene := Scene{Post: f.Post, PostHidden: f.PostHidden, FollowedByAuthor: f.FollowedByAuthor, Rel: f.Rel}
	if vd := See(v, scene); !vd.Respond {
		return CommentPlan{}, vd.Refusal
	}
	plan := CommentPlan{TellComment: f.Post.UserID}
	if c.AnswerID != 0 {
		if f.Answered == nil {
			return CommentPlan{}, ErrNotFound("comment")
		}
		scene.Comment = f.Answered
		if vd := See(v, scene); !vd.Respond {
			return CommentPlan{}, vd.Refusal
		}
		plan.ParentID = cmp.Or(f.Answered.ParentID, f.Answered.ID)
		reader := f.Answered.UserID
		if reader == f.Post.UserID {
			plan.TellComment = 0 // the post's author hears of it as a reply
		}
		sees := Scene{Post: f.Post, PostHidden: f.PostHidden, Rel: map[int64]Relation{f.Post.UserID: {BlocksViewer: f.AnsweredBlocked}}}
		if See(Viewer{ID: reader}, sees).Sight != Unseen {
			plan.TellReply = reader
		}
	}
	return plan, nil
}

// Key is the comment's place in the orders by time: its creation ms and id
// (the feed's Entry, with the comment id in PostID).
func (c *Comment) Key() Entry { return Entry{PostID: c.ID, Score: c.CreatedAt.UnixMilli()} }

// ReportedComment is a comment in the moderation list.
type ReportedComment struct {
	CommentID  int64
	PostID     int64
	AuthorID   int64
	Text       string
	Reports    int    // distinct reporters since the last restore
	LastReason string // "" if none
	Status     CommentStatus
}

// CommentStore persists comments, their likes and reports, and posts'
// comment policies. Implementations: sqlite.DB, postgres.DB;
// feedtest.TestComments is the contract.
type CommentStore interface {
	// CreateComment stores c (setting c.ID, or keeping it when set: an
	// import keeps the source's ids), in one transaction with the post's
	// comment count, the thread's reply count and the notifications. For a
	// reply, c.AnswerID names the comment answered. The store reads
	// CommentFacts in the transaction and writes what their Plan says
	// (c.ParentID, who is told), or returns its error.
	CreateComment(ctx context.Context, c *Comment) error
	// Comment returns one comment; ENOTFOUND if there is none.
	Comment(ctx context.Context, id int64) (*Comment, error)
	// Comments returns the comments that exist among ids, by id.
	Comments(ctx context.Context, ids []int64) (map[int64]*Comment, error)
	// NewComments returns at most limit of postID's top-level comments
	// within b (a Bound on creation ms and id), newest first: a keyset
	// page, exact whatever is added or deleted between two pages.
	NewComments(ctx context.Context, postID int64, b Bound, limit int) ([]*Comment, error)
	// TopComments returns the ids of postID's first limit top-level
	// comments by likes, then newest first: an index range, read from the
	// index alone, whatever the post's size.
	TopComments(ctx context.Context, postID int64, limit int) ([]int64, error)
	// Replies returns at most limit replies of thread threadID after key
	// after (the zero Entry: from the first), oldest first.
	Replies(ctx context.Context, threadID int64, after Entry, limit int) ([]*Comment, error)
	// FirstReplies returns the first n replies of each thread of
	// threadIDs, oldest first, in one round trip.
	FirstReplies(ctx context.Context, threadIDs []int64, n int) (map[int64][]*Comment, error)
	// DeleteComment deletes comment id (the caller has asked See who may)
	// and returns it as it was: as Comment.Deletion decides on the
	// comment and its thread read in the transaction. Counts and
	// notifications move in the same transaction. ENOTFOUND for no comment
	// (or a placeholder) of a post that exists.
	DeleteComment(ctx context.Context, id int64, now time.Time) (*Comment, error)
	// SetCommentLike makes userID like (or stop liking) comment id, the
	// comment's like count in step; idempotent. ENOTFOUND if there is no
	// such comment (a placeholder included), or its author or the post's
	// blocks userID.
	SetCommentLike(ctx context.Context, id, userID int64, like bool, now time.Time) error
	// CommentLikedBy reports which of ids userID likes.
	CommentLikedBy(ctx context.Context, userID int64, ids []int64) (map[int64]bool, error)
	// SetCommentAuthorHidden hides (or shows again) comment id on its
	// post (the caller has asked See who may). ENOTFOUND.
	SetCommentAuthorHidden(ctx context.Context, id int64, hidden bool, now time.Time) error
	// ReportComment records reporterID's report of comment id (one per
	// reporter; again replaces the reason) and, in the same transaction,
	// marks it reported and hides it when rule.Hides the reports that
	// count, as FilterStore.Report does for posts (the block rule with the
	// comment's author). hidden says whether this report hid it. ENOTFOUND.
	ReportComment(ctx context.Context, id, reporterID int64, reason string, now time.Time, rule ReportRule) (hidden bool, err error)
	// SetCommentModerated hides comment id (status hidden) or restores it
	// (status normal, its reports dismissed). Idempotent. ENOTFOUND.
	SetCommentModerated(ctx context.Context, id int64, hidden bool, now time.Time) error
	// ReportedComments lists the comments whose status is not normal, by
	// id descending, below before (0: from the newest), at most limit.
	ReportedComments(ctx context.Context, before int64, limit int) ([]ReportedComment, error)
	// SetCommentPolicy sets the comment policy of postID (the caller has
	// asked See who may). ENOTFOUND.
	SetCommentPolicy(ctx context.Context, postID int64, p CommentPolicy, now time.Time) error
	// PurgeComments removes at most limit comments of a deleted post
	// postID, with their likes, reports and reply notifications, in one
	// transaction, and returns how many it removed (fewer than limit: none
	// is left). It removes nothing of a post that exists.
	PurgeComments(ctx context.Context, postID int64, limit int) (int, error)
}

// CommentInput is what a user sends to comment.
type CommentInput struct {
	Text    string
	ReplyTo int64 // the comment answered; 0 for a top-level comment
}

// Validate returns EINVALID describing the first problem of in: the text
// rules of a post's content.
func (in CommentInput) Validate() error {
	switch {
	case !utf8.ValidString(in.Text):
		return Errorf(EINVALID, "text must be valid UTF-8")
	case strings.TrimSpace(in.Text) == "":
		return Errorf(EINVALID, "text must not be empty")
	case utf8.RuneCountInString(in.Text) > MaxCommentText:
		return Errorf(EINVALID, "text must be at most %d characters", MaxCommentText)
	case strings.ContainsRune(in.Text, 0):
		return Errorf(EINVALID, "text must not contain NUL characters")
	case in.ReplyTo < 0:
		return Errorf(EINVALID, "reply_to must be a positive integer")
	}
	return nil
}
