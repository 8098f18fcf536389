package http

// The comment routes of the native API (docs/API.md, "Comments"), and the
// comment moderation of the admin listener.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	feed "github.com/feedd/feedd"
)

// V1Comment is a comment as its viewer sees it.
type V1Comment struct {
	ID       int64      `json:"id"`
	PostID   int64      `json:"post_id"`
	ParentID *int64     `json:"parent_id"` // the thread's top-level comment; null for a top-level one
	ReplyTo  *V1ReplyTo `json:"reply_to"`  // a reply: the comment it answers
	Author   *V1User    `json:"author"`    // null for a deleted placeholder
	Text     string     `json:"text"`
	// LikeCount, ReplyCount: the comment's likes and (top-level) its
	// thread's replies.
	LikeCount  int     `json:"like_count"`
	LikedByMe  bool    `json:"liked_by_me"`
	ReplyCount int     `json:"reply_count"`
	Deleted    bool    `json:"deleted"`
	Hidden     bool    `json:"hidden"`
	Collapsed  *string `json:"collapsed"`
	CreatedAt  string  `json:"created_at"`
	// Replies are the thread's first replies, on top-level comments in a
	// page of a post's comments only.
	Replies *[]V1Comment `json:"replies,omitempty"`
}

// V1ReplyTo names the comment a reply answers and its author (null when
// gone or not shown to the caller).
type V1ReplyTo struct {
	CommentID int64   `json:"comment_id"`
	User      *V1User `json:"user"`
	// Collapsed is why a client should fold User: muted_user, blocked_user.
	Collapsed string `json:"collapsed,omitempty"`
}

// NewV1Comment renders a comment view; withReplies adds its first replies.
func NewV1Comment(v feed.CommentView, withReplies bool) V1Comment {
	c := V1Comment{
		ID: v.ID, PostID: v.PostID, Text: v.Text, LikeCount: v.Liked, LikedByMe: v.IsLike, ReplyCount: v.Replies,
		Deleted: v.Deleted, Hidden: v.Hidden, CreatedAt: v.CreatedAt.UTC().Format(timeLayout),
	}
	if v.ParentID != 0 {
		c.ParentID = &v.ParentID
		c.ReplyTo = &V1ReplyTo{CommentID: v.AnswerID, Collapsed: v.ReplyToCollapsed}
		if v.ReplyTo != nil {
			u := v1User(v.ReplyTo)
			c.ReplyTo.User = &u
		}
	}
	if v.Author != nil {
		u := v1User(v.Author)
		c.Author = &u
	}
	if v.Collapsed != "" {
		c.Collapsed = &v.Collapsed
	}
	if withReplies {
		rs := make([]V1Comment, len(v.FirstReplies))
		for i, r := range v.FirstReplies {
			rs[i] = NewV1Comment(r, false)
		}
		c.Replies = &rs
	}
	return c
}

func v1CommentPage(p *feed.CommentPage, withReplies bool) V1Page[V1Comment] {
	out := V1Page[V1Comment]{Data: make([]V1Comment, len(p.List))}
	for i, v := range p.List {
		out.Data[i] = NewV1Comment(v, withReplies)
	}
	if p.Next != nil {
		c := feed.EncodeCommentCursor(*p.Next)
		out.NextCursor = &c
	}
	return out
}

// queryCommentCursor parses an optional cursor of a comment list in order.
func queryCommentCursor(r *http.Request, order string) (*feed.CommentCursor, error) {
	v, ok, err := queryOne(r, "cursor")
	if err != nil || !ok {
		return nil, err
	}
	c, err := feed.DecodeCommentCursor(v, order)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func (s *Server) v1AddComment() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var in struct {
			Text    string `json:"text"`
			ReplyTo *int64 `json:"reply_to"`
		}
		if err == nil {
			err = v1Decode(r, &in)
		}
		input := feed.CommentInput{Text: in.Text}
		if err == nil && in.ReplyTo != nil {
			if *in.ReplyTo <= 0 {
				err = feed.Errorf(feed.EINVALID, "reply_to must be a positive integer or null")
			}
			input.ReplyTo = *in.ReplyTo
		}
		var v *feed.CommentView
		if err == nil {
			v, err = s.Service.AddComment(r.Context(), userID(r), id, input)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.Header().Set("Location", fmt.Sprintf("/v1/comments/%d", v.ID))
		s.v1JSON(w, http.StatusCreated, NewV1Comment(*v, false))
	})
}

