package feedtest

import (
	"context"
	"strconv"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestCommentNotifications runs the notifications of comments on the
// backend (the comment and reply kinds, written by CreateComment and
// DeleteComment in their transactions): grouping per post and per answered
// comment, nobody told of their own comment, a reply to the post's author
// told once, retractions on delete (only when the actor has no other
// comment there), blocks and mutes, the removal of a deleted post's
// groups, and churn: deleting and commenting again within the renotify
// window is told once (the rule of likes and follows): the group is shown
// again, with nothing unread. open must return an empty backend recording with s.
func TestCommentNotifications(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	b := open(t, feed.NotifySettings{})
	w := newNotifyWorld(t, b)
	ctx := t.Context()
	u := w.users(6)
	a, bo, cy, di, ed, fa := u[0], u[1], u[2], u[3], u[4], u[5]
	p := w.publish(a, "Title")
	comment := func(user, to int64, text string) *feed.CommentView {
		t.Helper()
		w.tick(time.Second)
		v, err := w.s.AddComment(ctx, user, p, feed.CommentInput{Text: text, ReplyTo: to})
		must(t, err, "AddComment")
		return v
	}
	b.Notices()
	c1 := comment(bo, 0, "b's first")
	var c *feed.CommentView
	if ns := b.Notices(); len(ns) != 1 || ns[0].UserID != a {
		t.Fatalf("notices after a comment: %+v, want one for the post's author %d", ns, a)
	}
	comment(cy, 0, "c's")
	comment(bo, 0, "b's second")
	comment(a, 0, "the author's own")
	wantGroups(t, w.page(a), "comment:"+itoa(p)+":2:["+itoa(cy)+" "+itoa(bo)+"]") // an actor's first comment places them

	// A reply to b: b hears of it as a reply, a as a comment on the post.
	r := comment(di, c1.ID, "d replies to b")
	wantGroups(t, w.page(bo), "reply:"+itoa(p)+":1:["+itoa(di)+"]")
	if g := w.page(bo)[0]; g.Comment == nil || g.Comment.ID != c1.ID || g.Post == nil || g.Post.ID != p {
		t.Fatalf("the reply group's comment %+v and post %+v", g.Comment, g.Post)
	}
	wantGroups(t, w.page(a), "comment:"+itoa(p)+":3:["+itoa(di)+" "+itoa(cy)+" "+itoa(bo)+"]")
	// A reply to the post's author's own comment: a reply alone.
	own := comment(a, 0, "a's thread")
	comment(ed, own.ID, "e replies to a")
	gs := w.page(a)
	wantGroups(t, gs, "reply:"+itoa(p)+":1:["+itoa(ed)+"]", "comment:"+itoa(p)+":3:["+itoa(di)+" "+itoa(cy)+" "+itoa(bo)+"]")

	// Deletes retract only an actor's last comment there.
	must(t, w.s.DeleteComment(ctx, bo, c1.ID), "delete b's first") // b has another
	must(t, w.s.DeleteComment(ctx, di, r.ID), "delete d's reply")  // d had only it
	wantGroups(t, w.page(a), "reply:"+itoa(p)+":1:["+itoa(ed)+"]", "comment:"+itoa(p)+":2:["+itoa(cy)+" "+itoa(bo)+"]")
	if gs := w.page(bo); len(gs) != 0 {
		t.Fatalf("b's groups after the reply's delete: %q", describe(gs))
	}

	// A block removes the actor's part and keeps new ones out; so does a mute.
	_, err := w.s.Block(ctx, a, cy, true)
	must(t, err, "Block")
	b.Jobs()
	must(t, w.s.Mute(ctx, a, fa, true), "Mute")
	comment(fa, 0, "muted")
	wantGroups(t, w.page(a), "reply:"+itoa(p)+":1:["+itoa(ed)+"]", "comment:"+itoa(p)+":1:["+itoa(bo)+"]")

	// A deleted post takes its comment groups at once, the reply groups
	// of its comments with them.
	x := comment(bo, 0, "b's thread")
	comment(ed, x.ID, "e replies to b")
	if gs := w.page(bo); len(gs) != 1 {
		t.Fatalf("b's groups: %q", describe(gs))
	}
	must(t, w.s.DeletePost(ctx, a, p), "DeletePost")
	b.Jobs()
	for {
		n, err := b.Comments.PurgeComments(context.Background(), p, feed.PurgeBatch)
		must(t, err, "PurgeComments")
		if n < feed.PurgeBatch {
			break
		}
	}
	if gs := w.page(a); len(gs) != 0 {
		t.Fatalf("the author's groups after the post's delete: %q", describe(gs))
	}
	if gs := w.page(bo); len(gs) != 0 {
		t.Fatalf("b's reply groups after the post's delete: %q", describe(gs))
	}

	// Churn: b comments on a's new post and e replies to a's comment there,
	// then each deletes and writes again, a marking read before each round:
	// a is told of each once.
	p = w.publish(a, "churned")
	thread := comment(a, 0, "a's thread")
	b.Notices()
	c, r = comment(bo, 0, "b's"), comment(ed, thread.ID, "e's")
	if ns := b.Notices(); len(ns) != 2 {
		t.Fatalf("notices of the first comment and reply: %+v, want 2", ns)
	}
	for i := range 20 {
		must(t, w.s.MarkNotificationsRead(ctx, a, 0), "MarkNotificationsRead")
		must(t, w.s.DeleteComment(ctx, bo, c.ID), "delete b's")
		must(t, w.s.DeleteComment(ctx, ed, r.ID), "delete e's")
		b.Notices() // the retractions'
		c, r = comment(bo, 0, "b's again"), comment(ed, thread.ID, "e's again")
		if ns := b.Notices(); len(ns) != 2 || ns[0].UserID != a || ns[1].UserID != a {
			t.Fatalf("round %d: notices %+v of a comment and a reply written again, want the two groups shown again to %d", i, ns, a)
		}
		if n := w.unread(a); n != 0 {
			t.Fatalf("round %d: unread %d after a comment and a reply written again, want 0", i, n)
		}
	}
	wantGroups(t, w.page(a), "reply:"+itoa(p)+":1:["+itoa(ed)+"]", "comment:"+itoa(p)+":1:["+itoa(bo)+"]")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
