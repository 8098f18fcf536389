package feedtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// The visibility matrix: for each relation between a viewer V and another
// user X (or a state of X's post or comments), what V gets from each
// family of routes that returns posts, comments, users or notifications,
// as feed.See decides. TestVisibility checks every cell on a backend;
// VisibilityTable renders the matrix for docs/API.md, "Who sees what".

// visColumn is one family of routes, and how V's reading of it is told.
type visColumn struct {
	name   string // in the table
	routes string // the routes, in the table's legend
	probe  func(w *visWorld) string
}

// visRow is one relation, made by set once the world is built, and the
// cell of each column, in order.
type visRow struct {
	name     string
	noFollow bool // V does not follow X (V follows X in every other row)
	set      func(w *visWorld)
	want     []string
}

// visWorld is the scene of one row:
//
//   - X's post P, delivered to V's inbox, and V's comment VC under it,
//     which S answered (V's reply group);
//   - S's post Q, liked by X; X's thread C under it, answered by S (R1);
//     S's thread T under it, where X replied (RX) and S2 answered X (R2);
//   - V's post QV, liked by X (V's like group), and X's comment D under
//     it, answered by S.
type visWorld struct {
	*notifyWorld
	v, x, su, s2          int64
	p, q, qv              int64
	c, r1, thread, rx, r2 int64
	d, vc                 int64
	replyGroup, likeGroup int64
	pEntry                feed.Entry
}

func (w *visWorld) comment(user, post, to int64, text string) int64 {
	w.t.Helper()
	w.tick(time.Millisecond)
	c, err := w.s.AddComment(w.t.Context(), user, post, feed.CommentInput{Text: text, ReplyTo: to})
	must(w.t, err, fmt.Sprintf("AddComment(%d on %d, to %d)", user, post, to))
	return c.ID
}

func (w *visWorld) must(err error, what string) { w.t.Helper(); must(w.t, err, what) }

// groupOf returns V's listed group of kind on post (0: none).
func (w *visWorld) groupOf(kind string, post int64) int64 {
	for _, g := range w.page(w.v) {
		if g.Kind == kind && g.PostID == post {
			return g.ID
		}
	}
	return 0
}

func newVisWorld(t *testing.T, b *NotifyBackend, follow bool) *visWorld {
	ctx := t.Context()
	w := &visWorld{notifyWorld: newNotifyWorld(t, b)}
	w.s.ReportMinAge = 0
	u := w.users(4)
	w.v, w.x, w.su, w.s2 = u[0], u[1], u[2], u[3]
	if follow {
		w.follow(w.v, w.x, true)
	}
	w.p = w.publish(w.x, "X's post")
	post, err := b.Posts.Post(ctx, w.p)
	must(t, err, "Post")
	w.pEntry = post.Entry()
	must(t, b.Inbox.Deliver(ctx, w.pEntry, []int64{w.v}), "Deliver") // as fan-out did
	w.q = w.publish(w.su, "S's post")
	w.like(w.x, w.q, true)
	w.c = w.comment(w.x, w.q, 0, "X's thread")
	w.r1 = w.comment(w.su, w.q, w.c, "S answers X")
	w.thread = w.comment(w.su, w.q, 0, "S's thread")
	w.rx = w.comment(w.x, w.q, w.thread, "X in S's thread")
	w.r2 = w.comment(w.s2, w.q, w.rx, "S2 answers X")
	w.qv = w.publish(w.v, "V's post")
	w.like(w.x, w.qv, true)
	w.d = w.comment(w.x, w.qv, 0, "X on V's post")
	w.comment(w.su, w.qv, w.d, "S answers X on V's post")
	w.vc = w.comment(w.v, w.p, 0, "V on X's post")
	w.comment(w.su, w.p, w.vc, "S answers V")
	w.replyGroup, w.likeGroup = w.groupOf(feed.NotifyReply, w.p), w.groupOf(feed.NotifyLike, w.qv)
	if w.replyGroup == 0 || w.likeGroup == 0 {
		t.Fatalf("V's groups %q lack the reply under X's post or X's like", describe(w.page(w.v)))
	}
	b.Notices()
	return w
}

