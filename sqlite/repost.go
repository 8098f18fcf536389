package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.RepostStore = (*DB)(nil)

// Reposts are written in transactions of the one writer, so a post's
// repost and quote counts move with the rows, exactly, and every check of
// a write (the post, blocks, the quote policy) sees the state it commits
// on.

// nextPostID takes the next id of the posts' sequence for a repost: SQLite
// gives a new post max(seq, largest id) + 1 (AUTOINCREMENT), so an id taken
// here is never a post's. In the repost's transaction, behind the one
// writer.
func nextPostID(ctx context.Context, tx *sql.Tx) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(id), 0) FROM posts),
		(SELECT coalesce(max(id), 0) FROM reposts)) + 1 WHERE name = 'posts' RETURNING seq`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) { // no post was ever inserted
		err = tx.QueryRowContext(ctx, `INSERT INTO sqlite_sequence (name, seq)
			SELECT 'posts', max((SELECT coalesce(max(id), 0) FROM posts), (SELECT coalesce(max(id), 0) FROM reposts)) + 1 RETURNING seq`).Scan(&id)
	}
	return id, err
}

// SetRepost implements feed.RepostStore.
func (db *DB) SetRepost(ctx context.Context, userID, postID int64, repost bool, now time.Time) (changed bool, err error) {
	err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		changed = false
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		var id, created int64
		err = tx.QueryRowContext(ctx, `SELECT id, created_at FROM reposts WHERE user_id = ? AND post_id = ?`, userID, postID).Scan(&id, &created)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if had := err == nil; had == repost {
			return nil // already so
		}
		delta := -1
		job := feed.Job(feed.RemoveJob{PostID: id, AuthorID: userID, Score: created})
		if repost {
			if id, err = nextPostID(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO reposts (id, user_id, post_id, created_at) VALUES (?, ?, ?, ?)`, id, userID, postID, ms(now)); err != nil {
				return err
			}
			delta, job = 1, feed.FanoutJob{PostID: id, AuthorID: userID, Score: ms(now)}
			err = db.notifyAdd(ctx, tx, author, feed.NotifyRepost, postID, userID, "", now)
		} else {
			if _, err := tx.ExecContext(ctx, `DELETE FROM reposts WHERE id = ?`, id); err != nil {
				return err
			}
			err = db.notifyRetract(ctx, tx, author, feed.NotifyRepost, postID, userID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET reposts = reposts + ? WHERE id = ?`, delta, postID); err != nil {
			return err
		}
		changed = true
		return db.enqueue(ctx, tx, job)
	})
	return changed && err == nil, err
}

// unrepostAuthor removes reposterID's reposts of authorID's posts (a
// block), counts in step, and returns their entries' removal jobs.
func (db *DB) unrepostAuthor(ctx context.Context, tx *sql.Tx, reposterID, authorID int64) ([]feed.Job, error) {
	rows, err := tx.QueryContext(ctx, `DELETE FROM reposts WHERE user_id = ? AND post_id IN (SELECT id FROM posts WHERE user_id = ?)
		RETURNING id, post_id, created_at`, reposterID, authorID)
	if err != nil {
		return nil, err
	}
	var jobs []feed.Job
	var posts []int64
	for rows.Next() {
		var id, post, created int64
		if err := rows.Scan(&id, &post, &created); err != nil {
			rows.Close()
			return nil, err
		}
		jobs = append(jobs, feed.RemoveJob{PostID: id, AuthorID: reposterID, Score: created})
		posts = append(posts, post)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(posts) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET reposts = reposts - 1 WHERE id IN (SELECT value FROM json_each(?))`, idList(posts)); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// quotablePost returns the author of post postID that userID quotes, or
// refuses: "post not found" when there is no such post or its author
// blocks userID (as likablePost), the post's quote policy otherwise.
func quotablePost(ctx context.Context, tx *sql.Tx, postID, userID int64) (int64, error) {
	var author int64
	var policy feed.QuotePolicy
	err := tx.QueryRowContext(ctx, `SELECT p.user_id, p.quote_policy FROM posts p WHERE p.id = ?
		AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = ?)`, postID, userID).Scan(&author, &policy)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, feed.ErrNotFound("post")
	} else if err != nil || author == userID {
		return author, err
	}
	switch policy {
	case feed.QuotesNobody:
		return 0, feed.ErrQuotesOff
	case feed.QuotesFollowing:
		var follows bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?)`, author, userID).Scan(&follows); err != nil {
			return 0, err
		} else if !follows {
			return 0, feed.ErrQuotesFollowing
		}
	}
	return author, nil
}

// unquote is DeletePost's step for a quote (quoteOf not 0): the quoted
// post's count moves, and its author's notification of the quote goes.
func (db *DB) unquote(ctx context.Context, tx *sql.Tx, quoteOf, quoteID int64) error {
	if quoteOf == 0 {
		return nil
	}
	var author int64
	err := tx.QueryRowContext(ctx, `UPDATE posts SET quotes = quotes - 1 WHERE id = ? RETURNING user_id`, quoteOf).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the quoted post is gone
	} else if err != nil {
		return err
	}
	gids, err := scanIDs(tx.QueryContext(ctx, `DELETE FROM notify_groups WHERE user_id = ? AND kind = ? AND target_id = ? RETURNING id`,
		author, feed.NotifyQuote, quoteID))
	for _, gid := range gids {
		db.notice(tx, author, gid)
	}
	return err
}

// Reposts implements feed.RepostStore.
func (db *DB) Reposts(ctx context.Context, ids []int64) (map[int64]*feed.Repost, error) {
	out := make(map[int64]*feed.Repost)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT id, user_id, post_id, created_at FROM reposts WHERE id IN (SELECT value FROM json_each(?))`, idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r feed.Repost
		var created int64
		if err := rows.Scan(&r.ID, &r.UserID, &r.PostID, &created); err != nil {
			return nil, err
		}
		r.CreatedAt = time.UnixMilli(created)
		out[r.ID] = &r
	}
	return out, rows.Err()
}

