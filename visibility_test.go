package feed

import (
	"fmt"
	"testing"
)

// TestSee walks the rule of See case by case: a post, a comment with its
// thread and placeholder, and a user, for the viewers around them.
func TestSee(t *testing.T) {
	const author, commenter, viewer, replier = 1, 2, 3, 4
	post := &Post{ID: 10, UserID: author}
	comment := func(mod func(c *Comment)) *Comment {
		c := &Comment{ID: 20, PostID: 10, UserID: commenter}
		if mod != nil {
			mod(c)
		}
		return c
	}
	rel := func(id int64, r Relation) map[int64]Relation { return map[int64]Relation{id: r} }
	type want struct {
		sight     Sight
		collapsed string
		author    Sight
		marked    bool
		del, hide bool
		report    bool
		respond   bool
	}
	hidden := func(c *Comment) { c.AuthorHidden = true }
	moderated := func(c *Comment) { c.Status = CommentHidden }
	deleted := func(c *Comment) { c.Deleted, c.Replies = true, 2 }
	cases := []struct {
		name string
		v    Viewer
		s    Scene
		want want
	}{
		// Users.
		{"user: none", Viewer{ID: viewer}, Scene{User: commenter}, want{sight: Shown, author: Shown}},
		{"user: blocks the viewer", Viewer{ID: viewer}, Scene{User: commenter, Rel: rel(commenter, Relation{BlocksViewer: true})}, want{}},
		{"user: blocked", Viewer{ID: viewer}, Scene{User: commenter, Rel: rel(commenter, Relation{Blocked: true})}, want{}},
		{"user: muted", Viewer{ID: viewer}, Scene{User: commenter, Rel: rel(commenter, Relation{Muted: true})}, want{sight: Folded, collapsed: CollapsedMutedUser, author: Folded}},
		{"user: oneself", Viewer{ID: viewer}, Scene{User: viewer, Rel: rel(viewer, Relation{Muted: true})}, want{sight: Shown, author: Shown}},

		// Posts.
		{"post: none", Viewer{ID: viewer}, Scene{Post: post}, want{sight: Shown, author: Shown, report: true, respond: true}},
		{"post: anonymous", Viewer{}, Scene{Post: post}, want{sight: Shown, author: Shown}},
		{"post: its author blocks the viewer", Viewer{ID: viewer}, Scene{Post: post, Rel: rel(author, Relation{BlocksViewer: true})}, want{}},
		{"post: the viewer blocks its author", Viewer{ID: viewer}, Scene{Post: post, Rel: rel(author, Relation{Blocked: true})},
			want{sight: Folded, collapsed: CollapsedBlockedUser, author: Folded, report: true}},
		{"post: muted author", Viewer{ID: viewer}, Scene{Post: post, Rel: rel(author, Relation{Muted: true})},
			want{sight: Folded, collapsed: CollapsedMutedUser, author: Folded, report: true, respond: true}},
		{"post: muted word", Viewer{ID: viewer}, Scene{Post: post, MutedWord: true}, want{sight: Folded, collapsed: CollapsedMutedWord, author: Shown, report: true, respond: true}},
		{"post: moderated", Viewer{ID: viewer}, Scene{Post: post, PostHidden: true}, want{}},
		{"post: moderated, to its author", Viewer{ID: author}, Scene{Post: post, PostHidden: true, MutedWord: true}, want{sight: Shown, author: Shown, del: true, respond: true}},
		{"post: moderated, to a moderator", Viewer{Moderator: true}, Scene{Post: post, PostHidden: true}, want{sight: Shown, author: Shown, hide: true}},
		{"post: comments off", Viewer{ID: viewer}, Scene{Post: &Post{ID: 10, UserID: author, CommentPolicy: CommentsNobody}}, want{sight: Shown, author: Shown, report: true}},
		{"post: following only, not followed", Viewer{ID: viewer}, Scene{Post: &Post{ID: 10, UserID: author, CommentPolicy: CommentsFollowing}}, want{sight: Shown, author: Shown, report: true}},
		{"post: following only, followed", Viewer{ID: viewer}, Scene{Post: &Post{ID: 10, UserID: author, CommentPolicy: CommentsFollowing}, FollowedByAuthor: true}, want{sight: Shown, author: Shown, report: true, respond: true}},

		// Comments, to a bystander.
		{"comment: none", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(nil)}, want{sight: Shown, author: Shown, report: true, respond: true}},
		{"comment: anonymous", Viewer{}, Scene{Post: post, Comment: comment(nil)}, want{sight: Shown, author: Shown}},
		{"comment: unseen post", Viewer{ID: viewer}, Scene{Post: post, PostHidden: true, Comment: comment(nil)}, want{}},
		{"comment: its author blocks the viewer", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(nil), Rel: rel(commenter, Relation{BlocksViewer: true})}, want{}},
		{"comment: the viewer blocks its author", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(nil), Rel: rel(commenter, Relation{Blocked: true})}, want{}},
		{"comment: muted author", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(nil), Rel: rel(commenter, Relation{Muted: true})},
			want{sight: Folded, collapsed: CollapsedMutedUser, author: Folded, report: true, respond: true}},
		{"comment: muted word", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(nil), MutedWord: true},
			want{sight: Folded, collapsed: CollapsedMutedWord, author: Shown, report: true, respond: true}},
		{"comment: hidden by the post's author", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(hidden)}, want{}},
		{"comment: hidden by moderation", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(moderated)}, want{}},
		{"placeholder", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(deleted), Rel: rel(commenter, Relation{Muted: true})}, want{sight: Shown}},
		{"placeholder of a hidden comment", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(func(c *Comment) { hidden(c); deleted(c) })}, want{}},
		{"placeholder of a moderated comment", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(func(c *Comment) { moderated(c); deleted(c) })}, want{}},
		{"placeholder of a blocked author", Viewer{ID: viewer}, Scene{Post: post, Comment: comment(deleted), Rel: rel(commenter, Relation{BlocksViewer: true})}, want{}},
		{"reply in a hidden thread", Viewer{ID: viewer}, Scene{Post: post, Comment: &Comment{ID: 21, PostID: 10, UserID: replier, ParentID: 20, AnswerID: 20}, Thread: comment(hidden)}, want{}},
		{"reply under a hidden placeholder", Viewer{ID: viewer}, Scene{Post: post, Comment: &Comment{ID: 21, PostID: 10, UserID: replier, ParentID: 20, AnswerID: 20},
			Thread: comment(func(c *Comment) { hidden(c); deleted(c) })}, want{}},
		{"reply in a shown thread", Viewer{ID: viewer}, Scene{Post: post, Comment: &Comment{ID: 21, PostID: 10, UserID: replier, ParentID: 20, AnswerID: 20}, Thread: comment(deleted)},
			want{sight: Shown, author: Shown, report: true, respond: true}},

		// Comments, to their own author.
		{"own comment, hidden", Viewer{ID: commenter}, Scene{Post: post, Comment: comment(func(c *Comment) { hidden(c); moderated(c) })}, want{sight: Shown, author: Shown, del: true, respond: true}},
		{"own reply in a hidden thread", Viewer{ID: replier}, Scene{Post: post, Comment: &Comment{ID: 21, PostID: 10, UserID: replier, ParentID: 20}, Thread: comment(hidden)},
			want{sight: Shown, author: Shown, del: true, respond: true}},
		{"own placeholder", Viewer{ID: commenter}, Scene{Post: post, Comment: comment(deleted)}, want{sight: Shown}},

		// Comments, to the post's author: every one is theirs to remove.
		{"post's author: hidden", Viewer{ID: author}, Scene{Post: post, Comment: comment(hidden)}, want{sight: Shown, author: Shown, marked: true, del: true, hide: true, report: true, respond: true}},
		{"post's author: the commenter blocks them", Viewer{ID: author}, Scene{Post: post, Comment: comment(nil), Rel: rel(commenter, Relation{BlocksViewer: true})},
			want{sight: Folded, collapsed: CollapsedBlockedUser, author: Folded, del: true, hide: true, report: true}},
		{"post's author: they block the commenter", Viewer{ID: author}, Scene{Post: post, Comment: comment(hidden), Rel: rel(commenter, Relation{Blocked: true})},
			want{sight: Folded, collapsed: CollapsedBlockedUser, author: Folded, marked: true, del: true, hide: true, report: true}},
		{"post's author: moderated", Viewer{ID: author}, Scene{Post: post, Comment: comment(moderated)}, want{del: true, hide: true, report: true}},
		{"post's author: hidden placeholder", Viewer{ID: author}, Scene{Post: post, Comment: comment(func(c *Comment) { hidden(c); deleted(c) })}, want{sight: Shown, marked: true}},
		{"moderator", Viewer{Moderator: true}, Scene{Post: post, PostHidden: true, Comment: comment(moderated)}, want{sight: Shown, author: Shown, del: true, hide: true}},
	}
	for _, c := range cases {
		got := See(c.v, c.s)
		g := want{got.Sight, got.Collapsed, got.Author, got.Marked, got.Delete, got.Hide, got.Report, got.Respond}
		if c.s.Post != nil && c.s.Comment == nil {
			g.del = got.Delete && got.Edit
		}
		if g != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, g, c.want)
		}
		if c.s.Post != nil && got.Respond != (got.Refusal == nil) {
			t.Errorf("%s: Respond %v with Refusal %v", c.name, got.Respond, got.Refusal)
		}
	}
	for _, c := range []struct {
		s    Scene
		code string
	}{
		{Scene{Post: post, PostHidden: true}, ENOTFOUND},
		{Scene{Post: post, Rel: rel(author, Relation{Blocked: true})}, EFORBIDDEN},
		{Scene{Post: &Post{ID: 10, UserID: author, CommentPolicy: CommentsNobody}}, EFORBIDDEN},
		{Scene{Post: post, Comment: comment(deleted)}, ENOTFOUND},
		{Scene{Post: post, Comment: comment(hidden)}, ENOTFOUND},
	} {
		if got := ErrorCode(See(Viewer{ID: viewer}, c.s).Refusal); got != c.code {
			t.Errorf("refusal of %s: %q, want %q", fmt.Sprint(c.s.Comment), got, c.code)
		}
	}
}
