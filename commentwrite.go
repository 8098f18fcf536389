package feed

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Writing comments: adding, deleting, likes, the post author's hiding,
// reports and moderation, and posts' comment policies.

// AddComment adds userID's comment on post postID (a reply when
// in.ReplyTo is set) and returns it as its author sees it. ENOTFOUND for a
// post (or answered comment) the user is not shown; EFORBIDDEN when the
// post's comment policy refuses the user; EINVALID for bad text.
func (s *Service) AddComment(ctx context.Context, userID, postID int64, in CommentInput) (*CommentView, error) {
	if err := validID("id", postID); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	post, err := s.commentPost(ctx, userID, postID)
	if err != nil {
		return nil, err
	}
	if in.ReplyTo != 0 {
		answered, _, err := s.shownComment(ctx, userID, in.ReplyTo)
		if err != nil {
			return nil, err
		}
		if answered.PostID != postID {
			return nil, Errorf(EINVALID, "reply_to must be a comment of this post")
		}
	}
	now := s.now().Truncate(1e6)
	c := &Comment{PostID: postID, UserID: userID, AnswerID: in.ReplyTo, Text: in.Text, CreatedAt: now, UpdatedAt: now}
	if err := s.Comments.CreateComment(ctx, c); err != nil {
		return nil, err
	}
	vs, err := s.commentViews(ctx, userID, post, []*Comment{c}, nil)
	if err != nil {
		return nil, err
	}
	return &vs[0], nil
}

// CommentWithPost returns comment id as viewerID is shown it, with its
// post. ENOTFOUND as shownComment.
func (s *Service) CommentWithPost(ctx context.Context, viewerID, id int64) (*CommentView, *Post, error) {
	c, post, err := s.shownComment(ctx, viewerID, id)
	if err != nil {
		return nil, nil, err
	}
	vs, err := s.commentViews(ctx, viewerID, post, []*Comment{c}, nil)
	if err != nil {
		return nil, nil, err
	}
	return &vs[0], post, nil
}

// DeleteComment deletes comment id for userID: its author, or the author
// of its post. ENOTFOUND for a comment the user is not shown; EFORBIDDEN
// for anyone else's.
func (s *Service) DeleteComment(ctx context.Context, userID, id int64) error {
	if _, _, err := s.shownComment(ctx, userID, id); err != nil {
		return err
	}
	_, err := s.Comments.DeleteComment(ctx, id, userID, false, s.now())
	return err
}

// AdminDeleteComment deletes comment id as an admin (the admin listener).
func (s *Service) AdminDeleteComment(ctx context.Context, id int64) error {
	if err := validID("id", id); err != nil {
		return err
	}
	if s.Comments == nil {
		return Errorf(ENOTFOUND, "comments are not enabled")
	}
	c, err := s.Comments.DeleteComment(ctx, id, 0, true, s.now())
	if err == nil {
		s.log().Info("comment deleted", "comment_id", id, "post_id", c.PostID, "by", "admin")
	}
	return err
}

// SetCommentLike makes userID like (or stop liking) comment id.
// Idempotent. ENOTFOUND for a comment the user is not shown, or a deleted
// placeholder.
func (s *Service) SetCommentLike(ctx context.Context, userID, id int64, like bool) error {
	c, _, err := s.shownComment(ctx, userID, id)
	if err != nil {
		return err
	}
	if c.Deleted {
		return ErrNotFound("comment")
	}
	return s.Comments.SetCommentLike(ctx, id, userID, like, s.now())
}

// HideComment hides (or shows again) comment id on the post of userID,
// who must be the post's author: it is then left out for everyone but its
// own author, and shown to the post's author marked hidden. Idempotent.
func (s *Service) HideComment(ctx context.Context, userID, id int64, hide bool) error {
	if _, _, err := s.shownComment(ctx, userID, id); err != nil {
		return err
	}
	return s.Comments.SetCommentAuthorHidden(ctx, id, userID, hide, s.now())
}

// ReportComment records userID's report of comment id under the rule of
// post reports (Report): ReportThreshold counted reports hide it from
// everyone but its author until an admin restores it. ENOTFOUND for a
// comment the user is not shown; EINVALID for one's own comment or a bad
// reason; ETOOMANY over ReportLimit (shared with reports of posts).
func (s *Service) ReportComment(ctx context.Context, userID, id int64, reason string) error {
	reason, err := validReason(reason)
	if err != nil {
		return err
	}
	c, _, err := s.shownComment(ctx, userID, id)
	if err != nil {
		return err
	}
	if c.Deleted {
		return ErrNotFound("comment")
	}
	if c.UserID == userID {
		return Errorf(EINVALID, "you cannot report your own comment")
	}
	if err := s.hit(ctx, "report:user:"+strconv.FormatInt(userID, 10), s.ReportLimit, 1, "reports"); err != nil {
		return err
	}
	hidden, err := s.Comments.ReportComment(ctx, id, userID, reason, s.now(), ReportRule{Threshold: s.reportThreshold(), MinAge: s.ReportMinAge})
	if err == nil && hidden {
		s.log().Info("comment hidden", "comment_id", id, "by", "reports")
	}
	return err
}

// validReason trims a report's reason and checks it.
func validReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", Errorf(EINVALID, "reason must not be empty")
	case !utf8.ValidString(reason):
		return "", Errorf(EINVALID, "reason must be valid UTF-8")
	case utf8.RuneCountInString(reason) > MaxReportReason:
		return "", Errorf(EINVALID, "reason must be at most %d characters", MaxReportReason)
	}
	return reason, nil
}

// ModerateComment hides (hide) or restores comment id: an admin's action
// (the admin listener).
func (s *Service) ModerateComment(ctx context.Context, id int64, hide bool) error {
	if err := validID("id", id); err != nil {
		return err
	}
	if s.Comments == nil {
		return Errorf(ENOTFOUND, "comments are not enabled")
	}
	if err := s.Comments.SetCommentModerated(ctx, id, hide, s.now()); err != nil {
		return err
	}
	s.log().Info("comment moderated", "comment_id", id, "hidden", hide, "by", "admin")
	return nil
}

// ReportedComments returns a page of the comments reported or hidden,
// newest first, below comment id before (0: from the newest), and the
// cursor of the next page (0 at the end).
func (s *Service) ReportedComments(ctx context.Context, before int64, limit int) ([]ReportedComment, int64, error) {
	if s.Comments == nil {
		return nil, 0, Errorf(ENOTFOUND, "comments are not enabled")
	}
	if before < 0 {
		return nil, 0, Errorf(EINVALID, "cursor is not one this server returned")
	}
	if limit == 0 {
		limit = DefaultTimelineLimit
	}
	if limit < 1 || limit > MaxReportedCommentsLimit {
		return nil, 0, Errorf(EINVALID, "limit must be an integer from 1 to %d", MaxReportedCommentsLimit)
	}
	cs, err := s.Comments.ReportedComments(ctx, before, limit+1)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(cs) > limit {
		cs = cs[:limit]
		next = cs[limit-1].CommentID
	}
	return cs, next, nil
}

// SetCommentPolicy sets who may comment on post id of userID and returns
// the post as its author sees it. ENOTFOUND, EFORBIDDEN (another's post).
func (s *Service) SetCommentPolicy(ctx context.Context, userID, id int64, p CommentPolicy) (*PostView, error) {
	if _, err := s.commentPost(ctx, userID, id); err != nil {
		return nil, err
	}
	if err := s.Comments.SetCommentPolicy(ctx, id, userID, p, s.now()); err != nil {
		return nil, err
	}
	return s.Post(ctx, userID, id)
}
