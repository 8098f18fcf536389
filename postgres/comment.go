package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	feed "github.com/feedd/feedd"
)

var _ feed.CommentStore = (*DB)(nil)

// Every write that adds or deletes a comment locks its post's row first
// (the UPDATE of posts.comments, or FOR NO KEY UPDATE): the comment writes
// of one post run one at a time, so the counts, the placeholder rule and
// the checks (the answered comment, its thread) hold exactly; DeletePost's
// FOR UPDATE waits for them, or they for it and then find no post. Likes,
// which lock no post, hold the comment's row with FOR KEY SHARE.

const commentCols = `id, post_id, user_id, parent_id, answer_id, content, liked, replies, status, author_hidden, deleted, created_at, updated_at`

// scanComment scans a row of commentCols, followed by the columns of
// extra.
func scanComment(row pgx.Row, extra ...any) (*feed.Comment, error) {
	var c feed.Comment
	var status int16
	var created, updated int64
	if err := row.Scan(append([]any{&c.ID, &c.PostID, &c.UserID, &c.ParentID, &c.AnswerID, &c.Text, &c.Liked, &c.Replies, &status,
		&c.AuthorHidden, &c.Deleted, &created, &updated}, extra...)...); err != nil {
		return nil, err
	}
	c.Status = feed.CommentStatus(status)
	c.CreatedAt, c.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return &c, nil
}

func scanComments(rows pgx.Rows, err error) ([]*feed.Comment, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*feed.Comment, error) { return scanComment(row) })
	if out == nil && err == nil {
		out = []*feed.Comment{}
	}
	return out, err
}

// CreateComment implements feed.CommentStore: the comment, as the Plan of
// the feed.CommentFacts read in its transaction (with the post's row
// locked) says.
func (db *DB) CreateComment(ctx context.Context, c *feed.Comment) error {
	id := c.ID
	return db.tx(ctx, func(tx pgx.Tx) error {
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
		args := []any{c.PostID, c.UserID, c.ParentID, c.AnswerID, c.Text, ms(c.CreatedAt), ms(c.UpdatedAt)}
		if c.ID == 0 {
			err = tx.QueryRow(ctx, `INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, args...).Scan(&c.ID)
		} else {
			err = tx.QueryRow(ctx, `INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, created_at, updated_at, id)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id`, append(args, c.ID)...).Scan(&c.ID)
			if errors.Is(err, pgx.ErrNoRows) {
				return feed.Errorf(feed.ECONFLICT, "comment %d exists", id)
			}
			if err == nil {
				// Later ids follow the largest kept.
				_, err = tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('comments', 'id'), $1) WHERE $1 > (SELECT last_value FROM comments_id_seq)`, c.ID)
			}
		}
		if err != nil {
			return err
		}
		if c.ParentID != 0 {
			if _, err := tx.Exec(ctx, `UPDATE comments SET replies = replies + 1 WHERE id = $1`, c.ParentID); err != nil {
				return err
			}
		}
		if err := db.notifyAdd(ctx, tx, plan.TellReply, feed.NotifyReply, c.AnswerID, c.UserID, "", c.CreatedAt); err != nil {
			return err
		}
		return db.notifyAdd(ctx, tx, plan.TellComment, feed.NotifyComment, c.PostID, c.UserID, "", c.CreatedAt)
	})
}