// agree is the one answer of several reads that must give the same, or a
// description of their disagreement.
func agree(what []string, got ...string) string {
	for _, g := range got[1:] {
		if g != got[0] {
			parts := make([]string, len(got))
			for i := range got {
				parts[i] = what[i] + ": " + got[i]
			}
			return "disagree (" + strings.Join(parts, "; ") + ")"
		}
	}
	return got[0]
}

func listed(ok bool) string {
	if ok {
		return "listed"
	}
	return "left out"
}

// found is "404" for ENOTFOUND, the error for another, or ok's answer.
func found(err error, ok string) string {
	switch feed.ErrorCode(err) {
	case "":
		return ok
	case feed.ENOTFOUND:
		return "404"
	}
	return "error: " + err.Error()
}

// describeComment is how V gets comment view v (nil: left out).
func describeComment(v *feed.CommentView) string {
	var parts []string
	switch {
	case v == nil:
		return "left out"
	case v.Deleted:
		parts = append(parts, "placeholder")
	case v.Collapsed != "":
		parts = append(parts, "collapsed ("+v.Collapsed+")")
	default:
		parts = append(parts, "shown")
	}
	if v.Hidden {
		parts = append(parts, "marked hidden")
	}
	return strings.Join(parts, ", ")
}

// inList finds comment id among vs and their first replies.
func inList(vs []feed.CommentView, id int64) *feed.CommentView {
	for i := range vs {
		if vs[i].ID == id {
			return &vs[i]
		}
		if r := inList(vs[i].FirstReplies, id); r != nil {
			return r
		}
	}
	return nil
}

// replyTo is how V gets the author of the comment reply v answers.
func (w *visWorld) replyTo(v *feed.CommentView) string {
	switch {
	case v == nil:
		return "(reply left out)"
	case v.ReplyTo == nil:
		return "null"
	case v.ReplyTo.ID != w.x:
		return fmt.Sprintf("user %d", v.ReplyTo.ID)
	case v.ReplyToCollapsed != "":
		return "X, collapsed (" + v.ReplyToCollapsed + ")"
	}
	return "X"
}

func (w *visWorld) list(post int64) []feed.CommentView {
	w.t.Helper()
	p, err := w.s.PostComments(w.t.Context(), w.v, post, feed.CommentOrderNew, nil, 50)
	must(w.t, err, "PostComments")
	return p.List
}

func (w *visWorld) byID(id int64) (*feed.CommentView, error) {
	v, _, err := w.s.CommentWithPost(w.t.Context(), w.v, id)
	return v, err
}

