package hmdp

import (
	"context"
	"fmt"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// commentRef is what a reply's checks need of a comment imported: its
// post and its thread's top-level comment (0 for a top-level one).
type commentRef struct{ post, parent int64 }

// importComments: tb_blog_comments, with their threads. The tutorial
// keeps two levels, as feedd does: parent_id is the thread's top-level
// comment (0 for one), answer_id the comment answered, itself or another
// reply of the thread. A reply comes over only into a thread imported
// before it (a top-level comment of the same post, of a smaller id: the
// result does not depend on the batches); one whose answer_id is not in
// its thread answers the top-level comment. status 1 (reported) and 2
// (hidden) are feedd's. No notification is made.
func (r *run) importComments(ctx context.Context) error {
	// Ids of the store's own comments that the source has too.
	taken := map[int64]bool{}
	for _, id := range r.cp(PhaseComments).Counts.Taken {
		taken[id] = true
	}
	var known map[int64]commentRef // the comments the batch's rows refer to
	return phaseRows(ctx, r, rows[srcComment, *feed.Comment]{
		phase: PhaseComments, table: "tb_blog_comments", ids: true, batch: min(r.o.Batch, wideBatch), read: r.src.comments,
		key: func(c srcComment) int64 { return c.id },
		prepare: func(ctx context.Context, src []srcComment) (err error) {
			known, err = r.commentRefs(ctx, src, taken)
			return err
		},
		convert: func(b *batch, s srcComment, keep func(*feed.Comment, int64)) {
			switch _, ok := r.posts[s.blog]; {
			case !ok:
				r.skip(b, SkipMissingPost, s.id, fmt.Sprintf("blog_id %d", s.blog))
				return
			case !r.users[s.user]:
				r.skip(b, SkipMissingUser, s.id, fmt.Sprintf("user_id %d", s.user))
				return
			}
			var cl cleaner
			c := &feed.Comment{ID: s.id, PostID: s.blog, UserID: s.user, Liked: max(s.liked, 0),
				CreatedAt: time.UnixMilli(s.created), UpdatedAt: time.UnixMilli(max(s.updated, s.created))}
			if s.parent != 0 {
				if p, ok := known[s.parent]; !ok || p.parent != 0 || p.post != s.blog {
					r.skip(b, SkipMissingThread, s.id, fmt.Sprintf("parent_id %d", s.parent))
					return
				}
				c.ParentID, c.AnswerID = s.parent, s.answer
				if a, ok := known[s.answer]; s.answer != s.parent && (!ok || a.parent != s.parent) {
					c.AnswerID = s.parent
					cl.mark(CleanBadAnswer)
				}
			} else if s.answer != 0 {
				cl.mark(CleanBadAnswer) // a top-level comment answers none
			}
			c.Text = cl.comment(s.content)
			if strings.TrimSpace(c.Text) == "" {
				r.skip(b, SkipEmptyText, s.id, "")
				return
			}
			switch s.status {
			case 0, 1, 2:
				c.Status = feed.CommentStatus(s.status)
			default:
				c.Status = feed.CommentHidden
				cl.mark(CleanBadStatus)
			}
			r.cleaned(b, &cl, s.id)
			keep(c, s.id)
			if _, own := known[s.id]; !own {
				known[s.id] = commentRef{c.PostID, c.ParentID} // a thread for the replies after it
			}
		},
		write: func(ctx context.Context, comments []*feed.Comment, c feed.ImportCommit) error {
			return r.o.Store.ImportComments(ctx, comments, c)
		},
		stored: func(c *feed.Comment, reason string) {
			switch reason {
			case "":
				if r.o.Store == nil {
					r.comments[c.ID] = commentRef{c.PostID, c.ParentID}
				}
			case feed.SkipIDTaken:
				taken[c.ID] = true
			}
		},
	})
}

// commentRefs returns the comments imported before rows among those rows
// refer to (parent_id, answer_id), and rows' own ids that the store holds
// (comments of its own: the store skips those rows, and no reply goes
// into their threads; they map to their own id as a parent, which no
// check accepts).
func (r *run) commentRefs(ctx context.Context, rows []srcComment, taken map[int64]bool) (map[int64]commentRef, error) {
	ids := make([]int64, 0, 3*len(rows))
	for _, s := range rows {
		ids = append(ids, s.id)
		if s.parent != 0 {
			ids = append(ids, s.parent, s.answer)
		}
	}
	out := make(map[int64]commentRef, len(rows))
	if r.o.Store == nil {
		for _, id := range ids {
			if c, ok := r.comments[id]; ok {
				out[id] = c
			}
		}
		return out, nil
	}
	cs, err := r.o.Store.Comments(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the store's comments: %w", err)
	}
	own := make(map[int64]bool, len(rows))
	for _, s := range rows {
		own[s.id] = true
	}
	for id, c := range cs {
		switch {
		case own[id] || taken[id]:
			out[id] = commentRef{post: -1, parent: id} // the store's own
		default:
			out[id] = commentRef{c.PostID, c.ParentID}
		}
	}
	return out, nil
}