// commentFacts reads, in tx, the feed.CommentFacts of new comment c,
// moving the post's comment count first (which locks its row: the
// comment writes of one post run one at a time; a refused comment rolls
// it back): the post with its hiding, its author's follow of and blocks
// with the commenter, and the answered comment with its author's blocks
// (with the commenter, and by the post's author).
func commentFacts(ctx context.Context, tx pgx.Tx, c *feed.Comment) (feed.CommentFacts, error) {
	var f feed.CommentFacts
	p := feed.Post{ID: c.PostID}
	var policy int16
	var r feed.Relation
	err := tx.QueryRow(ctx, `UPDATE posts p SET comments = comments + 1 WHERE id = $1 RETURNING user_id, comment_policy,
		EXISTS (SELECT 1 FROM hidden_posts WHERE post_id = $1),
		EXISTS (SELECT 1 FROM follows WHERE follower_id = p.user_id AND followee_id = $2),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = p.user_id AND blocked_id = $2),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = $2 AND blocked_id = p.user_id)`,
		c.PostID, c.UserID).Scan(&p.UserID, &policy, &f.PostHidden, &f.FollowedByAuthor, &r.BlocksViewer, &r.Blocked)
	if err != nil {
		return f, ignoreNoRows(err)
	}
	p.CommentPolicy = feed.CommentPolicy(policy)
	f.Post, f.Rel = &p, map[int64]feed.Relation{p.UserID: r}
	if c.AnswerID == 0 {
		return f, nil
	}
	var ar feed.Relation
	a, err := scanComment(tx.QueryRow(ctx, `SELECT `+commentCols+`,
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = comments.user_id AND b.blocked_id = $3),
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = $3 AND b.blocked_id = comments.user_id),
		EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = $4 AND b.blocked_id = comments.user_id)
		FROM comments WHERE id = $1 AND post_id = $2`, c.AnswerID, c.PostID, c.UserID, p.UserID), &ar.BlocksViewer, &ar.Blocked, &f.AnsweredBlocked)
	if err != nil {
		return f, ignoreNoRows(err)
	}
	f.Answered, f.Rel[a.UserID] = a, ar
	return f, nil
}

// ignoreNoRows is err, nil for no row.
func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// Comment implements feed.CommentStore.
func (db *DB) Comment(ctx context.Context, id int64) (*feed.Comment, error) {
	c, err := scanComment(db.Pool.QueryRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	cs, err := scanComments(db.Pool.Query(ctx, `SELECT `+commentCols+` FROM comments WHERE id = ANY($1)`, ids))
	for _, c := range cs {
		out[c.ID] = c
	}
	return out, err
}

// NewComments implements feed.CommentStore on comments_post.
func (db *DB) NewComments(ctx context.Context, postID int64, b feed.Bound, limit int) ([]*feed.Comment, error) {
	return scanComments(db.Pool.Query(ctx, `SELECT `+commentCols+` FROM comments WHERE post_id = $1 AND parent_id = 0
		AND created_at <= $2 AND (created_at < $2 OR $3::bigint = 0 OR id < $3)
		ORDER BY created_at DESC, id DESC LIMIT $4`, postID, b.Max, b.BeforeID, limit))
}

// TopComments implements feed.CommentStore on comments_top, which covers
// the query.
func (db *DB) TopComments(ctx context.Context, postID int64, limit int) ([]int64, error) {
	return scanIDs(db.Pool.Query(ctx, `SELECT id FROM comments WHERE post_id = $1 AND parent_id = 0
		ORDER BY liked DESC, created_at DESC, id DESC LIMIT $2`, postID, limit))
}

// Replies implements feed.CommentStore on comments_thread.
func (db *DB) Replies(ctx context.Context, threadID int64, after feed.Entry, limit int) ([]*feed.Comment, error) {
	return scanComments(db.Pool.Query(ctx, `SELECT `+commentCols+` FROM comments WHERE parent_id = $1 AND parent_id <> 0
		AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`, threadID, after.Score, after.PostID, limit))
}

// FirstReplies implements feed.CommentStore: per thread, an index range of
// comments_thread (LATERAL).
func (db *DB) FirstReplies(ctx context.Context, threadIDs []int64, n int) (map[int64][]*feed.Comment, error) {
	out := map[int64][]*feed.Comment{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	cs, err := scanComments(db.Pool.Query(ctx, `SELECT r.* FROM unnest($1::bigint[]) t(id)
		CROSS JOIN LATERAL (SELECT `+commentCols+` FROM comments WHERE parent_id = t.id AND parent_id <> 0
			ORDER BY created_at, id LIMIT $2) r`, threadIDs, n))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cs, func(a, b *feed.Comment) int { return b.Key().Compare(a.Key()) })
	for _, c := range cs {
		out[c.ParentID] = append(out[c.ParentID], c)
	}
	return out, nil
}

// lockCommentPost reads comment id (not a placeholder) and its post's
// author with the post's row locked, then the comment's (the order of
// every comment write): ENOTFOUND when either is gone.
func lockCommentPost(ctx context.Context, tx pgx.Tx, id int64) (*feed.Comment, int64, error) {
	var postID int64
	err := tx.QueryRow(ctx, `SELECT post_id FROM comments WHERE id = $1`, id).Scan(&postID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, feed.ErrNotFound("comment")
	} else if err != nil {
		return nil, 0, err
	}
	var author int64
	if err := tx.QueryRow(ctx, `SELECT user_id FROM posts WHERE id = $1 FOR NO KEY UPDATE`, postID).Scan(&author); errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, feed.ErrNotFound("comment")
	} else if err != nil {
		return nil, 0, err
	}
	c, err := scanComment(tx.QueryRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id = $1 AND NOT deleted FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, feed.ErrNotFound("comment")
	}
	return c, author, err
}