var visColumns = []visColumn{
	{"post", "`GET /v1/posts/{id}`, `GET /blog/{id}`", func(w *visWorld) string {
		_, err := w.s.Post(w.t.Context(), w.v, w.p)
		return found(err, "shown")
	}},
	{"author's posts, hot", "`GET /v1/users/{id}/posts`, `GET /blog/of/user`, `GET /blog/hot`", func(w *visWorld) string {
		ctx := w.t.Context()
		page, err := w.s.UserPosts(ctx, w.v, w.x, nil, 50)
		w.must(err, "UserPosts")
		compat, err := w.s.PostsOfUser(ctx, w.v, w.x, 1)
		w.must(err, "PostsOfUser")
		hot, err := w.s.HotPosts(ctx, w.v, 1)
		w.must(err, "HotPosts")
		has := func(vs []feed.PostView) string {
			return listed(slices.ContainsFunc(vs, func(v feed.PostView) bool { return v.ID == w.p }))
		}
		return agree([]string{"/v1", "compatible", "hot"}, has(page.List), has(compat), has(hot))
	}},
	{"timeline, stream", "`GET /v1/timeline` (both orders), `GET /blog/of/follow`, `GET /v1/timeline/stream`", func(w *visWorld) string {
		ctx := w.t.Context()
		page, err := w.s.Timeline(ctx, w.v, nil, 50)
		w.must(err, "Timeline")
		sent, err := w.s.StreamViews(ctx, w.v, []feed.Entry{w.pEntry})
		w.must(err, "StreamViews")
		has := func(vs []feed.PostView) string {
			return listed(slices.ContainsFunc(vs, func(v feed.PostView) bool { return v.ID == w.p }))
		}
		return agree([]string{"timeline", "stream"}, has(page.List), has(sent))
	}},
	{"likers", "`GET /v1/posts/{id}/likes`, `GET /blog/likes/{id}` (X liked a post of S)", func(w *visWorld) string {
		us, err := w.s.Likers(w.t.Context(), w.v, w.q)
		w.must(err, "Likers")
		return listed(slices.ContainsFunc(us, func(u *feed.User) bool { return u.ID == w.x }))
	}},
	{"X's comment", "`GET /v1/posts/{id}/comments` (X's top-level comment under S's post, with its replies)", func(w *visWorld) string {
		v := inList(w.list(w.q), w.c)
		out := describeComment(v)
		if v != nil && !slices.ContainsFunc(v.FirstReplies, func(r feed.CommentView) bool { return r.ID == w.r1 }) {
			out += ", without its replies"
		}
		return out
	}},
	{"by id", "`GET /v1/comments/{id}` (the same comment)", func(w *visWorld) string {
		v, err := w.byID(w.c)
		return found(err, describeComment(v))
	}},
	{"its thread", "`GET /v1/comments/{id}/replies` of it, and S's reply to it by id", func(w *visWorld) string {
		p, err := w.s.CommentReplies(w.t.Context(), w.v, w.c, nil, 50)
		replies := found(err, "shown")
		if err == nil && !slices.ContainsFunc(p.List, func(r feed.CommentView) bool { return r.ID == w.r1 }) {
			replies = "left out"
		}
		_, err = w.byID(w.r1)
		return agree([]string{"replies", "reply by id"}, replies, found(err, "shown"))
	}},
	{"reply_to", "`reply_to` of S2's reply to X's reply in S's thread, listed and by id", func(w *visWorld) string {
		v, err := w.byID(w.r2)
		w.must(err, "S2's reply by id")
		return agree([]string{"list", "by id"}, w.replyTo(inList(w.list(w.q), w.r2)), w.replyTo(v))
	}},
	{"X's comment on V's post", "`GET /v1/posts/{id}/comments` of V's own post", func(w *visWorld) string {
		return describeComment(inList(w.list(w.qv), w.d))
	}},
	{"V may", "`DELETE /v1/comments/{id}`, `PUT /v1/comments/{id}/hidden`, `POST /v1/comments/{id}/report` of it, by V", func(w *visWorld) string {
		ctx := w.t.Context()
		c, err := w.b.Comments.Comment(ctx, w.d)
		w.must(err, "Comment")
		var may []string
		if w.s.HideComment(ctx, w.v, w.d, c.AuthorHidden) == nil { // idempotent: as it is
			may = append(may, "hide")
		}
		if w.s.ReportComment(ctx, w.v, w.d, "probe") == nil {
			may = append(may, "report")
		}
		if w.s.DeleteComment(ctx, w.v, w.d) == nil {
			may = append([]string{"delete"}, may...)
		}
		if len(may) == 0 {
			return "none"
		}
		return strings.Join(may, ", ")
	}},
	{"X's like", "`GET /v1/notifications`, its unread count and stream: X's like of V's post", func(w *visWorld) string {
		return w.group(w.likeGroup, "")
	}},
	{"a reply under X's post", "the same: S's reply to V's comment under X's post; and whether a new reply is told", func(w *visWorld) string {
		// A new reply, by S2 or, when S2 is not shown the post, by X.
		w.b.Notices()
		w.tick(time.Millisecond)
		_, err := w.s.AddComment(w.t.Context(), w.s2, w.p, feed.CommentInput{Text: "S2 answers V", ReplyTo: w.vc})
		if feed.ErrorCode(err) == feed.ENOTFOUND {
			_, err = w.s.AddComment(w.t.Context(), w.x, w.p, feed.CommentInput{Text: "X answers V", ReplyTo: w.vc})
		}
		w.must(err, "a new reply to V")
		told := "not told"
		for _, n := range w.b.Notices() {
			if n.UserID == w.v {
				told = "told"
			}
		}
		return w.group(w.replyGroup, told)
	}},
}

