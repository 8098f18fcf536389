package feedtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestComments runs the contract of comments (feed.CommentStore and the
// comment rules of feed.Service) on the backend: the model, exact counts
// under 1,000 concurrent comments, the comment policy, blocks, mutes and
// muted words, hiding and moderation, deletes with replies and the purge
// of a deleted post's comments, likes, and cursors that stay exact under
// concurrent writes (randomized). open must return an empty backend on
// every call.
func TestComments(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("Model", func(t *testing.T) { testCommentModel(t, open(t)) })
	t.Run("ConcurrentCounts", func(t *testing.T) { testCommentCounts(t, open(t), 1000) })
	t.Run("Policy", func(t *testing.T) { testCommentPolicy(t, open(t)) })
	t.Run("Blocks", func(t *testing.T) { testCommentBlocks(t, open(t)) })
	t.Run("Mutes", func(t *testing.T) { testCommentMutes(t, open(t)) })
	t.Run("Hidden", func(t *testing.T) { testCommentHidden(t, open(t)) })
	t.Run("Deletes", func(t *testing.T) { testCommentDeletes(t, open(t)) })
	t.Run("Likes", func(t *testing.T) { testCommentLikes(t, open(t)) })
	t.Run("Ranked", func(t *testing.T) { testCommentRanked(t, open(t)) })
	t.Run("CursorNew", func(t *testing.T) { testCommentCursor(t, open(t), feed.CommentOrderNew, 60) })
	t.Run("CursorTop", func(t *testing.T) { testCommentCursor(t, open(t), feed.CommentOrderTop, 60) })
	t.Run("CursorTopTail", func(t *testing.T) { testCommentCursor(t, open(t), feed.CommentOrderTop, feed.TopCommentsKept+40) })
	t.Run("CursorReplies", func(t *testing.T) { testCommentCursor(t, open(t), "replies", 60) })
}

// commentWorld is a service on a backend with a clock the test moves.
type commentWorld struct {
	t     *testing.T
	b     *Backend
	s     *feed.Service
	clock *atomic.Int64
	next  atomic.Int64 // phone numbers
}

func newCommentWorld(t *testing.T, b *Backend) *commentWorld {
	clock := &atomic.Int64{}
	clock.Store(base().UnixMilli())
	s := newService(b, clock)
	s.ReportMinAge = 0
	w := &commentWorld{t: t, b: b, s: s, clock: clock}
	w.next.Store(100)
	return w
}

func (w *commentWorld) tick() { w.clock.Add(1) }

func (w *commentWorld) users(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = newUser(w.t, w.b, int(w.next.Add(1)), time.UnixMilli(w.clock.Load()).Add(-48*time.Hour)).ID
	}
	return ids
}

func (w *commentWorld) post(author int64) *feed.Post {
	w.t.Helper()
	w.tick()
	p, err := w.s.Publish(w.t.Context(), author, feed.PostInput{Title: "post", Content: "c"})
	must(w.t, err, "Publish")
	w.b.Jobs()
	return p
}

func (w *commentWorld) add(user, post, replyTo int64, text string) (*feed.CommentView, error) {
	w.tick()
	return w.s.AddComment(context.Background(), user, post, feed.CommentInput{Text: text, ReplyTo: replyTo})
}

func (w *commentWorld) comment(user, post int64, text string) *feed.CommentView {
	w.t.Helper()
	v, err := w.add(user, post, 0, text)
	must(w.t, err, fmt.Sprintf("AddComment(%d on %d)", user, post))
	return v
}

func (w *commentWorld) reply(user, post, to int64, text string) *feed.CommentView {
	w.t.Helper()
	v, err := w.add(user, post, to, text)
	must(w.t, err, fmt.Sprintf("AddComment(%d replying to %d)", user, to))
	return v
}

