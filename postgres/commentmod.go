package postgres

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

// The moderation of comments: the post author's hiding, reports under the
// rule of post reports, the admin's decisions and list.

// SetCommentAuthorHidden implements feed.CommentStore.
func (db *DB) SetCommentAuthorHidden(ctx context.Context, id int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, _, err := lockCommentPost(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE comments SET author_hidden = $1 WHERE id = $2`, hidden, id)
		return err
	})
}

// countedCommentReports counts the reports of comment $1 that count toward
// hiding it, under feed.ReportRule: not dismissed, by accounts at least $2
// ms old when they reported, in no block with the comment's author.
const countedCommentReports = `SELECT count(*)::INT FROM comment_reports r
	JOIN comments c ON c.id = r.comment_id
	JOIN users u ON u.id = r.reporter_id
	WHERE r.comment_id = $1 AND NOT r.dismissed AND u.created_at <= r.created_at - $2::BIGINT
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = c.user_id AND b.blocked_id = r.reporter_id)
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = r.reporter_id AND b.blocked_id = c.user_id)`

// ReportComment implements feed.CommentStore. The comment's row is locked,
// so that of concurrent reports the last one counts them all.
func (db *DB) ReportComment(ctx context.Context, id, reporterID int64, reason string, now time.Time, rule feed.ReportRule) (bool, error) {
	var hidden bool
	err := db.tx(ctx, func(tx pgx.Tx) error {
		hidden = false
		if _, _, err := lockCommentPost(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO comment_reports (comment_id, reporter_id, reason, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (comment_id, reporter_id) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at`,
			id, reporterID, reason, ms(now)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE comments SET status = 1 WHERE id = $1 AND status = 0`, id); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, countedCommentReports, id, rule.MinAge.Milliseconds()).Scan(&n); err != nil {
			return err
		}
		if !rule.Hides(n) {
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE comments SET status = 2 WHERE id = $1 AND status <> 2`, id)
		hidden = err == nil && tag.RowsAffected() > 0
		return err
	})
	return hidden, err
}

// SetCommentModerated implements feed.CommentStore.
func (db *DB) SetCommentModerated(ctx context.Context, id int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, _, err := lockCommentPost(ctx, tx, id); err != nil {
			return err
		}
		if hidden {
			_, err := tx.Exec(ctx, `UPDATE comments SET status = 2 WHERE id = $1`, id)
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE comments SET status = 0 WHERE id = $1`, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE comment_reports SET dismissed = true WHERE comment_id = $1 AND NOT dismissed`, id)
		return err
	})
}

// ReportedComments implements feed.CommentStore on comments_status.
func (db *DB) ReportedComments(ctx context.Context, before int64, limit int) ([]feed.ReportedComment, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := db.Pool.Query(ctx, `SELECT c.id, c.post_id, c.user_id, c.content,
		(SELECT count(*) FROM comment_reports r WHERE r.comment_id = c.id AND NOT r.dismissed)::INT,
		coalesce((SELECT reason FROM comment_reports r WHERE r.comment_id = c.id AND NOT r.dismissed ORDER BY created_at DESC, reporter_id DESC LIMIT 1), ''),
		c.status
		FROM comments c WHERE c.status <> 0 AND c.id < $1 ORDER BY c.id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (feed.ReportedComment, error) {
		var r feed.ReportedComment
		var status int16
		err := row.Scan(&r.CommentID, &r.PostID, &r.AuthorID, &r.Text, &r.Reports, &r.LastReason, &status)
		r.Status = feed.CommentStatus(status)
		return r, err
	})
	if out == nil && err == nil {
		out = []feed.ReportedComment{}
	}
	return out, err
}
