package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.CommentStore = (*DB)(nil)

// Comments are written in transactions of the one writer, so the counts
// (posts.comments, comments.replies) move with the rows, exactly, and
// every check of a write (the post, blocks, the policy, the answered
// comment) sees the state it commits on.

const commentCols = `id, post_id, user_id, parent_id, answer_id, content, liked, replies, status, author_hidden, deleted, created_at, updated_at`

// scanComment scans a row of commentCols, followed by the columns of
// extra.
func scanComment(s scanner, extra ...any) (*feed.Comment, error) {
	var c feed.Comment
	var status, created, updated int64
	if err := s.Scan(append([]any{&c.ID, &c.PostID, &c.UserID, &c.ParentID, &c.AnswerID, &c.Text, &c.Liked, &c.Replies, &status,
		&c.AuthorHidden, &c.Deleted, &created, &updated}, extra...)...); err != nil {
		return nil, err
	}
	c.Status = feed.CommentStatus(status)
	c.CreatedAt, c.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return &c, nil
}

func scanComments(rows *sql.Rows, err error) ([]*feed.Comment, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*feed.Comment{}
	for rows.Next() {
		c, err := scanComment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CreateComment implements feed.CommentStore: the comment, as the Plan of
// the feed.CommentFacts read in its transaction says.
func (db *DB) CreateComment(ctx context.Context, c *feed.Comment) error {
	id := c.ID
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		c.ID = id // fn may run again (DB.tx)
		f, err := commentFacts(ctx, tx, c)
		if err != nil {
			return err
		}
		plan, err := f.Plan(c)
		if err != nil {
			return err
		}
		c.ParentID = plan.ParentID
		insert := `INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`
		args := []any{c.PostID, c.UserID, c.ParentID, c.AnswerID, c.Text, ms(c.CreatedAt), ms(c.UpdatedAt)}
		if c.ID != 0 {
			insert = `INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, created_at, updated_at, id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`
			args = append(args, c.ID)
		}
		if err := tx.QueryRowContext(ctx, insert, args...).Scan(&c.ID); errors.Is(err, sql.ErrNoRows) {
			return feed.Errorf(feed.ECONFLICT, "comment %d exists", id)
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET comments = comments + 1 WHERE id = ?`, c.PostID); err != nil {
			return err
		}
		if c.ParentID != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE comments SET replies = replies + 1 WHERE id = ?`, c.ParentID); err != nil {
				return err
			}
		}
		if err := db.notifyAdd(ctx, tx, plan.TellReply, feed.NotifyReply, c.AnswerID, c.UserID, "", c.CreatedAt); err != nil {
			return err
		}
		return db.notifyAdd(ctx, tx, plan.TellComment, feed.NotifyComment, c.PostID, c.UserID, "", c.CreatedAt)
	})
}

// commentFacts reads, in tx, the feed.CommentFacts of new comment c: the
// post with its hiding, its author's follow of and blocks with the
// commenter, and the answered comment with its author's blocks (with the
// commenter, and by the post's author).
func commentFacts(ctx context.Context, tx *sql.Tx, c *feed.Comment) (feed.CommentFacts, error) {
	var f feed.CommentFacts
	p := feed.Post{ID: c.PostID}
	var r feed.Relation
	err := tx.QueryRowContext(ctx, `SELECT user_id, comment_policy,
		EXISTS (SELECT 1 FROM hidden_posts WHERE post_id = ?1),
		EXISTS (SELECT 1 FROM follows WHERE follower_id = p.user_id AND followee_id = ?2),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = p.user_id AND blocked_id = ?2),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = ?2 AND blocked_id = p.user_id)
		FROM posts p WHERE id = ?1`, c.PostID, c.UserID).Scan(&p.UserID, &p.CommentPolicy, &f.PostHidden, &f.FollowedByAuthor, &r.BlocksViewer, &r.Blocked)
	if errors.Is(err, sql.ErrNoRows) || err != nil {
		return f, ignoreNoRows(err)
	}
	f.Post, f.Rel = &p, map[int64]feed.Relation{p.UserID: r}
	if c.AnswerID == 0 {
		return f, nil
	}
	var ar feed.Relation
	a, err := scanComment(tx.QueryRowContext(ctx, `SELECT `+commentCols+`,
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = comments.user_id AND b.blocked_id = ?3),
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = ?3 AND b.blocked_id = comments.user_id),
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = ?4 AND b.blocked_id = comments.user_id)
		FROM comments WHERE id = ?1 AND post_id = ?2`, c.AnswerID, c.PostID, c.UserID, p.UserID), &ar.BlocksViewer, &ar.Blocked, &f.AnsweredBlocked)
	if err != nil {
		return f, ignoreNoRows(err)
	}
	f.Answered, f.Rel[a.UserID] = a, ar
	return f, nil
}