// group is how V gets group id: listed (in the list and the unread count,
// and sent live) or left out of all three, then told.
func (w *visWorld) group(id int64, told string) string {
	ctx := w.t.Context()
	list := listed(slices.ContainsFunc(w.page(w.v), func(g feed.NotifyView) bool { return g.ID == id }))
	_, err := w.s.NotificationGroup(ctx, w.v, id)
	live := found(err, "listed")
	if live == "404" {
		live = "left out"
	}
	out := agree([]string{"list", "live"}, list, live)
	if told != "" {
		out += ", " + told
	}
	return out
}

var visRows = []visRow{
	{name: "none (V does not follow X)", noFollow: true,
		want: []string{"shown", "listed", "left out", "listed", "shown", "shown", "shown", "X", "shown", "delete, hide, report", "listed", "listed, told"}},
	{name: "V follows X",
		want: []string{"shown", "listed", "listed", "listed", "shown", "shown", "shown", "X", "shown", "delete, hide, report", "listed", "listed, told"}},
	{name: "V mutes X", set: func(w *visWorld) { w.must(w.s.Mute(w.t.Context(), w.v, w.x, true), "Mute") },
		want: []string{"shown", "listed", "left out", "listed", "collapsed (muted_user)", "collapsed (muted_user)", "shown", "X, collapsed (muted_user)",
			"collapsed (muted_user)", "delete, hide, report", "left out", "listed, told"}},
	{name: "V blocks X", set: func(w *visWorld) { _, err := w.s.Block(w.t.Context(), w.v, w.x, true); w.must(err, "Block") },
		want: []string{"shown", "listed", "left out", "left out", "left out", "404", "404", "null",
			"collapsed (blocked_user)", "delete, hide, report", "left out", "listed, told"}},
	{name: "X blocks V", set: func(w *visWorld) { _, err := w.s.Block(w.t.Context(), w.x, w.v, true); w.must(err, "Block") },
		want: []string{"404", "left out", "left out", "left out", "left out", "404", "404", "null",
			"collapsed (blocked_user)", "delete, hide, report", "left out", "left out, not told"}},
	{name: "X's post hidden by moderation", set: func(w *visWorld) { w.must(w.s.Moderate(w.t.Context(), w.p, true), "Moderate") },
		want: []string{"404", "left out", "left out", "listed", "shown", "shown", "shown", "X", "shown", "delete, hide, report", "listed", "left out, not told"}},
	{name: "X's comments hidden by moderation", set: func(w *visWorld) {
		w.each(func(id, _ int64) error { return w.s.ModerateComment(w.t.Context(), id, true) })
	},
		want: []string{"shown", "listed", "listed", "listed", "left out", "404", "404", "null", "left out", "delete, hide, report", "listed", "listed, told"}},
	{name: "X's comments hidden by the post's author", set: func(w *visWorld) {
		w.each(func(id, author int64) error { return w.s.HideComment(w.t.Context(), author, id, true) })
	}, want: []string{"shown", "listed", "listed", "listed", "left out", "404", "404", "null", "shown, marked hidden", "delete, hide, report", "listed", "listed, told"}},
	{name: "X's comments deleted (a thread's stays as a placeholder)", set: func(w *visWorld) { w.deleteX() },
		want: []string{"shown", "listed", "listed", "listed", "placeholder", "placeholder", "shown", "null", "placeholder", "none", "listed", "listed, told"}},
	{name: "hidden by the post's author, then deleted", set: func(w *visWorld) {
		w.each(func(id, author int64) error { return w.s.HideComment(w.t.Context(), author, id, true) })
		w.deleteX()
	}, want: []string{"shown", "listed", "listed", "listed", "left out", "404", "404", "null", "placeholder, marked hidden", "none", "listed", "listed, told"}},
	{name: "hidden by moderation, then deleted", set: func(w *visWorld) {
		w.each(func(id, _ int64) error { return w.s.ModerateComment(w.t.Context(), id, true) })
		w.deleteX()
	}, want: []string{"shown", "listed", "listed", "listed", "left out", "404", "404", "null", "left out", "none", "listed", "listed, told"}},
}

