package sqlite

import (
	"context"
	"database/sql"
	"time"

	feed "github.com/feedd/feedd"
)

// The moderation of comments: the post author's hiding, reports under the
// rule of post reports, the admin's decisions and list.

// SetCommentAuthorHidden implements feed.CommentStore.
func (db *DB) SetCommentAuthorHidden(ctx context.Context, id int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := commentPostAuthor(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE comments SET author_hidden = ? WHERE id = ?`, hidden, id)
		return err
	})
}

// countedCommentReports counts the reports of comment ?1 that count toward
// hiding it, under feed.ReportRule: not dismissed, by accounts at least ?2
// ms old when they reported, in no block with the comment's author.
const countedCommentReports = `SELECT count(*) FROM comment_reports r
	JOIN comments c ON c.id = r.comment_id
	JOIN users u ON u.id = r.reporter_id
	WHERE r.comment_id = ?1 AND r.dismissed = 0 AND u.created_at <= r.created_at - ?2
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = c.user_id AND b.blocked_id = r.reporter_id)
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = r.reporter_id AND b.blocked_id = c.user_id)`

// ReportComment implements feed.CommentStore.
func (db *DB) ReportComment(ctx context.Context, id, reporterID int64, reason string, now time.Time, rule feed.ReportRule) (bool, error) {
	var hidden bool
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		hidden = false
		if _, err := commentPostAuthor(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO comment_reports (comment_id, reporter_id, reason, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (comment_id, reporter_id) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at`,
			id, reporterID, reason, ms(now)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE comments SET status = 1 WHERE id = ? AND status = 0`, id); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, countedCommentReports, id, rule.MinAge.Milliseconds()).Scan(&n); err != nil {
			return err
		}
		if !rule.Hides(n) {
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE comments SET status = 2 WHERE id = ? AND status <> 2`, id)
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		hidden = k > 0
		return err
	})
	return hidden, err
}

// SetCommentModerated implements feed.CommentStore.
func (db *DB) SetCommentModerated(ctx context.Context, id int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := commentPostAuthor(ctx, tx, id); err != nil {
			return err
		}
		if hidden {
			_, err := tx.ExecContext(ctx, `UPDATE comments SET status = 2 WHERE id = ?`, id)
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE comments SET status = 0 WHERE id = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE comment_reports SET dismissed = 1 WHERE comment_id = ? AND dismissed = 0`, id)
		return err
	})
}

// ReportedComments implements feed.CommentStore on comments_status.
func (db *DB) ReportedComments(ctx context.Context, before int64, limit int) ([]feed.ReportedComment, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := db.read(ctx, `SELECT c.id, c.post_id, c.user_id, c.content,
		(SELECT count(*) FROM comment_reports r WHERE r.comment_id = c.id AND r.dismissed = 0),
		coalesce((SELECT reason FROM comment_reports r WHERE r.comment_id = c.id AND r.dismissed = 0 ORDER BY created_at DESC, reporter_id DESC LIMIT 1), ''),
		c.status
		FROM comments c WHERE c.status <> 0 AND c.id < ? ORDER BY c.id DESC LIMIT ?`, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []feed.ReportedComment{}
	for rows.Next() {
		var r feed.ReportedComment
		if err := rows.Scan(&r.CommentID, &r.PostID, &r.AuthorID, &r.Text, &r.Reports, &r.LastReason, &r.Status); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