// ignoreNoRows is err, nil for no row.
func ignoreNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// Comment implements feed.CommentStore.
func (db *DB) Comment(ctx context.Context, id int64) (*feed.Comment, error) {
	c, err := scanComment(db.readRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("comment")
	}
	return c, err
}

// Comments implements feed.CommentStore.
func (db *DB) Comments(ctx context.Context, ids []int64) (map[int64]*feed.Comment, error) {
	out := make(map[int64]*feed.Comment, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cs, err := scanComments(db.read(ctx, `SELECT `+commentCols+` FROM comments WHERE id IN (SELECT value FROM json_each(?))`, idList(ids)))
	for _, c := range cs {
		out[c.ID] = c
	}
	return out, err
}

// NewComments implements feed.CommentStore on comments_post.
func (db *DB) NewComments(ctx context.Context, postID int64, b feed.Bound, limit int) ([]*feed.Comment, error) {
	return scanComments(db.read(ctx, `SELECT `+commentCols+` FROM comments WHERE post_id = ?1 AND parent_id = 0
		AND created_at <= ?2 AND (created_at < ?2 OR ?3 = 0 OR id < ?3)
		ORDER BY created_at DESC, id DESC LIMIT ?4`, postID, b.Max, b.BeforeID, limit))
}

// TopComments implements feed.CommentStore on comments_top, which covers
// the query.
func (db *DB) TopComments(ctx context.Context, postID int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT id FROM comments WHERE post_id = ? AND parent_id = 0
		ORDER BY liked DESC, created_at DESC, id DESC LIMIT ?`, postID, limit))
}

// Replies implements feed.CommentStore on comments_thread.
func (db *DB) Replies(ctx context.Context, threadID int64, after feed.Entry, limit int) ([]*feed.Comment, error) {
	return scanComments(db.read(ctx, `SELECT `+commentCols+` FROM comments WHERE parent_id = ?1 AND parent_id <> 0
		AND (created_at, id) > (?2, ?3) ORDER BY created_at, id LIMIT ?4`, threadID, after.Score, after.PostID, limit))
}

// FirstReplies implements feed.CommentStore: per thread, an index range of
// comments_thread.
func (db *DB) FirstReplies(ctx context.Context, threadIDs []int64, n int) (map[int64][]*feed.Comment, error) {
	out := map[int64][]*feed.Comment{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	cs, err := scanComments(db.read(ctx, `SELECT `+commentCols+` FROM comments WHERE id IN (SELECT r.id FROM json_each(?1) t
		JOIN comments r ON r.id IN (SELECT id FROM comments WHERE parent_id = t.value AND parent_id <> 0 ORDER BY created_at, id LIMIT ?2))`,
		idList(threadIDs), n))
	if err != nil {
		return nil, err
	}
	return groupReplies(cs), nil
}

// groupReplies groups replies by thread, oldest first in each.
func groupReplies(cs []*feed.Comment) map[int64][]*feed.Comment {
	out := map[int64][]*feed.Comment{}
	slices.SortFunc(cs, func(a, b *feed.Comment) int { return b.Key().Compare(a.Key()) })
	for _, c := range cs {
		out[c.ParentID] = append(out[c.ParentID], c)
	}
	return out
}

// DeleteComment implements feed.CommentStore.
func (db *DB) DeleteComment(ctx context.Context, id int64, now time.Time) (*feed.Comment, error) {
	var c *feed.Comment
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		c, err = scanComment(tx.QueryRowContext(ctx, `SELECT `+commentCols+` FROM comments WHERE id = ? AND deleted = 0`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return feed.ErrNotFound("comment")
		} else if err != nil {
			return err
		}
		var postAuthor int64
		if err := tx.QueryRowContext(ctx, `SELECT user_id FROM posts WHERE id = ?`, c.PostID).Scan(&postAuthor); errors.Is(err, sql.ErrNoRows) {
			return feed.ErrNotFound("comment")
		} else if err != nil {
			return err
		}
		var thread *feed.Comment
		if c.ParentID != 0 {
			if thread, err = scanComment(tx.QueryRowContext(ctx, `SELECT `+commentCols+` FROM comments WHERE id = ?`, c.ParentID)); ignoreNoRows(err) != nil {
				return err
			}
		}
		placeholder, threadGoes := c.Deletion(thread)
		switch {
		case placeholder:
			if _, err := tx.ExecContext(ctx, `UPDATE comments SET deleted = 1, content = '', liked = 0, updated_at = ? WHERE id = ?`, ms(now), id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM comment_likes WHERE comment_id = ?`, id); err != nil {
				return err
			}
		default:
			ids := []int64{id}
			if c.ParentID != 0 {
				if _, err := tx.ExecContext(ctx, `UPDATE comments SET replies = replies - 1 WHERE id = ?`, c.ParentID); err != nil {
					return err
				}
			}
			if threadGoes {
				ids = append(ids, c.ParentID)
			}
			if err := deleteCommentRows(ctx, tx, idList(ids)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET comments = comments - 1 WHERE id = ?`, c.PostID); err != nil {
			return err
		}
		return db.notifyCommentGone(ctx, tx, c, postAuthor)
	})
	return c, err
}

// deleteCommentRows removes the comments ids (a JSON array) with their
// likes and reports.
func deleteCommentRows(ctx context.Context, tx *sql.Tx, ids string) error {
	for _, q := range []string{
		`DELETE FROM comment_likes WHERE comment_id IN (SELECT value FROM json_each(?))`,
		`DELETE FROM comment_reports WHERE comment_id IN (SELECT value FROM json_each(?))`,
		`DELETE FROM comments WHERE id IN (SELECT value FROM json_each(?))`,
	} {
		if _, err := tx.ExecContext(ctx, q, ids); err != nil {
			return err
		}
	}
	return nil
}

// notifyCommentGone is the hook of a deleted comment c of a post of
// postAuthor: its author leaves the post's comment group unless they have
// another comment there, and the answered comment's reply group unless
// they have another reply to it; the reply groups of c itself go.
func (db *DB) notifyCommentGone(ctx context.Context, tx *sql.Tx, c *feed.Comment, postAuthor int64) error {
	var other, otherReply bool
	if err := tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM comments WHERE user_id = ?1 AND post_id = ?2 AND deleted = 0 AND id <> ?3),
		EXISTS (SELECT 1 FROM comments WHERE user_id = ?1 AND post_id = ?2 AND answer_id = ?4 AND deleted = 0 AND id <> ?3)`,
		c.UserID, c.PostID, c.ID, c.AnswerID).Scan(&other, &otherReply); err != nil {
		return err
	}
	if !other {
		if err := db.notifyRetract(ctx, tx, postAuthor, feed.NotifyComment, c.PostID, c.UserID); err != nil {
			return err
		}
	}
	if c.AnswerID != 0 && !otherReply {
		var answerAuthor int64
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM comments WHERE id = ?`, c.AnswerID).Scan(&answerAuthor)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil {
			if err := db.notifyRetract(ctx, tx, answerAuthor, feed.NotifyReply, c.AnswerID, c.UserID); err != nil {
				return err
			}
		}
	}
	gids, err := scanIDs(tx.QueryContext(ctx, `DELETE FROM notify_groups WHERE user_id = ? AND kind = ? AND target_id = ? RETURNING id`,
		c.UserID, feed.NotifyReply, c.ID))
	for _, gid := range gids {
		db.notice(tx, c.UserID, gid)
	}
	return err
}

// SetCommentLike implements feed.CommentStore.
func (db *DB) SetCommentLike(ctx context.Context, id, userID int64, like bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM comments c JOIN posts p ON p.id = c.post_id WHERE c.id = ?1 AND c.deleted = 0
			AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id IN (c.user_id, p.user_id) AND b.blocked_id = ?2)`, id, userID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return feed.ErrNotFound("comment")
		} else if err != nil {
			return err
		}
		var res sql.Result
		delta := 1
		if like {
			res, err = tx.ExecContext(ctx, `INSERT INTO comment_likes (comment_id, user_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, id, userID, ms(now))
		} else {
			delta = -1
			res, err = tx.ExecContext(ctx, `DELETE FROM comment_likes WHERE comment_id = ? AND user_id = ?`, id, userID)
		}
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE comments SET liked = liked + ? WHERE id = ?`, delta, id)
		return err
	})
}