// repostEntriesQuery reads the reposts among ?2 (a JSON array) for the
// viewer ?1: each repost, its reposter's name, the post it shows with its
// author and the viewer's like (exists 0: gone), and the facts of
// feed.RepostEntry. Every lookup is by primary key or index.
const repostEntriesQuery = `SELECT r.id, r.user_id, r.post_id, r.created_at, ru.id IS NOT NULL, coalesce(ru.nick_name, ''), coalesce(ru.icon, ''),
	p.id IS NOT NULL, coalesce(p.user_id, 0), coalesce(p.shop_id, 0), coalesce(p.title, ''), coalesce(p.images, ''), coalesce(p.content, ''),
	coalesce(p.liked, 0), coalesce(p.comments, 0), coalesce(p.comment_policy, 0), coalesce(p.created_at, 0), coalesce(p.updated_at, 0),
	coalesce(p.quote_of, 0), coalesce(p.quote_policy, 0), coalesce(p.reposts, 0), coalesce(p.quotes, 0),
	u.id IS NOT NULL, coalesce(u.nick_name, ''), coalesce(u.icon, ''),
	EXISTS (SELECT 1 FROM likes l WHERE l.user_id = ?1 AND l.post_id = r.post_id),
	r.user_id = ?1 OR (EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = ?1 AND f.followee_id = r.user_id AND f.show_reposts <> 0)
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = ?1 AND m.muted_id = r.user_id)),
	coalesce(p.user_id = ?1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = ?1 AND f.followee_id = p.user_id), 0),
	EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = ?1 AND m.muted_id = p.user_id),
	EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = ?1 AND b.blocked_id = p.user_id),
	EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = ?1)
	FROM reposts r LEFT JOIN users ru ON ru.id = r.user_id LEFT JOIN posts p ON p.id = r.post_id LEFT JOIN users u ON u.id = p.user_id
	WHERE r.id IN (SELECT value FROM json_each(?2))`

// RepostEntries implements feed.RepostStore with repostEntriesQuery.
func (db *DB) RepostEntries(ctx context.Context, viewerID int64, ids []int64) (map[int64]*feed.RepostEntry, error) {
	out := map[int64]*feed.RepostEntry{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, repostEntriesQuery, viewerID, idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e feed.RepostEntry
		var p feed.Post
		var ru, a feed.User
		var created, pCreated, pUpdated int64
		var hasReposter, exists, hasAuthor, liked bool
		if err := rows.Scan(&e.ID, &e.UserID, &e.PostID, &created, &hasReposter, &ru.NickName, &ru.Icon,
			&exists, &p.UserID, &p.ShopID, &p.Title, &p.Images, &p.Content, &p.Liked, &p.Comments, &p.CommentPolicy, &pCreated, &pUpdated,
			&p.QuoteOf, &p.QuotePolicy, &p.Reposts, &p.Quotes, &hasAuthor, &a.NickName, &a.Icon, &liked,
			&e.ReposterShown, &e.AuthorFollowed, &e.Author.Muted, &e.Author.Blocked, &e.Author.BlocksViewer); err != nil {
			return nil, err
		}
		e.CreatedAt = time.UnixMilli(created)
		if hasReposter {
			ru.ID = e.UserID
			e.Reposter = &ru
		}
		if exists {
			p.ID = e.PostID
			p.CreatedAt, p.UpdatedAt = time.UnixMilli(pCreated), time.UnixMilli(pUpdated)
			e.Post = &feed.PostView{Post: &p, IsLike: liked}
			if hasAuthor {
				a.ID = p.UserID
				e.Post.Author = &a
			}
		}
		out[e.ID] = &e
	}
	return out, rows.Err()
}