// list reads all of post's top-level comments for viewer, pages of n.
func (w *commentWorld) list(viewer, post int64, order string, n int) []feed.CommentView {
	w.t.Helper()
	var out []feed.CommentView
	var cur *feed.CommentCursor
	for i := 0; ; i++ {
		p, err := w.s.PostComments(w.t.Context(), viewer, post, order, cur, n)
		must(w.t, err, "PostComments")
		out = append(out, p.List...)
		if p.Next == nil {
			return out
		}
		if i > 10000 {
			w.t.Fatal("comment scroll does not end")
		}
		cur = roundTrip(w.t, *p.Next, order)
	}
}

// replies reads all of a thread's replies for viewer.
func (w *commentWorld) replies(viewer, thread int64, n int) []feed.CommentView {
	w.t.Helper()
	var out []feed.CommentView
	var cur *feed.CommentCursor
	for {
		p, err := w.s.CommentReplies(w.t.Context(), viewer, thread, cur, n)
		must(w.t, err, "CommentReplies")
		out = append(out, p.List...)
		if p.Next == nil {
			return out
		}
		cur = roundTrip(w.t, *p.Next, "replies")
	}
}

// roundTrip passes a cursor through its client form, as clients do.
func roundTrip(t testing.TB, c feed.CommentCursor, order string) *feed.CommentCursor {
	t.Helper()
	d, err := feed.DecodeCommentCursor(feed.EncodeCommentCursor(c), order)
	must(t, err, "DecodeCommentCursor")
	return &d
}

func commentIDs(vs []feed.CommentView) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

func (w *commentWorld) getPost(id int64) *feed.Post { return getPost(w.t, w.b, id) }

func (w *commentWorld) getComment(id int64) *feed.Comment {
	w.t.Helper()
	c, err := w.b.Comments.Comment(w.t.Context(), id)
	must(w.t, err, fmt.Sprintf("Comment(%d)", id))
	return c
}

