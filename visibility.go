package feed

// Visibility: what a viewer is shown of a post, of a comment (with its
// thread and its placeholder) and of a user, and what the viewer may do to
// it, decided by one function, See, from facts the stores hold. Every read
// and write asks it: post routes and feeds, comment views and reply_to,
// notification hydration (listed, counted and live), stream events, and
// the comment writes, in the Service and in the stores' transactions
// (CommentFacts). docs/API.md, "Who sees what", is its table.
//
// A caller gathers the facts (Scene) with a constant number of store calls
// for a whole page (the posts' moderation, SocialStore.Relations of the
// viewer to every user involved, the viewer's muted words) and asks See
// for each item. Service.ReadSights does it for a set of posts and users:
//
//	x, err := s.ReadSights(ctx, readerID, []int64{postID}, []int64{actorID})
//	// a notification, a push: only when x.Post(postID) != Unseen
//	// and x.User(actorID) == Shown
//
// A post shown through another user (a repost, a quote) asks for both:
// the post as it is, and the user who brought it as a user alone.

// Sight is how much of something a viewer is shown. The values are
// ordered: Unseen < Folded < Shown.
type Sight int8

const (
	// Unseen: not at all. It does not exist for the viewer: 404 where
	// asked for by id, left out of every list, never sent live.
	Unseen Sight = iota
	// Folded: shown collapsed where it is asked for (a post by id or in a
	// list, a comment in its thread behind a "show", a user marked), and
	// left out of the feeds and their stream; a Folded user is never a
	// notification's actor. Verdict.Collapsed says why.
	Folded
	// Shown: in full.
	Shown
)

// Why a comment, a post or a user is Folded for its viewer
// (Verdict.Collapsed, CommentView.Collapsed).
const (
	CollapsedMutedUser = "muted_user" // the viewer mutes its author
	CollapsedMutedWord = "muted_word" // it holds one of the viewer's muted words
	// CollapsedBlockedUser: its author and the viewer are in a block (either
	// way), and it is a comment under the viewer's own post, which the
	// post's author is shown so as to remove it.
	CollapsedBlockedUser = "blocked_user"
)

// Viewer is who asks.
type Viewer struct {
	ID int64 // 0: anonymous
	// Moderator: an admin (the admin listener), who is shown everything and
	// may delete and hide any comment.
	Moderator bool
}

// Scene is the facts See decides from: a post, optionally a comment under
// it (with its thread's top-level comment), or a user alone, and the
// viewer's relations to the users involved. Leave out what does not
// concern the question.
type Scene struct {
	// Post is the post, or the comment's post. Nil for a user alone.
	Post *Post
	// PostHidden: moderation hid Post (FilterStore.Hidden).
	PostHidden bool
	// FollowedByAuthor: Post's author follows the viewer, for the comment
	// policy CommentsFollowing.
	FollowedByAuthor bool
	// Comment is a comment under Post (nil: the post itself).
	Comment *Comment
	// Thread is the top-level comment of Comment's thread when Comment is a
	// reply (nil otherwise, or when unknown: the thread is then not asked).
	Thread *Comment
	// User is a user referred to alone (Post nil): a notification's actor,
	// a liker.
	User int64
	// MutedWord: the text (a post's title or content, a comment's text)
	// holds one of the viewer's muted words.
	MutedWord bool
	// Rel is the viewer's relation to each of the users above (the post's,
	// the comment's and the thread's authors, the user), as
	// SocialStore.Relations returns them: a user absent has none.
	Rel map[int64]Relation
}

// Verdict is what a viewer is shown of a scene's subject (the comment, or
// else the post, or else the user) and what they may do to it.
type Verdict struct {
	Sight Sight
	// Collapsed is why Sight is Folded (a Collapsed... constant); "" when
	// it is not.
	Collapsed string
	// Author is how the subject's author is shown with it (for a user
	// alone, the user): Unseen with an unseen subject and for a deleted
	// placeholder, Folded when the reason of the fold is its author.
	Author Sight
	// Marked: a comment the post's author hid, shown to the post's author
	// (CommentView.Hidden).
	Marked bool

	// Delete: may delete it. A comment: its author, the post's author
	// (whatever blocks exist), a moderator; a placeholder: nobody (it goes
	// with its last reply).
	Delete bool
	// Hide: may hide it from the post (or show it again): a comment, by the
	// post's author (whatever blocks exist) or a moderator.
	Hide bool
	// Report: may report it: a signed-in viewer who is shown it and is not
	// its author, and the post's author every comment under the post.
	Report bool
	// Edit: may change the post (its comment policy): its author.
	Edit bool
	// Respond: may comment on the post (under its comment policy), or like
	// a comment or answer it. Refusal says why not.
	Respond bool
	// Refusal is the error of a response refused (nil when Respond):
	// ENOTFOUND for what the viewer is not shown, EFORBIDDEN otherwise.
	Refusal error
}

// ErrCommentsBlocked refuses a comment on a post whose author the
// commenter blocks.
var ErrCommentsBlocked = Errorf(EFORBIDDEN, "you block the post's author: unblock them to comment")