// CommentLikedBy implements feed.CommentStore.
func (db *DB) CommentLikedBy(ctx context.Context, userID int64, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	liked, err := scanIDs(db.read(ctx, `SELECT comment_id FROM comment_likes WHERE user_id = ? AND comment_id IN (SELECT value FROM json_each(?))`, userID, idList(ids)))
	for _, id := range liked {
		out[id] = true
	}
	return out, err
}

// commentPostAuthor returns the author of comment id's post; ENOTFOUND when
// the comment (not a placeholder) or its post does not exist.
func commentPostAuthor(ctx context.Context, tx *sql.Tx, id int64) (int64, error) {
	var author int64
	err := tx.QueryRowContext(ctx, `SELECT p.user_id FROM comments c JOIN posts p ON p.id = c.post_id WHERE c.id = ? AND c.deleted = 0`, id).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, feed.ErrNotFound("comment")
	}
	return author, err
}

// SetCommentPolicy implements feed.CommentStore.
func (db *DB) SetCommentPolicy(ctx context.Context, postID int64, p feed.CommentPolicy, now time.Time) error {
	res, err := db.exec(ctx, `UPDATE posts SET comment_policy = ?, updated_at = ? WHERE id = ?`, int(p), ms(now), postID)
	if err != nil {
		return err
	}
	if k, err := res.RowsAffected(); err != nil {
		return err
	} else if k == 0 {
		return feed.ErrNotFound("post")
	}
	return nil
}