func testCommentModel(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, bo, cy := u[0], u[1], u[2]
	p, other := w.post(a), w.post(a)
	text := "first <b>bold</b> & \"quoted\"\nline two"
	c1 := w.comment(bo, p.ID, text)
	if c1.Text != text || c1.ParentID != 0 || c1.AnswerID != 0 || c1.Author == nil || c1.Author.ID != bo || c1.PostID != p.ID {
		t.Fatalf("new comment %+v", c1)
	}
	r1 := w.reply(cy, p.ID, c1.ID, "a reply")
	r2 := w.reply(a, p.ID, r1.ID, "a reply to the reply")
	if r1.ParentID != c1.ID || r1.AnswerID != c1.ID || r2.ParentID != c1.ID || r2.AnswerID != r1.ID {
		t.Fatalf("replies: %+v, %+v; want both in thread %d", r1.Comment, r2.Comment, c1.ID)
	}
	if r2.ReplyTo == nil || r2.ReplyTo.ID != cy {
		t.Fatalf("a reply to a reply names %+v, want user %d", r2.ReplyTo, cy)
	}
	if n := w.getPost(p.ID).Comments; n != 3 {
		t.Fatalf("post comments = %d, want 3", n)
	}
	if n := w.getComment(c1.ID).Replies; n != 2 {
		t.Fatalf("thread replies = %d, want 2", n)
	}
	c2 := w.comment(cy, p.ID, "second")
	got := w.list(bo, p.ID, feed.CommentOrderNew, 10)
	if ids := commentIDs(got); !slices.Equal(ids, []int64{c2.ID, c1.ID}) {
		t.Fatalf("new order %v, want %v", ids, []int64{c2.ID, c1.ID})
	}
	if fr := commentIDs(got[1].FirstReplies); !slices.Equal(fr, []int64{r1.ID, r2.ID}) {
		t.Fatalf("first replies %v, want %v", fr, []int64{r1.ID, r2.ID})
	}
	if ids := commentIDs(w.replies(bo, c1.ID, 1)); !slices.Equal(ids, []int64{r1.ID, r2.ID}) {
		t.Fatalf("replies %v", ids)
	}
	_, err := w.s.CommentReplies(ctx, bo, r1.ID, nil, 10)
	wantCode(t, err, feed.EINVALID, "replies of a reply")

	// Refusals change nothing.
	for _, bad := range []string{"", "   ", strings.Repeat("x", feed.MaxCommentText+1), "nul\x00", "\xff"} {
		_, err := w.add(bo, p.ID, 0, bad)
		wantCode(t, err, feed.EINVALID, fmt.Sprintf("comment %.20q", bad))
	}
	_, err = w.add(bo, other.ID, c1.ID, "reply elsewhere")
	wantCode(t, err, feed.EINVALID, "a reply to a comment of another post")
	_, err = w.add(bo, p.ID, 1<<40, "reply to nothing")
	wantCode(t, err, feed.ENOTFOUND, "a reply to no comment")
	_, err = w.add(bo, 1<<40, 0, "on nothing")
	wantCode(t, err, feed.ENOTFOUND, "a comment on no post")
	if n := w.getPost(p.ID).Comments; n != 4 {
		t.Fatalf("post comments after refusals = %d, want 4", n)
	}

	// An id given is kept (an import), and later ones follow it.
	kept := &feed.Comment{ID: c2.ID + 1000, PostID: p.ID, UserID: cy, Text: "imported", CreatedAt: base(), UpdatedAt: base()}
	must(t, b.Comments.CreateComment(ctx, kept), "CreateComment with an id")
	if kept.ID != c2.ID+1000 || w.getComment(kept.ID).Text != "imported" {
		t.Fatalf("imported comment id %d", kept.ID)
	}
	dup := &feed.Comment{ID: kept.ID, PostID: p.ID, UserID: cy, Text: "again", CreatedAt: base(), UpdatedAt: base()}
	wantCode(t, b.Comments.CreateComment(ctx, dup), feed.ECONFLICT, "a second comment with the same id")
	if next := w.comment(bo, p.ID, "after the import"); next.ID <= kept.ID {
		t.Fatalf("a comment after an import got id %d, not above %d", next.ID, kept.ID)
	}
	if n := w.getPost(p.ID).Comments; n != 6 {
		t.Fatalf("post comments = %d, want 6", n)
	}
	cs, err := b.Comments.Comments(ctx, []int64{c1.ID, r2.ID, 1 << 40})
	must(t, err, "Comments")
	if len(cs) != 2 || cs[c1.ID].Text != text || cs[r2.ID].AnswerID != r1.ID {
		t.Fatalf("Comments = %v", cs)
	}
}