// sharersQuery reads, for the posts among ?2 (a JSON array), the reposts
// the viewer ?1 is shown (its own, and those of the users it follows with
// show_reposts on and does not mute), with their reposters' names. Per
// post it reads the smaller side (the CROSS JOINs keep the post the outer
// loop, and the post's reposts count against the viewer's follows count
// decides before either inner loop runs): the post's reposts, each
// checked against the viewer's follows; or the viewer's follows (read
// once, when a post first needs them), each probed for a repost of the
// post (reposts' unique (user_id, post_id)).
const sharersQuery = `WITH k AS (SELECT coalesce((SELECT followee FROM users WHERE id = ?1), 0) + 1 AS n)
	SELECT x.post_id, x.id, x.user_id, x.created_at, coalesce(u.nick_name, ''), coalesce(u.icon, '')
	FROM k CROSS JOIN posts ps CROSS JOIN reposts x LEFT JOIN users u ON u.id = x.user_id
	WHERE ps.id IN (SELECT value FROM json_each(?2)) AND ps.reposts <= k.n AND x.post_id = ps.id
		AND (x.user_id = ?1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = ?1 AND f.followee_id = x.user_id AND f.show_reposts <> 0))
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = ?1 AND m.muted_id = x.user_id)
	UNION ALL
	SELECT x.post_id, x.id, x.user_id, x.created_at, coalesce(u.nick_name, ''), coalesce(u.icon, '')
	FROM k CROSS JOIN posts ps CROSS JOIN reposts x LEFT JOIN users u ON u.id = x.user_id
	WHERE ps.id IN (SELECT value FROM json_each(?2)) AND ps.reposts > k.n AND x.post_id = ps.id
		AND x.user_id IN (SELECT followee_id FROM follows WHERE follower_id = ?1 AND show_reposts <> 0 UNION ALL SELECT ?1)
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = ?1 AND m.muted_id = x.user_id)`

// Sharers implements feed.RepostStore with sharersQuery.
func (db *DB) Sharers(ctx context.Context, viewerID int64, postIDs []int64) (map[int64]*feed.Sharers, error) {
	out := map[int64]*feed.Sharers{}
	if len(postIDs) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, sharersQuery, viewerID, idList(postIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r feed.Repost
		var created int64
		u := &feed.User{}
		if err := rows.Scan(&r.PostID, &r.ID, &r.UserID, &created, &u.NickName, &u.Icon); err != nil {
			return nil, err
		}
		r.CreatedAt = time.UnixMilli(created)
		u.ID = r.UserID
		feed.AddSharer(out, viewerID, r, u)
	}
	return out, rows.Err()
}

// PurgeReposts implements feed.RepostStore: one transaction, an index
// range of reposts_post.
func (db *DB) PurgeReposts(ctx context.Context, postID int64, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		if err := postExists(ctx, tx, postID); err == nil {
			return nil
		} else if feed.ErrorCode(err) != feed.ENOTFOUND {
			return err
		}
		rows, err := tx.QueryContext(ctx, `DELETE FROM reposts WHERE id IN (SELECT id FROM reposts WHERE post_id = ? ORDER BY created_at, id LIMIT ?)
			RETURNING id, user_id, created_at`, postID, limit)
		if err != nil {
			return err
		}
		var jobs []feed.Job
		for rows.Next() {
			var j feed.RemoveJob
			if err := rows.Scan(&j.PostID, &j.AuthorID, &j.Score); err != nil {
				rows.Close()
				return err
			}
			jobs = append(jobs, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		n = len(jobs)
		if n == 0 {
			return nil
		}
		return db.enqueue(ctx, tx, jobs...)
	})
	return n, err
}

// SetShowReposts implements feed.RepostStore.
func (db *DB) SetShowReposts(ctx context.Context, followerID, followeeID int64, show bool) error {
	res, err := db.exec(ctx, `UPDATE follows SET show_reposts = ? WHERE follower_id = ? AND followee_id = ?`, show, followerID, followeeID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return feed.Errorf(feed.ENOTFOUND, "you do not follow this user")
	}
	return nil
}

// SetQuotePolicy implements feed.RepostStore.
func (db *DB) SetQuotePolicy(ctx context.Context, postID, userID int64, p feed.QuotePolicy, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var author int64
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM posts WHERE id = ?`, postID).Scan(&author)
		if errors.Is(err, sql.ErrNoRows) {
			return feed.ErrNotFound("post")
		} else if err != nil {
			return err
		} else if author != userID {
			return feed.ErrNotQuotePolicySetter
		}
		_, err = tx.ExecContext(ctx, `UPDATE posts SET quote_policy = ?, updated_at = ? WHERE id = ?`, int(p), ms(now), postID)
		return err
	})
}

// Reposters implements feed.RankStore: per user and post, a probe of
// reposts' unique (user_id, post_id).
func (db *DB) Reposters(ctx context.Context, userIDs, postIDs []int64, since time.Time) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	if len(userIDs) == 0 || len(postIDs) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, `SELECT r.post_id, r.user_id FROM json_each(?1) u CROSS JOIN json_each(?3) p
		JOIN reposts r ON r.user_id = u.value AND r.post_id = p.value WHERE r.created_at >= ?2`,
		idList(userIDs), ms(since), idList(postIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var post, user int64
		if err := rows.Scan(&post, &user); err != nil {
			return nil, err
		}
		out[post] = append(out[post], user)
	}
	return out, rows.Err()
}