// DeleteComment implements feed.CommentStore.
func (db *DB) DeleteComment(ctx context.Context, id int64, now time.Time) (*feed.Comment, error) {
	var c *feed.Comment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var postAuthor int64
		var err error
		if c, postAuthor, err = lockCommentPost(ctx, tx, id); err != nil {
			return err
		}
		var thread *feed.Comment
		if c.ParentID != 0 {
			if thread, err = scanComment(tx.QueryRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id = $1`, c.ParentID)); ignoreNoRows(err) != nil {
				return err
			}
		}
		placeholder, threadGoes := c.Deletion(thread)
		switch {
		case placeholder:
			if _, err := tx.Exec(ctx, `UPDATE comments SET deleted = true, content = '', liked = 0, updated_at = $1 WHERE id = $2`, ms(now), id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM comment_likes WHERE comment_id = $1`, id); err != nil {
				return err
			}
		default:
			ids := []int64{id}
			if c.ParentID != 0 {
				if _, err := tx.Exec(ctx, `UPDATE comments SET replies = replies - 1 WHERE id = $1`, c.ParentID); err != nil {
					return err
				}
			}
			if threadGoes {
				ids = append(ids, c.ParentID)
			}
			if err := deleteCommentRows(ctx, tx, ids); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE posts SET comments = comments - 1 WHERE id = $1`, c.PostID); err != nil {
			return err
		}
		return db.notifyCommentGone(ctx, tx, c, postAuthor)
	})
	return c, err
}

// deleteCommentRows removes the comments ids with their likes and reports.
func deleteCommentRows(ctx context.Context, tx pgx.Tx, ids []int64) error {
	for _, q := range []string{
		`DELETE FROM comment_likes WHERE comment_id = ANY($1)`,
		`DELETE FROM comment_reports WHERE comment_id = ANY($1)`,
		`DELETE FROM comments WHERE id = ANY($1)`,
	} {
		if _, err := tx.Exec(ctx, q, ids); err != nil {
			return err
		}
	}
	return nil
}

// notifyCommentGone is the hook of a deleted comment c of a post of
// postAuthor: its author leaves the post's comment group unless they have
// another comment there, and the answered comment's reply group unless
// they have another reply to it; the reply groups of c itself go.
func (db *DB) notifyCommentGone(ctx context.Context, tx pgx.Tx, c *feed.Comment, postAuthor int64) error {
	var other, otherReply bool
	var answerAuthor *int64
	if err := tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM comments WHERE user_id = $1 AND post_id = $2 AND NOT deleted AND id <> $3),
		EXISTS (SELECT 1 FROM comments WHERE user_id = $1 AND post_id = $2 AND answer_id = $4 AND NOT deleted AND id <> $3),
		(SELECT user_id FROM comments WHERE id = $4)`,
		c.UserID, c.PostID, c.ID, c.AnswerID).Scan(&other, &otherReply, &answerAuthor); err != nil {
		return err
	}
	if !other {
		if err := db.notifyRetract(ctx, tx, postAuthor, feed.NotifyComment, c.PostID, c.UserID); err != nil {
			return err
		}
	}
	if c.AnswerID != 0 && !otherReply && answerAuthor != nil {
		if err := db.notifyRetract(ctx, tx, *answerAuthor, feed.NotifyReply, c.AnswerID, c.UserID); err != nil {
			return err
		}
	}
	gids, err := scanIDs(tx.Query(ctx, `DELETE FROM notify_groups WHERE user_id = $1 AND kind = $2 AND target_id = $3 RETURNING id`,
		c.UserID, feed.NotifyReply, c.ID))
	for _, gid := range gids {
		db.notice(tx, c.UserID, gid)
	}
	return err
}