// See decides, for viewer v, what v is shown of s's subject and what v may
// do to it. It does no I/O. The rule, in full (docs/API.md, "Who sees
// what"):
//
//   - A user: Unseen when either blocks the other, Folded when v mutes
//     them, else Shown; oneself always Shown.
//   - A post: Unseen when its author blocks v, or moderation hid it;
//     Folded when v mutes its author or blocks them, or it holds a word v
//     muted; else Shown. Its author and moderators are always Shown it.
//   - A comment: Unseen when its post is; to its own author (and
//     moderators) always Shown. To the post's author: Unseen when
//     moderation hid it, Folded when in a block with its author, Marked
//     when the post's author hid it. To others: Unseen when in a block
//     with its author, hidden by moderation or by the post's author;
//     Folded when v mutes its author or it holds a muted word. A reply is
//     Unseen when its thread's top-level comment is. A deleted placeholder
//     keeps its comment's hiding and is otherwise Shown, without author or
//     text.
func See(v Viewer, s Scene) Verdict {
	switch {
	case s.Comment != nil:
		return seeComment(v, s)
	case s.Post != nil:
		return seePost(v, s)
	}
	return seeUser(v, s.User, s.Rel[s.User])
}

// fold is a Verdict at sight, folded for why.
func fold(sight Sight, why string) Verdict {
	out := Verdict{Sight: sight, Author: sight}
	if sight == Folded {
		out.Collapsed = why
		if why == CollapsedMutedWord {
			out.Author = Shown // the text is folded, not its author
		}
	}
	return out
}

// errSignedOut refuses a response of an anonymous viewer.
var errSignedOut = Errorf(EUNAUTHORIZED, "log in first")

func seeUser(v Viewer, id int64, r Relation) Verdict {
	switch {
	case v.Moderator || (v.ID > 0 && id == v.ID):
		return fold(Shown, "")
	case r.BlocksViewer || r.Blocked:
		return fold(Unseen, "")
	case r.Muted:
		return fold(Folded, CollapsedMutedUser)
	}
	return fold(Shown, "")
}

func seePost(v Viewer, s Scene) Verdict {
	p := s.Post
	own := v.ID > 0 && p.UserID == v.ID
	r := s.Rel[p.UserID]
	var out Verdict
	switch {
	case own || v.Moderator:
		out = fold(Shown, "")
	case r.BlocksViewer || s.PostHidden:
		out = fold(Unseen, "")
	case r.Muted:
		out = fold(Folded, CollapsedMutedUser)
	case r.Blocked:
		out = fold(Folded, CollapsedBlockedUser)
	case s.MutedWord:
		out = fold(Folded, CollapsedMutedWord)
	default:
		out = fold(Shown, "")
	}
	out.Edit, out.Delete = own, own
	out.Hide = v.Moderator
	out.Report = v.ID > 0 && !own && out.Sight != Unseen
	switch {
	case out.Sight == Unseen:
		out.Refusal = ErrNotFound("post")
	case v.ID <= 0:
		out.Refusal = errSignedOut
	case own:
	case r.Blocked:
		out.Refusal = ErrCommentsBlocked
	case p.CommentPolicy == CommentsNobody:
		out.Refusal = ErrCommentsOff
	case p.CommentPolicy == CommentsFollowing && !s.FollowedByAuthor:
		out.Refusal = ErrCommentsFollowing
	}
	out.Respond = out.Refusal == nil
	return out
}

// errInBlock refuses a response to a comment whose author and the viewer
// are in a block (the post's author is shown it, folded).
var errInBlock = Errorf(EFORBIDDEN, "you and the comment's author are in a block")

func seeComment(v Viewer, s Scene) Verdict {
	c := s.Comment
	if post := seePost(v, Scene{Post: s.Post, PostHidden: s.PostHidden, Rel: s.Rel}); post.Sight == Unseen {
		return Verdict{Refusal: ErrNotFound("comment")}
	}
	own := v.ID > 0 && c.UserID == v.ID
	postAuthor := v.ID > 0 && s.Post.UserID == v.ID
	r := s.Rel[c.UserID]
	blocked := r.BlocksViewer || r.Blocked
	var out Verdict
	switch {
	case own || v.Moderator:
		out = fold(Shown, "")
	case c.Status == CommentHidden:
		out = fold(Unseen, "")
	case blocked && postAuthor:
		out = fold(Folded, CollapsedBlockedUser)
	case blocked, c.AuthorHidden && !postAuthor:
		out = fold(Unseen, "")
	case r.Muted:
		out = fold(Folded, CollapsedMutedUser)
	case s.MutedWord:
		out = fold(Folded, CollapsedMutedWord)
	default:
		out = fold(Shown, "")
	}
	out.Marked = c.AuthorHidden && postAuthor && !own && out.Sight != Unseen
	if s.Thread != nil && s.Thread.ID != c.ID && !own && !v.Moderator {
		// A reply goes with its thread.
		if See(v, Scene{Post: s.Post, PostHidden: s.PostHidden, Comment: s.Thread, Rel: s.Rel}).Sight == Unseen {
			out = fold(Unseen, "")
		}
	}
	if c.Deleted && out.Sight != Unseen {
		// A placeholder keeps its comment's hiding; it has nothing to fold.
		out.Sight, out.Collapsed, out.Author = Shown, "", Unseen
	}
	live := !c.Deleted
	out.Delete = live && (postAuthor || v.Moderator || (own && out.Sight != Unseen))
	out.Hide = live && (postAuthor || v.Moderator)
	out.Report = live && v.ID > 0 && !own && (out.Sight != Unseen || postAuthor)
	switch {
	case out.Sight == Unseen || !live:
		out.Refusal = ErrNotFound("comment")
	case v.ID <= 0:
		out.Refusal = errSignedOut
	case blocked:
		out.Refusal = errInBlock
	}
	out.Respond = out.Refusal == nil
	return out
}
