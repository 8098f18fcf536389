package feed

import (
	"context"
	"slices"
)

// Reading comments: the pages of a post's top-level comments (top and new
// orders), a thread's replies, and the views a viewer is shown.

// Why a comment is collapsed for its viewer (CommentView.Collapsed).
const (
	CollapsedMutedUser = "muted_user" // the viewer mutes its author
	CollapsedMutedWord = "muted_word" // it holds one of the viewer's muted words
)

// CommentView is a comment as one viewer is shown it.
type CommentView struct {
	*Comment
	Author  *User // nil for a deleted placeholder, or an author gone
	ReplyTo *User // a reply: the answered comment's author (nil when gone)
	IsLike  bool
	// Hidden: the post's author hid it, and the viewer is the post's author
	// (to everyone else but its own author it is not shown).
	Hidden bool
	// Collapsed is why the comment is collapsed for the viewer, or "".
	Collapsed string
	// FirstReplies are the thread's first replies (a page of top-level
	// comments only), those the viewer is shown.
	FirstReplies []CommentView
}

// CommentPage is a page of comments and the cursor of the next (nil at
// the end).
type CommentPage struct {
	List []CommentView
	Next *CommentCursor
}

// commentPost returns post postID for viewerID (shownPost: ENOTFOUND when
// it does not exist for the viewer) and requires comments to be enabled.
func (s *Service) commentPost(ctx context.Context, viewerID, postID int64) (*Post, error) {
	if s.Comments == nil {
		return nil, Errorf(ENOTFOUND, "comments are not enabled")
	}
	return s.shownPost(ctx, viewerID, postID)
}

// PostComments returns a page of post postID's top-level comments for
// viewerID, each with its thread's first replies, in order (top or new;
// "" is top), after cursor (nil: the first page), at most limit (0:
// DefaultTimelineLimit). ENOTFOUND for a post the viewer is not shown;
// EINVALID for a cursor of another list, or an expired top scroll.
//
// A page reads a constant number of rows whatever the post's size: one
// index range of its comments, one of each thread's first replies, and the
// hydration's lookups.
func (s *Service) PostComments(ctx context.Context, viewerID, postID int64, order string, after *CommentCursor, limit int) (*CommentPage, error) {
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if order == "" {
		order = CommentOrderTop
	}
	if order != CommentOrderTop && order != CommentOrderNew {
		return nil, Errorf(EINVALID, "order must be top or new")
	}
	if after != nil && after.Order != order {
		return nil, Errorf(EINVALID, "cursor is not one this server returned for this list")
	}
	post, err := s.commentPost(ctx, viewerID, postID)
	if err != nil {
		return nil, err
	}
	if order == CommentOrderNew {
		b := Top()
		if after != nil {
			b = After(after.Key)
		}
		cs, err := s.Comments.NewComments(ctx, postID, b, limit+1)
		if err != nil {
			return nil, err
		}
		page := &CommentPage{}
		if len(cs) > limit {
			cs = cs[:limit]
			page.Next = &CommentCursor{Order: CommentOrderNew, Key: cs[limit-1].Key()}
		}
		page.List, err = s.topLevelViews(ctx, viewerID, post, cs)
		return page, err
	}
	return s.topComments(ctx, viewerID, post, after, limit)
}

// topComments is PostComments in the top order (see CommentCursor).
func (s *Service) topComments(ctx context.Context, viewerID int64, post *Post, after *CommentCursor, limit int) (*CommentPage, error) {
	var c CommentCursor
	if after != nil {
		c = *after
	} else {
		ids, err := s.Comments.TopComments(ctx, post.ID, TopCommentsKept+1)
		if err != nil {
			return nil, err
		}
		c = CommentCursor{Order: CommentOrderTop, Top: ids, Since: s.now().UnixMilli()}
		if len(ids) > TopCommentsKept {
			c.Top, c.Tail = ids[:TopCommentsKept], true
		}
	}
	page := &CommentPage{List: []CommentView{}}
	for range maxEmptyPages {
		want := limit - len(page.List)
		var cs []*Comment
		more := true
		if !c.InTail {
			end := min(c.Pos+want, len(c.Top))
			ids := c.Top[c.Pos:end]
			byID, err := s.Comments.Comments(ctx, ids)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				if x := byID[id]; x != nil && x.PostID == post.ID && x.ParentID == 0 {
					cs = append(cs, x)
				}
			}
			c.Pos, more = end, end < len(c.Top)
			if !more && c.Tail {
				c.InTail, more = true, true
			}
		} else {
			var err error
			if cs, more, err = s.topTail(ctx, post.ID, &c, want); err != nil {
				return nil, err
			}
		}
		views, err := s.topLevelViews(ctx, viewerID, post, cs)
		if err != nil {
			return nil, err
		}
		page.List = append(page.List, views...)
		if !more {
			return page, nil
		}
		if len(page.List) >= limit {
			break
		}
	}
	page.Next = &c
	return page, nil
}