func (s *Server) v1PostComments() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var limit int
		var order string
		var after *feed.CommentCursor
		if err == nil {
			limit, err = queryLimit(r, feed.MaxTimelineLimit)
		}
		if err == nil {
			order, _, err = queryOne(r, "order")
		}
		if err == nil && order == "" {
			order = feed.CommentOrderTop
		}
		if err == nil && order != feed.CommentOrderTop && order != feed.CommentOrderNew {
			err = feed.Errorf(feed.EINVALID, "order must be top or new")
		}
		if err == nil {
			after, err = queryCommentCursor(r, order)
		}
		var page *feed.CommentPage
		if err == nil {
			page, err = s.Service.PostComments(r.Context(), userID(r), id, order, after, limit)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, v1CommentPage(page, true))
	})
}

func (s *Server) v1Comment() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var v *feed.CommentView
		if err == nil {
			v, _, err = s.Service.CommentWithPost(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, NewV1Comment(*v, false))
	})
}

func (s *Server) v1CommentReplies() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var limit int
		var after *feed.CommentCursor
		if err == nil {
			limit, err = queryLimit(r, feed.MaxTimelineLimit)
		}
		if err == nil {
			after, err = queryCommentCursor(r, "replies")
		}
		var page *feed.CommentPage
		if err == nil {
			page, err = s.Service.CommentReplies(r.Context(), userID(r), id, after, limit)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, v1CommentPage(page, false))
	})
}

func (s *Server) v1DeleteComment() http.Handler { return s.v1Action(s.Service.DeleteComment) }

func (s *Server) v1SetCommentLike(like bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		return s.Service.SetCommentLike(ctx, userID, id, like)
	})
}

func (s *Server) v1HideComment(hide bool) http.Handler {
	return s.v1Action(func(ctx context.Context, userID, id int64) error {
		return s.Service.HideComment(ctx, userID, id, hide)
	})
}

func (s *Server) v1ReportComment() http.Handler { return s.v1ReportOf(s.Service.ReportComment) }

// v1PatchPost changes what the author may change of a post: who may
// comment.
func (s *Server) v1PatchPost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var in struct {
			CommentPolicy *string `json:"comment_policy"`
			QuotePolicy   *string `json:"quote_policy"`
		}
		if err == nil {
			err = v1Decode(r, &in)
		}
		if err == nil && in.CommentPolicy == nil && in.QuotePolicy == nil {
			err = feed.Errorf(feed.EINVALID, "nothing to change: send comment_policy or quote_policy")
		}
		var p feed.CommentPolicy
		var q feed.QuotePolicy
		if err == nil && in.CommentPolicy != nil {
			p, err = feed.ParseCommentPolicy(*in.CommentPolicy)
		}
		if err == nil && in.QuotePolicy != nil {
			q, err = feed.ParseQuotePolicy(*in.QuotePolicy)
		}
		var v *feed.PostView
		if err == nil && in.CommentPolicy != nil {
			v, err = s.Service.SetCommentPolicy(r.Context(), userID(r), id, p)
		}
		if err == nil && in.QuotePolicy != nil {
			v, err = s.Service.SetQuotePolicy(r.Context(), userID(r), id, q)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, NewV1Post(*v))
	})
}

// ---- the admin listener

// V1ReportedComment is a comment in the moderation list.
type V1ReportedComment struct {
	CommentID  int64  `json:"comment_id"`
	PostID     int64  `json:"post_id"`
	AuthorID   int64  `json:"author_id"`
	Text       string `json:"text"`
	Reports    int    `json:"reports"`
	LastReason string `json:"last_reason"`
	Hidden     bool   `json:"hidden"`
}

func (s *Server) adminReportedComments() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := queryLimit(r, feed.MaxReportedCommentsLimit)
		var before int64
		if err == nil {
			before, err = queryAfter(r)
		}
		var list []feed.ReportedComment
		var next int64
		if err == nil {
			list, next, err = s.Service.ReportedComments(r.Context(), before, limit)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		page := V1Page[V1ReportedComment]{Data: make([]V1ReportedComment, len(list))}
		for i, c := range list {
			page.Data[i] = V1ReportedComment{CommentID: c.CommentID, PostID: c.PostID, AuthorID: c.AuthorID, Text: c.Text,
				Reports: c.Reports, LastReason: c.LastReason, Hidden: c.Status == feed.CommentHidden}
		}
		if next > 0 {
			c := strconv.FormatInt(next, 10)
			page.NextCursor = &c
		}
		s.v1JSON(w, http.StatusOK, page)
	})
}

// adminComment serves an admin's action on the {id} comment, 204 when do
// succeeds.
func (s *Server) adminComment(do func(ctx context.Context, id int64) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = do(r.Context(), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
