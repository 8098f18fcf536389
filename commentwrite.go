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
// in.ReplyTo is set) and returns it as its author sees it, as See decides
// (here, and on the facts of the store's transaction: CommentFacts):
// ENOTFOUND for a post (or answered comment) the user is not shown;
// EFORBIDDEN when the post's comment policy refuses the user, or the user
// blocks the post's author (or is in a block with the answered comment's);
// EINVALID for bad text.
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
	var known []*Comment
	if in.ReplyTo != 0 {
		sc, vd, err := s.commentScene(ctx, Viewer{ID: userID}, in.ReplyTo)
		if err != nil {
			return nil, err
		}
		if !vd.Respond {
			return nil, vd.Refusal
		}
		if sc.Comment.PostID != postID {
			return nil, Errorf(EINVALID, "reply_to must be a comment of this post")
		}
		known = append(known, sc.Comment)
		if sc.Thread != nil {
			known = append(known, sc.Thread)
		}
	}
	now := s.now().Truncate(1e6)
	c := &Comment{PostID: postID, UserID: userID, AnswerID: in.ReplyTo, Text: in.Text, CreatedAt: now, UpdatedAt: now}
	if err := s.Comments.CreateComment(ctx, c); err != nil {
		return nil, err
	}
	vs, err := s.commentViews(ctx, userID, post, []*Comment{c}, nil, known...)
	if err != nil {
		return nil, err
	}
	return &vs[0], nil
}

// CommentWithPost returns comment id as viewerID is shown it, with its
// post. ENOTFOUND as shownComment.
func (s *Service) CommentWithPost(ctx context.Context, viewerID, id int64) (*CommentView, *Post, error) {
	sc, err := s.shownComment(ctx, viewerID, id)
	if err != nil {
		return nil, nil, err
	}
	var known []*Comment
	if sc.Thread != nil {
		known = append(known, sc.Thread)
	}
	vs, err := s.commentViews(ctx, viewerID, sc, []*Comment{sc.Comment}, nil, known...)
	if err != nil {
		return nil, nil, err
	}
	return &vs[0], sc.Post, nil
}

// refused is the error of an action See did not allow: ENOTFOUND when the
// comment is Unseen or a placeholder, forbidden otherwise.
func refused(sc Scene, vd Verdict, forbidden error) error {
	if vd.Sight == Unseen || sc.Comment.Deleted {
		return ErrNotFound("comment")
	}
	return forbidden
}

// DeleteComment deletes comment id for userID: its author, or the author
// of its post whatever blocks exist (See). ENOTFOUND for a comment the
// user is not shown, or a placeholder; EFORBIDDEN for anyone else's.
func (s *Service) DeleteComment(ctx context.Context, userID, id int64) error {
	sc, vd, err := s.commentScene(ctx, Viewer{ID: userID}, id)
	if err != nil {
		return err
	}
	if !vd.Delete {
		return refused(sc, vd, ErrNotCommentDeleter)
	}
	_, err = s.Comments.DeleteComment(ctx, id, s.now())
	return err
}

// AdminDeleteComment deletes comment id as an admin (the admin listener).
func (s *Service) AdminDeleteComment(ctx context.Context, id int64) error {
	sc, vd, err := s.commentScene(ctx, Viewer{Moderator: true}, id)
	if err != nil {
		return err
	}
	if !vd.Delete {
		return refused(sc, vd, ErrNotCommentDeleter)
	}
	c, err := s.Comments.DeleteComment(ctx, id, s.now())
	if err == nil {
		s.log().Info("comment deleted", "comment_id", id, "post_id", c.PostID, "by", "admin")
	}
	return err
}

// SetCommentLike makes userID like (or stop liking) comment id.
// Idempotent. ENOTFOUND for a comment the user is not shown, or a deleted
// placeholder; EFORBIDDEN when the user and its author are in a block.
func (s *Service) SetCommentLike(ctx context.Context, userID, id int64, like bool) error {
	_, vd, err := s.commentScene(ctx, Viewer{ID: userID}, id)
	if err != nil {
		return err
	}
	if !vd.Respond {
		return vd.Refusal
	}
	return s.Comments.SetCommentLike(ctx, id, userID, like, s.now())
}

// HideComment hides (or shows again) comment id on the post of userID,
// who must be the post's author (whatever blocks exist: See): it is then
// left out for everyone but its own author, and shown to the post's author
// marked hidden. Idempotent.
func (s *Service) HideComment(ctx context.Context, userID, id int64, hide bool) error {
	sc, vd, err := s.commentScene(ctx, Viewer{ID: userID}, id)
	if err != nil {
		return err
	}
	if !vd.Hide {
		return refused(sc, vd, ErrNotPostAuthor)
	}
	return s.Comments.SetCommentAuthorHidden(ctx, id, hide, s.now())
}

// ReportComment records userID's report of comment id under the rule of
// post reports (Report): ReportThreshold counted reports hide it from
// everyone but its author until an admin restores it. The post's author
// may report every comment under the post (See). ENOTFOUND for a comment
// the user is not shown; EINVALID for one's own comment or a bad reason;
// ETOOMANY over ReportLimit (shared with reports of posts).
func (s *Service) ReportComment(ctx context.Context, userID, id int64, reason string) error {
	reason, err := validReason(reason)
	if err != nil {
		return err
	}
	sc, vd, err := s.commentScene(ctx, Viewer{ID: userID}, id)
	if err != nil {
		return err
	}
	if !vd.Report {
		return refused(sc, vd, Errorf(EINVALID, "you cannot report your own comment"))
	}
	if err := s.hit(ctx, "report:user:"+strconv.FormatInt(userID, 10), s.ReportLimit, 1, "reports"); err != nil {
		return err
	}
	hidden, err := s.Comments.ReportComment(ctx, id, userID, reason, s.now(), s.reportRule())
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
	sc, vd, err := s.commentScene(ctx, Viewer{Moderator: true}, id)
	if err != nil {
		return err
	}
	if !vd.Hide {
		return refused(sc, vd, ErrNotPostAuthor)
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
	post, err := s.commentPost(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	if !See(Viewer{ID: userID}, post).Edit {
		return nil, ErrNotPolicySetter
	}
	if err := s.Comments.SetCommentPolicy(ctx, id, p, s.now()); err != nil {
		return nil, err
	}
	return s.Post(ctx, userID, id)
}