// PurgeComments implements feed.CommentStore: one transaction, an index
// range of comments_post.
func (db *DB) PurgeComments(ctx context.Context, postID int64, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		if err := postExists(ctx, tx, postID); err == nil {
			return nil
		} else if feed.ErrorCode(err) != feed.ENOTFOUND {
			return err
		}
		ids, err := scanIDs(tx.QueryContext(ctx, `SELECT id FROM comments WHERE post_id = ? LIMIT ?`, postID, limit))
		if err != nil || len(ids) == 0 {
			return err
		}
		list := idList(ids)
		rows, err := tx.QueryContext(ctx, `DELETE FROM notify_groups WHERE id IN (SELECT g.id FROM json_each(?) j
			JOIN comments c ON c.id = j.value JOIN notify_groups g ON g.user_id = c.user_id AND g.kind = ? AND g.target_id = c.id)
			RETURNING id, user_id`, list, feed.NotifyReply)
		if err != nil {
			return err
		}
		var gone [][2]int64
		for rows.Next() {
			var g [2]int64
			if err := rows.Scan(&g[0], &g[1]); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, g := range gone {
			db.notice(tx, g[1], g[0])
		}
		if err := deleteCommentRows(ctx, tx, list); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// Relations implements feed.SocialStore: one statement, primary-key
// lookups of blocks and mutes per user.
func (db *DB) Relations(ctx context.Context, viewerID int64, userIDs []int64) (map[int64]feed.Relation, error) {
	out := map[int64]feed.Relation{}
	if len(userIDs) == 0 || viewerID <= 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT a.value,
		EXISTS (SELECT 1 FROM blocks WHERE user_id = a.value AND blocked_id = ?1),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = ?1 AND blocked_id = a.value),
		EXISTS (SELECT 1 FROM mutes WHERE user_id = ?1 AND muted_id = a.value)
		FROM json_each(?2) a`, viewerID, idList(userIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r feed.Relation
		if err := rows.Scan(&id, &r.BlocksViewer, &r.Blocked, &r.Muted); err != nil {
			return nil, err
		}
		if r != (feed.Relation{}) {
			out[id] = r
		}
	}
	return out, rows.Err()
}
