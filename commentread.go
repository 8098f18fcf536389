package feed

import (
	"context"
	"maps"
	"slices"
)

// Reading comments: the pages of a post's top-level comments (top and new
// orders), a thread's replies, and the views a viewer is shown.

// CommentView is a comment as one viewer is shown it.
type CommentView struct {
	*Comment
	Author *User // nil for a deleted placeholder, or an author gone
	// ReplyTo is a reply's answered comment's author, as See shows it to
	// the viewer: nil when that comment is gone, a placeholder, or Unseen
	// (a block, moderation, the post author's hiding).
	ReplyTo *User
	// ReplyToCollapsed is why ReplyTo is folded (its author is muted, or
	// in a block with the post's author viewing), or "".
	ReplyToCollapsed string
	IsLike           bool
	// Hidden: the post's author hid it, and the viewer is the post's author
	// (to everyone else but its own author it is not shown).
	Hidden bool
	// Collapsed is why the comment is collapsed for the viewer (a
	// Collapsed... constant), or "".
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

// commentPost returns post postID and what See needs of it for viewerID
// (postScene: ENOTFOUND when the viewer is not shown it), and requires
// comments to be enabled.
func (s *Service) commentPost(ctx context.Context, viewerID, postID int64) (Scene, error) {
	if s.Comments == nil {
		return Scene{}, Errorf(ENOTFOUND, "comments are not enabled")
	}
	return s.postScene(ctx, viewerID, postID)
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
func (s *Service) topComments(ctx context.Context, viewerID int64, post Scene, after *CommentCursor, limit int) (*CommentPage, error) {
	var c CommentCursor
	if after != nil {
		c = *after
	} else {
		ids, err := s.Comments.TopComments(ctx, post.Post.ID, TopCommentsKept+1)
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
				if x := byID[id]; x != nil && x.PostID == post.Post.ID && x.ParentID == 0 {
					cs = append(cs, x)
				}
			}
			c.Pos, more = end, end < len(c.Top)
			if !more && c.Tail {
				c.InTail, more = true, true
			}
		} else {
			var err error
			if cs, more, err = s.topTail(ctx, post.Post.ID, &c, want); err != nil {
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
	sc, err := s.shownComment(ctx, viewerID, id)
	if err != nil {
		return nil, err
	}
	top := sc.Comment
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
	page.List, err = s.commentViews(ctx, viewerID, sc, cs, nil, top)
	return page, err
}

// commentScene reads comment id, its post and its thread's top-level
// comment, and what See needs of them for v, and asks See. ENOTFOUND when
// the comment or its post does not exist.
func (s *Service) commentScene(ctx context.Context, v Viewer, id int64) (Scene, Verdict, error) {
	if s.Comments == nil {
		return Scene{}, Verdict{}, Errorf(ENOTFOUND, "comments are not enabled")
	}
	if err := validID("id", id); err != nil {
		return Scene{}, Verdict{}, err
	}
	c, err := s.Comments.Comment(ctx, id)
	if err != nil {
		return Scene{}, Verdict{}, err
	}
	p, err := s.Posts.Post(ctx, c.PostID)
	if ErrorCode(err) == ENOTFOUND {
		return Scene{}, Verdict{}, ErrNotFound("comment")
	} else if err != nil {
		return Scene{}, Verdict{}, err
	}
	users := []int64{p.UserID, c.UserID}
	var thread *Comment
	if c.ParentID != 0 {
		if thread, err = s.Comments.Comment(ctx, c.ParentID); ErrorCode(err) == ENOTFOUND {
			return Scene{}, Verdict{}, ErrNotFound("comment")
		} else if err != nil {
			return Scene{}, Verdict{}, err
		}
		users = append(users, thread.UserID)
	}
	scenes, err := s.postScenes(ctx, v.ID, []*Post{p})
	if err != nil {
		return Scene{}, Verdict{}, err
	}
	sc := scenes[0]
	if sc.Rel, err = s.relations(ctx, v.ID, users); err != nil {
		return Scene{}, Verdict{}, err
	}
	sc.Comment, sc.Thread = c, thread
	return sc, See(v, sc), nil
}

// shownComment is commentScene for viewerID, ENOTFOUND when See leaves the
// comment Unseen.
func (s *Service) shownComment(ctx context.Context, viewerID, id int64) (Scene, error) {
	sc, vd, err := s.commentScene(ctx, Viewer{ID: viewerID}, id)
	if err == nil && vd.Sight == Unseen {
		err = ErrNotFound("comment")
	}
	return sc, err
}

// topLevelViews is commentViews of top-level comments with their threads'
// first replies.
func (s *Service) topLevelViews(ctx context.Context, viewerID int64, post Scene, cs []*Comment) ([]CommentView, error) {
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

// commentViews turns comments of a post (post: its scene, postScene's)
// into the views viewerID is shown, in order, with the first replies of
// each thread in replies, as See decides: a comment See leaves Unseen is
// left out (with its replies: they go with their thread), a Folded one is
// collapsed, a placeholder has no author and no text. known are comments
// already read that they may name (a thread, an answered comment). A
// constant number of store calls: the threads and answered comments
// missing, the users, the viewer's relations to them, likes and muted
// words.
func (s *Service) commentViews(ctx context.Context, viewerID int64, post Scene, cs []*Comment, replies map[int64][]*Comment, known ...*Comment) ([]CommentView, error) {
	if len(cs) == 0 {
		return []CommentView{}, nil
	}
	all := slices.Clone(cs)
	for _, c := range cs {
		all = append(all, replies[c.ID]...)
	}
	have := make(map[int64]*Comment, len(all)+len(known))
	for _, c := range slices.Concat(known, all) {
		have[c.ID] = c
	}
	var missing []int64
	for _, c := range all {
		for _, id := range []int64{c.AnswerID, c.ParentID} {
			if id != 0 && have[id] == nil && !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) > 0 {
		got, err := s.Comments.Comments(ctx, missing)
		if err != nil {
			return nil, err
		}
		maps.Copy(have, got)
	}
	userIDs := []int64{post.Post.UserID}
	ids := make([]int64, 0, len(all))
	for _, c := range all {
		ids = append(ids, c.ID)
		userIDs = append(userIDs, c.UserID)
		for _, id := range []int64{c.AnswerID, c.ParentID} {
			if x := have[id]; x != nil {
				userIDs = append(userIDs, x.UserID)
			}
		}
	}
	slices.Sort(userIDs)
	userIDs = slices.Compact(userIDs)
	users, err := s.Users.Users(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	rel, err := s.relations(ctx, viewerID, userIDs)
	if err != nil {
		return nil, err
	}
	liked := map[int64]bool{}
	var words *wordMatcher
	if viewerID > 0 {
		if liked, err = s.Comments.CommentLikedBy(ctx, viewerID, ids); err != nil {
			return nil, err
		}
		ws, err := s.Filters.MutedWords(ctx, viewerID)
		if err != nil {
			return nil, err
		}
		words = newWordMatcher(ws)
	}
	viewer := Viewer{ID: viewerID}
	see := func(c *Comment, text bool) Verdict {
		sc := post
		sc.Rel, sc.Comment = rel, c
		if c.ParentID != 0 {
			sc.Thread = have[c.ParentID]
		}
		sc.MutedWord = text && words != nil && words.match(c.Text)
		return See(viewer, sc)
	}
	view := func(c *Comment) (CommentView, bool) {
		vd := see(c, true)
		if vd.Sight == Unseen {
			return CommentView{}, false
		}
		v := CommentView{Comment: c, IsLike: liked[c.ID], Hidden: vd.Marked, Collapsed: vd.Collapsed}
		if vd.Author != Unseen {
			v.Author = users[c.UserID]
		}
		if a := have[c.AnswerID]; a != nil {
			if av := see(a, false); av.Author != Unseen {
				v.ReplyTo = users[a.UserID]
				if av.Author == Folded {
					v.ReplyToCollapsed = av.Collapsed
				}
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