// topTail reads at most n comments of the top order's rest after c.Key:
// the top-level comments created at or before c.Since, newest first, less
// those of c.Top. It moves c.Key and reports whether more follow.
func (s *Service) topTail(ctx context.Context, postID int64, c *CommentCursor, n int) ([]*Comment, bool, error) {
	b := AtMost(c.Since)
	if c.Key.PostID != 0 {
		b = After(c.Key)
	}
	cs, err := s.Comments.NewComments(ctx, postID, b, n)
	if err != nil || len(cs) == 0 {
		return nil, false, err
	}
	c.Key = cs[len(cs)-1].Key()
	return slices.DeleteFunc(cs, func(x *Comment) bool { return slices.Contains(c.Top, x.ID) }), len(cs) == n, nil
}

// CommentReplies returns a page of the replies of thread (the top-level
// comment) id for viewerID, oldest first, after cursor (nil: the first),
// at most limit (0: DefaultTimelineLimit). ENOTFOUND when the thread or
// its post is not shown to the viewer.
func (s *Service) CommentReplies(ctx context.Context, viewerID, id int64, after *CommentCursor, limit int) (*CommentPage, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	limit, err := TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	if after != nil && (after.Order != orderReplies || after.Thread != id) {
		return nil, Errorf(EINVALID, "cursor is not one this server returned for this list")
	}
	top, post, err := s.shownComment(ctx, viewerID, id)
	if err != nil {
		return nil, err
	}
	if top.ParentID != 0 {
		return nil, Errorf(EINVALID, "comment %d is a reply: its thread is comment %d", id, top.ParentID)
	}
	var key Entry
	if after != nil {
		key = after.Key
	}
	cs, err := s.Comments.Replies(ctx, id, key, limit+1)
	if err != nil {
		return nil, err
	}
	page := &CommentPage{}
	if len(cs) > limit {
		cs = cs[:limit]
		page.Next = &CommentCursor{Order: orderReplies, Thread: id, Key: cs[limit-1].Key()}
	}
	page.List, err = s.commentViews(ctx, viewerID, post, cs, nil)
	return page, err
}

// shownComment returns comment id and its post as viewerID may see them:
// ENOTFOUND when either does not exist for the viewer (the post as
// shownPost decides, the comment as commentViews does; a reply also needs
// its thread's top-level comment shown).
func (s *Service) shownComment(ctx context.Context, viewerID, id int64) (*Comment, *Post, error) {
	if s.Comments == nil {
		return nil, nil, Errorf(ENOTFOUND, "comments are not enabled")
	}
	if err := validID("id", id); err != nil {
		return nil, nil, err
	}
	c, err := s.Comments.Comment(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	post, err := s.shownPost(ctx, viewerID, c.PostID)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil, ErrNotFound("comment")
	} else if err != nil {
		return nil, nil, err
	}
	check := []*Comment{c}
	if c.ParentID != 0 {
		top, err := s.Comments.Comment(ctx, c.ParentID)
		if ErrorCode(err) == ENOTFOUND {
			return nil, nil, ErrNotFound("comment")
		} else if err != nil {
			return nil, nil, err
		}
		check = append(check, top)
	}
	vs, err := s.commentViews(ctx, viewerID, post, check, nil)
	if err != nil {
		return nil, nil, err
	} else if len(vs) != len(check) {
		return nil, nil, ErrNotFound("comment")
	}
	return c, post, nil
}