// each does do to X's comments C, RX and D, with their post's author.
func (w *visWorld) each(do func(id, postAuthor int64) error) {
	w.t.Helper()
	for _, c := range [][2]int64{{w.c, w.su}, {w.rx, w.su}, {w.d, w.v}} {
		w.must(do(c[0], c[1]), fmt.Sprintf("comment %d", c[0]))
	}
}

// deleteX has X delete C, RX and D.
func (w *visWorld) deleteX() {
	w.each(func(id, _ int64) error { return w.s.DeleteComment(w.t.Context(), w.x, id) })
}

// TestVisibility runs the visibility matrix (VisibilityTable) on the
// backend: for each relation between a viewer and another user, or state
// of that user's post or comments, what the viewer gets from every family
// of routes that returns posts, comments, users or notifications (the
// Service calls behind them), and that the unread count always counts what
// the list shows. open must return an empty backend recording with s on
// every call.
func TestVisibility(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	for _, row := range visRows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			w := newVisWorld(t, open(t, feed.NotifySettings{}), !row.noFollow)
			if row.set != nil {
				row.set(w)
				w.b.Jobs()
			}
			for i, col := range visColumns {
				if got := col.probe(w); got != row.want[i] {
					t.Errorf("%s, %s: V gets %q, want %q", row.name, col.name, got, row.want[i])
				}
				if n, listed := w.unread(w.v), len(w.page(w.v)); n != listed {
					t.Errorf("%s, after %s: unread count %d, but %d groups listed (all unread)", row.name, col.name, n, listed)
				}
			}
		})
	}
	t.Run("NoCommentOnABlockedAuthorsPost", func(t *testing.T) {
		w := newVisWorld(t, open(t, feed.NotifySettings{}), true)
		_, err := w.s.Block(t.Context(), w.v, w.x, true)
		must(t, err, "Block")
		_, err = w.s.AddComment(t.Context(), w.v, w.p, feed.CommentInput{Text: "to a post whose author I block"})
		if !errors.Is(err, feed.ErrCommentsBlocked) {
			t.Fatalf("a comment on the post of an author the commenter blocks: %v, want %v", err, feed.ErrCommentsBlocked)
		}
	})
}

// VisibilityTable is the matrix TestVisibility checks, as the Markdown
// table of docs/API.md, "Who sees what": a legend of the columns, then a
// row per relation.
func VisibilityTable() string {
	var b strings.Builder
	b.WriteString("| column | what V reads |\n|---|---|\n")
	for _, c := range visColumns {
		fmt.Fprintf(&b, "| %s | %s |\n", c.name, c.routes)
	}
	b.WriteString("\n| V and X |")
	for _, c := range visColumns {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(visColumns)) + "\n")
	for _, r := range visRows {
		b.WriteString("| " + r.name + " |")
		for _, c := range r.want {
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