// testCommentCounts adds n comments and replies to one post from
// concurrent goroutines, while some of them are deleted: the post's count
// and every thread's count equal what can be read.
func testCommentCounts(t *testing.T, b *Backend, n int) {
	w := newCommentWorld(t, b)
	users := w.users(20)
	p := w.post(users[0])
	var mu sync.Mutex
	var made []*feed.CommentView
	var added, deleted atomic.Int64
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := g; i < n; i += 16 {
				user := users[r.IntN(len(users))]
				var to int64
				mu.Lock()
				if len(made) > 0 && r.IntN(10) < 3 {
					to = made[r.IntN(len(made))].ID
				}
				mu.Unlock()
				v, err := w.add(user, p.ID, to, fmt.Sprintf("comment %d", i))
				if feed.ErrorCode(err) == feed.ENOTFOUND && to != 0 {
					v, err = w.add(user, p.ID, 0, fmt.Sprintf("comment %d", i)) // its answer was deleted meanwhile
				}
				if err != nil {
					errs <- err
					return
				}
				added.Add(1)
				mu.Lock()
				made = append(made, v)
				var victim *feed.CommentView
				if r.IntN(10) == 0 {
					victim = made[r.IntN(len(made))]
				}
				mu.Unlock()
				if victim != nil {
					err := w.s.DeleteComment(context.Background(), victim.UserID, victim.ID)
					switch feed.ErrorCode(err) {
					case "":
						deleted.Add(1)
					case feed.ENOTFOUND: // deleted already
					default:
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, top := range w.list(users[0], p.ID, feed.CommentOrderNew, 100) {
		rs := w.replies(users[0], top.ID, 100)
		if got := w.getComment(top.ID).Replies; got != len(rs) {
			t.Fatalf("thread %d counts %d replies, %d read", top.ID, got, len(rs))
		}
		total += len(rs)
		if !top.Deleted {
			total++
		}
	}
	if got := w.getPost(p.ID).Comments; got != total || int64(got) != added.Load()-deleted.Load() {
		t.Fatalf("post counts %d comments; %d read, %d added less %d deleted", got, total, added.Load(), deleted.Load())
	}
	t.Logf("%d comments added, %d deleted, %d left", added.Load(), deleted.Load(), total)
}

func testCommentPolicy(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, friend, stranger := u[0], u[1], u[2]
	must(t, b.Follows.SetFollow(ctx, a, friend, true, base()), "SetFollow")
	w.b.Jobs()
	p := w.post(a)
	w.comment(stranger, p.ID, "anyone may")
	v, err := w.s.SetCommentPolicy(ctx, a, p.ID, feed.CommentsFollowing)
	must(t, err, "SetCommentPolicy")
	if v.CommentPolicy != feed.CommentsFollowing {
		t.Fatalf("policy after the change: %v", v.CommentPolicy)
	}
	_, err = w.add(stranger, p.ID, 0, "refused")
	wantMessage(t, err, feed.EFORBIDDEN, "the author allows comments only from people they follow", "a stranger under following")
	w.comment(friend, p.ID, "a friend may")
	w.comment(a, p.ID, "the author may")
	_, err = w.s.SetCommentPolicy(ctx, friend, p.ID, feed.CommentsEveryone)
	wantCode(t, err, feed.EFORBIDDEN, "another user's policy change")
	_, err = w.s.SetCommentPolicy(ctx, a, 1<<40, feed.CommentsEveryone)
	wantCode(t, err, feed.ENOTFOUND, "the policy of no post")
	_, err = w.s.SetCommentPolicy(ctx, a, p.ID, feed.CommentsNobody)
	must(t, err, "SetCommentPolicy nobody")
	_, err = w.add(friend, p.ID, 0, "refused")
	wantMessage(t, err, feed.EFORBIDDEN, "the author has turned comments off on this post", "a friend under nobody")
	w.comment(a, p.ID, "the author still may")
	if n := w.getPost(p.ID).Comments; n != 4 {
		t.Fatalf("comments = %d, want 4", n)
	}
	// Set when posting.
	q, err := w.s.Publish(ctx, a, feed.PostInput{Title: "t", Content: "c", CommentPolicy: feed.CommentsNobody})
	must(t, err, "Publish")
	b.Jobs()
	if got := w.getPost(q.ID).CommentPolicy; got != feed.CommentsNobody {
		t.Fatalf("policy given when posting: %v", got)
	}
	_, err = w.add(stranger, q.ID, 0, "refused")
	wantCode(t, err, feed.EFORBIDDEN, "a comment on a post that allows none")
	_, err = w.s.Publish(ctx, a, feed.PostInput{Title: "t", Content: "c", CommentPolicy: 7})
	wantCode(t, err, feed.EINVALID, "an unknown policy")
}

func testCommentBlocks(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, x, c := u[0], u[1], u[2]
	p, q := w.post(a), w.post(c) // a's post, and a third user's
	ac := w.comment(a, q.ID, "a's comment on c's post")
	xc := w.comment(x, q.ID, "x's comment on c's post")
	_, err := b.Social.SetBlock(ctx, a, x, true, base())
	must(t, err, "SetBlock")
	b.Jobs()
	_, err = w.add(x, p.ID, 0, "on the blocker's post")
	wantCode(t, err, feed.ENOTFOUND, "a blocked user's comment")
	_, err = w.add(x, q.ID, ac.ID, "a reply to the blocker")
	wantCode(t, err, feed.ENOTFOUND, "a blocked user's reply to the blocker")
	wantCode(t, w.s.SetCommentLike(ctx, x, ac.ID, true), feed.ENOTFOUND, "a blocked user's like of the blocker's comment")
	if ids := commentIDs(w.list(x, q.ID, feed.CommentOrderNew, 10)); !slices.Equal(ids, []int64{xc.ID}) {
		t.Fatalf("the blocked user sees %v, want only their own %d", ids, xc.ID)
	}
	if ids := commentIDs(w.list(a, q.ID, feed.CommentOrderNew, 10)); !slices.Equal(ids, []int64{ac.ID}) {
		t.Fatalf("the blocker sees %v, want only their own %d", ids, ac.ID)
	}
	if ids := commentIDs(w.list(c, q.ID, feed.CommentOrderNew, 10)); len(ids) != 2 {
		t.Fatalf("a third user sees %v, want both", ids)
	}
	_, err = w.s.CommentReplies(ctx, x, ac.ID, nil, 10)
	wantCode(t, err, feed.ENOTFOUND, "the blocker's thread, to the blocked")
	_, err = w.s.PostComments(ctx, x, p.ID, "", nil, 10)
	wantCode(t, err, feed.ENOTFOUND, "the comments of the blocker's post, to the blocked")
	_, err = b.Social.SetBlock(ctx, a, x, false, base())
	must(t, err, "unblock")
	w.comment(x, p.ID, "after the unblock")
}

func testCommentMutes(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, m, o := u[0], u[1], u[2]
	p := w.post(a)
	mc := w.comment(m, p.ID, "from the muted")
	oc := w.comment(o, p.ID, "big SPOILER here")
	ac := w.comment(a, p.ID, "my own spoiler")
	must(t, b.Social.SetMute(ctx, a, m, true, base()), "SetMute")
	must(t, b.Filters.SetMutedWord(ctx, a, "spoiler", true, base()), "SetMutedWord")
	got := map[int64]string{}
	for _, v := range w.list(a, p.ID, feed.CommentOrderNew, 10) {
		got[v.ID] = v.Collapsed
	}
	want := map[int64]string{mc.ID: feed.CollapsedMutedUser, oc.ID: feed.CollapsedMutedWord, ac.ID: ""}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("collapsed for the muter %v, want %v", got, want)
	}
	for _, v := range w.list(o, p.ID, feed.CommentOrderNew, 10) {
		if v.Collapsed != "" {
			t.Fatalf("comment %d collapsed (%s) for a user who mutes nothing", v.ID, v.Collapsed)
		}
	}
}

func testCommentHidden(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(6)
	a, c, o := u[0], u[1], u[2]
	p := w.post(a)
	hc := w.comment(c, p.ID, "to be hidden")
	keep := w.comment(o, p.ID, "kept")
	must(t, w.s.HideComment(ctx, a, hc.ID, true), "HideComment")
	must(t, w.s.HideComment(ctx, a, hc.ID, true), "HideComment again")
	wantCode(t, w.s.HideComment(ctx, o, keep.ID, true), feed.EFORBIDDEN, "hiding a comment of another's post")
	view := func(viewer int64) map[int64]bool {
		out := map[int64]bool{}
		for _, v := range w.list(viewer, p.ID, feed.CommentOrderTop, 10) {
			out[v.ID] = v.Hidden
		}
		return out
	}
	if got := view(o); len(got) != 1 || !slicesHas(got, keep.ID) {
		t.Fatalf("another user sees %v, want the kept comment alone", got)
	}
	if got := view(c); len(got) != 2 || got[hc.ID] {
		t.Fatalf("the hidden comment's author sees %v, want it unmarked", got)
	}
	if got := view(a); len(got) != 2 || !got[hc.ID] {
		t.Fatalf("the post's author sees %v, want it marked hidden", got)
	}
	_, err := w.add(o, p.ID, hc.ID, "reply to a hidden comment")
	wantCode(t, err, feed.ENOTFOUND, "a reply to a hidden comment")
	must(t, w.s.HideComment(ctx, a, hc.ID, false), "show again")
	if got := view(o); len(got) != 2 {
		t.Fatalf("after showing it again another user sees %v", got)
	}

	// Reports: three that count hide it, as for posts; the admin restores.
	for i, r := range u[3:] {
		must(t, w.s.ReportComment(ctx, r, keep.ID, "rude"), "ReportComment")
		if c := w.getComment(keep.ID); (i < 2 && c.Status != feed.CommentReported) || (i == 2 && c.Status != feed.CommentHidden) {
			t.Fatalf("after %d reports the status is %d", i+1, c.Status)
		}
	}
	wantCode(t, w.s.ReportComment(ctx, o, keep.ID, "mine"), feed.EINVALID, "reporting one's own comment")
	if got := view(c); len(got) != 1 {
		t.Fatalf("a comment hidden by reports is seen by another user: %v", got)
	}
	if got := view(o); len(got) != 2 {
		t.Fatalf("its author no longer sees it: %v", got)
	}
	list, next, err := w.s.ReportedComments(ctx, 0, 10)
	must(t, err, "ReportedComments")
	if len(list) != 1 || next != 0 || list[0] != (feed.ReportedComment{CommentID: keep.ID, PostID: p.ID, AuthorID: o, Text: "kept", Reports: 3, LastReason: "rude", Status: feed.CommentHidden}) {
		t.Fatalf("ReportedComments = %+v", list)
	}
	must(t, w.s.ModerateComment(ctx, keep.ID, false), "restore")
	if got := view(c); len(got) != 2 {
		t.Fatalf("a restored comment is not seen: %v", got)
	}
	if list, _, _ := w.s.ReportedComments(ctx, 0, 10); len(list) != 0 {
		t.Fatalf("ReportedComments after the restore = %+v", list)
	}
	must(t, w.s.ModerateComment(ctx, keep.ID, true), "hide by the admin")
	if got := view(c); len(got) != 1 {
		t.Fatalf("a comment the admin hid is seen: %v", got)
	}
	wantCode(t, w.s.ModerateComment(ctx, 1<<40, true), feed.ENOTFOUND, "moderating no comment")
}

func slicesHas(m map[int64]bool, id int64) bool { _, ok := m[id]; return ok }

func testCommentDeletes(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(3)
	a, c, o := u[0], u[1], u[2]
	p := w.post(a)
	top := w.comment(c, p.ID, "thread")
	r1 := w.reply(o, p.ID, top.ID, "r1")
	r2 := w.reply(c, p.ID, r1.ID, "r2")
	alone := w.comment(o, p.ID, "alone")
	wantCode(t, w.s.DeleteComment(ctx, o, top.ID), feed.EFORBIDDEN, "deleting another's comment")
	must(t, w.s.DeleteComment(ctx, c, top.ID), "delete a thread with replies")
	got := w.list(o, p.ID, feed.CommentOrderNew, 10)
	if len(got) != 2 || got[1].ID != top.ID || !got[1].Deleted || got[1].Text != "" || got[1].Author != nil {
		t.Fatalf("after deleting a thread: %+v", got)
	}
	if ids := commentIDs(got[1].FirstReplies); !slices.Equal(ids, []int64{r1.ID, r2.ID}) {
		t.Fatalf("the placeholder's replies %v", ids)
	}
	if n := w.getPost(p.ID).Comments; n != 3 {
		t.Fatalf("comments after the placeholder = %d, want 3", n)
	}
	wantCode(t, w.s.DeleteComment(ctx, c, top.ID), feed.ENOTFOUND, "deleting a placeholder")
	_, err := w.add(o, p.ID, top.ID, "reply to the placeholder")
	wantCode(t, err, feed.ENOTFOUND, "a reply answering a placeholder")
	w.reply(o, p.ID, r2.ID, "still in the thread")
	must(t, w.s.DeleteComment(ctx, a, r1.ID), "the post's author deletes a reply")
	rs := w.replies(o, top.ID, 10)
	if len(rs) != 2 || rs[0].ID != r2.ID {
		t.Fatalf("replies after a delete: %v", commentIDs(rs))
	}
	must(t, w.s.AdminDeleteComment(ctx, rs[0].ID), "an admin deletes")
	must(t, w.s.DeleteComment(ctx, o, rs[1].ID), "the last reply")
	if _, err := b.Comments.Comment(ctx, top.ID); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("the placeholder outlived its last reply: %v", err)
	}
	if n := w.getPost(p.ID).Comments; n != 1 {
		t.Fatalf("comments = %d, want 1", n)
	}
	if ids := commentIDs(w.list(o, p.ID, feed.CommentOrderTop, 10)); !slices.Equal(ids, []int64{alone.ID}) {
		t.Fatalf("left: %v", ids)
	}

	// A deleted post's comments go in batches, none while it exists.
	q := w.post(a)
	var ids []int64
	for i := range 25 {
		v := w.comment(u[i%3], q.ID, "c")
		ids = append(ids, v.ID, w.reply(u[(i+1)%3], q.ID, v.ID, "r").ID)
	}
	if n, err := b.Comments.PurgeComments(ctx, q.ID, 10); err != nil || n != 0 {
		t.Fatalf("purge of a live post: %d, %v", n, err)
	}
	must(t, b.Posts.DeletePost(ctx, q.ID, a), "DeletePost")
	b.Jobs()
	_, err = w.s.PostComments(ctx, a, q.ID, "", nil, 10)
	wantCode(t, err, feed.ENOTFOUND, "the comments of a deleted post")
	var batches []int
	for {
		n, err := b.Comments.PurgeComments(ctx, q.ID, 20)
		must(t, err, "PurgeComments")
		batches = append(batches, n)
		if n < 20 {
			break
		}
	}
	if !slices.Equal(batches, []int{20, 20, 10}) {
		t.Fatalf("purge batches %v, want [20 20 10]", batches)
	}
	if left, _ := b.Comments.Comments(ctx, ids); len(left) != 0 {
		t.Fatalf("%d comments of a deleted post left", len(left))
	}
}

func testCommentLikes(t *testing.T, b *Backend) {
	w := newCommentWorld(t, b)
	ctx := t.Context()
	u := w.users(4)
	p := w.post(u[0])
	x, y, z := w.comment(u[1], p.ID, "x"), w.comment(u[2], p.ID, "y"), w.comment(u[3], p.ID, "z")
	for _, l := range u[:3] {
		must(t, w.s.SetCommentLike(ctx, l, x.ID, true), "like")
	}
	must(t, w.s.SetCommentLike(ctx, u[0], x.ID, true), "like again")
	must(t, w.s.SetCommentLike(ctx, u[0], y.ID, true), "like")
	must(t, w.s.SetCommentLike(ctx, u[1], y.ID, true), "like")
	must(t, w.s.SetCommentLike(ctx, u[1], y.ID, false), "unlike")
	must(t, w.s.SetCommentLike(ctx, u[1], y.ID, false), "unlike again")
	if got := w.getComment(x.ID).Liked; got != 3 {
		t.Fatalf("likes of x = %d", got)
	}
	top := w.list(u[0], p.ID, feed.CommentOrderTop, 10)
	if ids := commentIDs(top); !slices.Equal(ids, []int64{x.ID, y.ID, z.ID}) {
		t.Fatalf("top order %v, want %v", ids, []int64{x.ID, y.ID, z.ID})
	}
	if !top[0].IsLike || !top[1].IsLike || top[2].IsLike || top[0].Liked != 3 || top[1].Liked != 1 {
		t.Fatalf("top views %+v %+v %+v", top[0].Comment, top[1].Comment, top[2].Comment)
	}
	wantCode(t, w.s.SetCommentLike(ctx, u[0], 1<<40, true), feed.ENOTFOUND, "liking no comment")
}