// topLevelViews is commentViews of top-level comments with their threads'
// first replies.
func (s *Service) topLevelViews(ctx context.Context, viewerID int64, post *Post, cs []*Comment) ([]CommentView, error) {
	if len(cs) == 0 {
		return []CommentView{}, nil
	}
	var threads []int64
	for _, c := range cs {
		if c.Replies > 0 {
			threads = append(threads, c.ID)
		}
	}
	replies := map[int64][]*Comment{}
	if len(threads) > 0 {
		var err error
		if replies, err = s.Comments.FirstReplies(ctx, threads, RepliesShown); err != nil {
			return nil, err
		}
	}
	return s.commentViews(ctx, viewerID, post, cs, replies)
}

// commentViews turns comments of post into the views viewerID is shown,
// in order, with the first replies of each thread in replies: a constant
// number of store calls (the answered comments missing, the viewer's
// relations to the authors, the authors, the viewer's likes and muted
// words). A comment is left out (with its replies) when:
//
//   - its author blocks the viewer, or the viewer blocks its author;
//   - it is hidden by moderation (shown to its author only);
//   - the post's author hid it (shown to its author, and to the post's
//     author marked Hidden).
//
// A deleted placeholder is shown without author or text. A comment of a
// user the viewer mutes, or holding one of the viewer's muted words, is
// collapsed (Collapsed), never one of the viewer's own.
func (s *Service) commentViews(ctx context.Context, viewerID int64, post *Post, cs []*Comment, replies map[int64][]*Comment) ([]CommentView, error) {
	if len(cs) == 0 {
		return []CommentView{}, nil
	}
	all := slices.Clone(cs)
	for _, c := range cs {
		all = append(all, replies[c.ID]...)
	}
	have := make(map[int64]*Comment, len(all))
	for _, c := range all {
		have[c.ID] = c
	}
	var missing []int64
	for _, c := range all {
		if c.AnswerID != 0 && have[c.AnswerID] == nil && !slices.Contains(missing, c.AnswerID) {
			missing = append(missing, c.AnswerID)
		}
	}
	answered := map[int64]*Comment{}
	if len(missing) > 0 {
		var err error
		if answered, err = s.Comments.Comments(ctx, missing); err != nil {
			return nil, err
		}
	}
	for id, c := range have {
		answered[id] = c
	}
	var userIDs, ids []int64
	for _, c := range all {
		ids = append(ids, c.ID)
		userIDs = append(userIDs, c.UserID)
		if a := answered[c.AnswerID]; a != nil {
			userIDs = append(userIDs, a.UserID)
		}
	}
	slices.Sort(userIDs)
	userIDs = slices.Compact(userIDs)
	users, err := s.Users.Users(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	rel := map[int64]Relation{}
	liked := map[int64]bool{}
	var words *wordMatcher
	if viewerID > 0 {
		if rel, err = s.Social.Relations(ctx, viewerID, userIDs); err != nil {
			return nil, err
		}
		if liked, err = s.Comments.CommentLikedBy(ctx, viewerID, ids); err != nil {
			return nil, err
		}
		ws, err := s.Filters.MutedWords(ctx, viewerID)
		if err != nil {
			return nil, err
		}
		words = newWordMatcher(ws)
	}
	view := func(c *Comment) (CommentView, bool) {
		v := CommentView{Comment: c, IsLike: liked[c.ID]}
		own := c.UserID == viewerID && viewerID > 0
		if c.Deleted {
			return v, true
		}
		r := rel[c.UserID]
		switch {
		case !own && (r.BlocksViewer || r.Blocked):
			return v, false
		case c.Status == CommentHidden && !own:
			return v, false
		case c.AuthorHidden && !own:
			if viewerID != post.UserID {
				return v, false
			}
			v.Hidden = true
		}
		v.Author = users[c.UserID]
		if a := answered[c.AnswerID]; a != nil && !a.Deleted {
			v.ReplyTo = users[a.UserID]
		}
		if !own {
			switch {
			case r.Muted:
				v.Collapsed = CollapsedMutedUser
			case words != nil && words.match(c.Text):
				v.Collapsed = CollapsedMutedWord
			}
		}
		return v, true
	}
	out := make([]CommentView, 0, len(cs))
	for _, c := range cs {
		v, ok := view(c)
		if !ok {
			continue
		}
		for _, r := range replies[c.ID] {
			if rv, ok := view(r); ok {
				v.FirstReplies = append(v.FirstReplies, rv)
			}
		}
		out = append(out, v)
	}
	return out, nil
}