// SetCommentLike implements feed.CommentStore. The comment's row is held
// with FOR KEY SHARE: likers do not block each other, and its deletion
// waits for them and then takes their likes. A comment turned into a
// placeholder meanwhile refuses the like (the UPDATE finds no live row).
func (db *DB) SetCommentLike(ctx context.Context, id, userID int64, like bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM comments c JOIN posts p ON p.id = c.post_id WHERE c.id = $1 AND NOT c.deleted
			AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id IN (c.user_id, p.user_id) AND b.blocked_id = $2)
			FOR KEY SHARE OF c`, id, userID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return feed.ErrNotFound("comment")
		} else if err != nil {
			return err
		}
		var tag pgconn.CommandTag
		delta := 1
		if like {
			tag, err = tx.Exec(ctx, `INSERT INTO comment_likes (comment_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, id, userID, ms(now))
		} else {
			delta = -1
			tag, err = tx.Exec(ctx, `DELETE FROM comment_likes WHERE comment_id = $1 AND user_id = $2`, id, userID)
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if tag, err = tx.Exec(ctx, `UPDATE comments SET liked = liked + $1 WHERE id = $2 AND NOT deleted`, delta, id); err != nil {
			return err
		} else if tag.RowsAffected() == 0 {
			return feed.ErrNotFound("comment")
		}
		return nil
	})
}

// CommentLikedBy implements feed.CommentStore.
func (db *DB) CommentLikedBy(ctx context.Context, userID int64, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	liked, err := scanIDs(db.Pool.Query(ctx, `SELECT comment_id FROM comment_likes WHERE user_id = $1 AND comment_id = ANY($2)`, userID, ids))
	for _, id := range liked {
		out[id] = true
	}
	return out, err
}

// SetCommentPolicy implements feed.CommentStore.
func (db *DB) SetCommentPolicy(ctx context.Context, postID int64, p feed.CommentPolicy, now time.Time) error {
	tag, err := db.Pool.Exec(ctx, `UPDATE posts SET comment_policy = $1, updated_at = $2 WHERE id = $3`, int16(p), ms(now), postID)
	if err == nil && tag.RowsAffected() == 0 {
		return feed.ErrNotFound("post")
	}
	return err
}

// PurgeComments implements feed.CommentStore: one transaction, an index
// range of comments_post.
func (db *DB) PurgeComments(ctx context.Context, postID int64, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM posts WHERE id = $1)`, postID).Scan(&exists); err != nil || exists {
			return err
		}
		ids, err := scanIDs(tx.Query(ctx, `SELECT id FROM comments WHERE post_id = $1 LIMIT $2`, postID, limit))
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM notify_groups g USING comments c
			WHERE c.id = ANY($1) AND g.user_id = c.user_id AND g.kind = $2 AND g.target_id = c.id RETURNING g.id, g.user_id`, ids, feed.NotifyReply)
		if err != nil {
			return err
		}
		gone, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]int64, error) {
			var g [2]int64
			err := row.Scan(&g[0], &g[1])
			return g, err
		})
		if err != nil {
			return err
		}
		for _, g := range gone {
			db.notice(tx, g[1], g[0])
		}
		if err := deleteCommentRows(ctx, tx, ids); err != nil {
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
	rows, err := db.Pool.Query(ctx, `SELECT a,
		EXISTS (SELECT 1 FROM blocks WHERE user_id = a AND blocked_id = $1),
		EXISTS (SELECT 1 FROM blocks WHERE user_id = $1 AND blocked_id = a),
		EXISTS (SELECT 1 FROM mutes WHERE user_id = $1 AND muted_id = a)
		FROM unnest($2::bigint[]) a`, viewerID, userIDs)
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
