package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.RepostStore = (*DB)(nil)

// SetRepost implements feed.RepostStore. The post's row is held with FOR
// KEY SHARE and its author's with FOR SHARE (likablePost), as a like holds
// them: reposters do not block each other, DeletePost waits for them, and
// a repost never lands after the block that removed the reposter's
// reposts. Under READ COMMITTED a concurrent INSERT of the same repost
// waits for the first and then does nothing, a concurrent DELETE finds no
// row: only the statement that changed the repost row moves the count.
func (db *DB) SetRepost(ctx context.Context, userID, postID int64, repost bool, now time.Time) (changed bool, err error) {
	err = db.tx(ctx, func(tx pgx.Tx) error {
		changed = false // fn may run again (DB.tx)
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		var id, created int64
		delta := 1
		if repost {
			created = ms(now)
			err = tx.QueryRow(ctx, `INSERT INTO reposts (user_id, post_id, created_at) VALUES ($1, $2, $3)
				ON CONFLICT (user_id, post_id) DO NOTHING RETURNING id`, userID, postID, created).Scan(&id)
		} else {
			delta = -1
			err = tx.QueryRow(ctx, `DELETE FROM reposts WHERE user_id = $1 AND post_id = $2 RETURNING id, created_at`, userID, postID).Scan(&id, &created)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // already so: the count stays
		} else if err != nil {
			return err
		}
		// The post's row before the notification group's (likeNotified).
		if _, err := tx.Exec(ctx, `UPDATE posts SET reposts = reposts + $1 WHERE id = $2`, delta, postID); err != nil {
			return err
		}
		job := feed.Job(feed.FanoutJob{PostID: id, AuthorID: userID, Score: created})
		if repost {
			err = db.notifyAdd(ctx, tx, author, feed.NotifyRepost, postID, userID, "", now)
		} else {
			job = feed.RemoveJob{PostID: id, AuthorID: userID, Score: created}
			err = db.notifyRetract(ctx, tx, author, feed.NotifyRepost, postID, userID)
		}
		if err != nil {
			return err
		}
		changed = true
		return db.enqueue(ctx, tx, job)
	})
	return changed && err == nil, err
}

// unrepostAuthor removes reposterID's reposts of authorID's posts (a
// block, which holds both users' rows), counts in step, and returns their
// entries' removal jobs.
func (db *DB) unrepostAuthor(ctx context.Context, tx pgx.Tx, reposterID, authorID int64) ([]feed.Job, error) {
	rows, err := tx.Query(ctx, `DELETE FROM reposts WHERE user_id = $1 AND post_id IN (SELECT id FROM posts WHERE user_id = $2)
		RETURNING id, post_id, created_at`, reposterID, authorID)
	if err != nil {
		return nil, err
	}
	var jobs []feed.Job
	var posts []int64
	var id, post, created int64
	_, err = pgx.ForEachRow(rows, []any{&id, &post, &created}, func() error {
		jobs = append(jobs, feed.RemoveJob{PostID: id, AuthorID: reposterID, Score: created})
		posts = append(posts, post)
		return nil
	})
	if err != nil || len(posts) == 0 {
		return jobs, err
	}
	_, err = tx.Exec(ctx, `UPDATE posts SET reposts = reposts - 1 WHERE id = ANY($1)`, sortedIDs(posts))
	return jobs, err
}

// quotablePost locks post postID that userID quotes, as likablePost does
// (so no quote lands after a block of its author, nor after the post's
// deletion), and returns its author, or refuses: "post not found" when
// there is no such post or its author blocks userID, the post's quote
// policy otherwise.
func quotablePost(ctx context.Context, tx pgx.Tx, postID, userID int64) (int64, error) {
	author, err := likablePost(ctx, tx, postID, userID)
	if err != nil || author == userID {
		return author, err
	}
	var policy feed.QuotePolicy
	var follows bool
	if err := tx.QueryRow(ctx, `SELECT quote_policy, EXISTS (SELECT 1 FROM follows WHERE follower_id = $2 AND followee_id = $3)
		FROM posts WHERE id = $1`, postID, author, userID).Scan(&policy, &follows); err != nil {
		return 0, err
	}
	switch {
	case policy == feed.QuotesNobody:
		return 0, feed.ErrQuotesOff
	case policy == feed.QuotesFollowing && !follows:
		return 0, feed.ErrQuotesFollowing
	}
	return author, nil
}

// unquote is DeletePost's step for a quote (quoteOf not 0): the quoted
// post's count moves, and its author's notification of the quote goes.
func (db *DB) unquote(ctx context.Context, tx pgx.Tx, quoteOf, quoteID int64) error {
	if quoteOf == 0 {
		return nil
	}
	var author int64
	err := tx.QueryRow(ctx, `UPDATE posts SET quotes = quotes - 1 WHERE id = $1 RETURNING user_id`, quoteOf).Scan(&author)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the quoted post is gone
	} else if err != nil {
		return err
	}
	gids, err := scanIDs(tx.Query(ctx, `DELETE FROM notify_groups WHERE user_id = $1 AND kind = $2 AND target_id = $3 RETURNING id`,
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
	rows, err := db.Pool.Query(ctx, `SELECT id, user_id, post_id, created_at FROM reposts WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	var r feed.Repost
	var created int64
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.UserID, &r.PostID, &created}, func() error {
		r.CreatedAt = time.UnixMilli(created)
		c := r
		out[r.ID] = &c
		return nil
	})
	return out, err
}

// repostEntriesQuery reads the reposts among $2 for the viewer $1: each
// repost, its reposter's name, the post it shows with its author and the
// viewer's like (exists false: gone), and the facts of feed.RepostEntry.
// Every lookup is by primary key or index.
const repostEntriesQuery = `SELECT r.id, r.user_id, r.post_id, r.created_at, ru.id IS NOT NULL, coalesce(ru.nick_name, ''), coalesce(ru.icon, ''),
	p.id IS NOT NULL, coalesce(p.user_id, 0), coalesce(p.shop_id, 0), coalesce(p.title, ''), coalesce(p.images, ''), coalesce(p.content, ''),
	coalesce(p.liked, 0), coalesce(p.comments, 0), coalesce(p.comment_policy, 0), coalesce(p.created_at, 0), coalesce(p.updated_at, 0),
	coalesce(p.quote_of, 0), coalesce(p.quote_policy, 0), coalesce(p.reposts, 0), coalesce(p.quotes, 0),
	u.id IS NOT NULL, coalesce(u.nick_name, ''), coalesce(u.icon, ''),
	EXISTS (SELECT 1 FROM likes l WHERE l.user_id = $1 AND l.post_id = r.post_id),
	r.user_id = $1 OR (EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = r.user_id AND f.show_reposts)
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = r.user_id)),
	coalesce(p.user_id = $1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = p.user_id), false),
	EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = p.user_id),
	EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = $1 AND b.blocked_id = p.user_id),
	EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = $1)
	FROM reposts r LEFT JOIN users ru ON ru.id = r.user_id LEFT JOIN posts p ON p.id = r.post_id LEFT JOIN users u ON u.id = p.user_id
	WHERE r.id = ANY($2)`

// RepostEntries implements feed.RepostStore with repostEntriesQuery.
func (db *DB) RepostEntries(ctx context.Context, viewerID int64, ids []int64) (map[int64]*feed.RepostEntry, error) {
	out := map[int64]*feed.RepostEntry{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, repostEntriesQuery, viewerID, ids)
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

// sharersQuery reads, for the posts among $2, the reposts the viewer $1
// is shown (its own, and those of the users it follows with show_reposts
// on and does not mute), with their reposters' names. Per post (LATERAL,
// each branch under a one-time filter of the post's reposts count against
// the viewer's follows count) it reads the smaller side: the post's
// reposts, each checked against the viewer's follows; or the viewer's
// follows, each probed for a repost of the post (reposts' unique
// (user_id, post_id)).
const sharersQuery = `WITH k AS (SELECT coalesce((SELECT followee FROM users WHERE id = $1), 0) + 1 AS n)
	SELECT s.post_id, s.id, s.user_id, s.created_at, coalesce(u.nick_name, ''), coalesce(u.icon, '')
	FROM k CROSS JOIN (SELECT id, reposts FROM posts WHERE id = ANY($2)) ps
	CROSS JOIN LATERAL (
		SELECT x.id, x.user_id, x.post_id, x.created_at FROM reposts x
		WHERE ps.reposts <= k.n AND x.post_id = ps.id
			AND (x.user_id = $1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = x.user_id AND f.show_reposts))
			AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = x.user_id)
		UNION ALL
		SELECT x.id, x.user_id, x.post_id, x.created_at
		FROM (SELECT followee_id AS u FROM follows WHERE follower_id = $1 AND show_reposts UNION ALL SELECT $1) fu
			JOIN reposts x ON x.user_id = fu.u AND x.post_id = ps.id
		WHERE ps.reposts > k.n
			AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = x.user_id)) s
	LEFT JOIN users u ON u.id = s.user_id`

// Sharers implements feed.RepostStore with sharersQuery.
func (db *DB) Sharers(ctx context.Context, viewerID int64, postIDs []int64) (map[int64]*feed.Sharers, error) {
	out := map[int64]*feed.Sharers{}
	if len(postIDs) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, sharersQuery, viewerID, postIDs)
	if err != nil {
		return nil, err
	}
	var r feed.Repost
	var created int64
	var nick, icon string
	_, err = pgx.ForEachRow(rows, []any{&r.PostID, &r.ID, &r.UserID, &created, &nick, &icon}, func() error {
		r.CreatedAt = time.UnixMilli(created)
		feed.AddSharer(out, viewerID, r, &feed.User{ID: r.UserID, NickName: nick, Icon: icon})
		return nil
	})
	return out, err
}

// PurgeReposts implements feed.RepostStore: one transaction, an index
// range of reposts_post.
func (db *DB) PurgeReposts(ctx context.Context, postID int64, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM posts WHERE id = $1)`, postID).Scan(&exists); err != nil || exists {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM reposts WHERE id IN (SELECT id FROM reposts WHERE post_id = $1 ORDER BY created_at, id LIMIT $2)
			RETURNING id, user_id, created_at`, postID, limit)
		if err != nil {
			return err
		}
		var jobs []feed.Job
		var j feed.RemoveJob
		if _, err := pgx.ForEachRow(rows, []any{&j.PostID, &j.AuthorID, &j.Score}, func() error {
			jobs = append(jobs, j)
			return nil
		}); err != nil {
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
	tag, err := db.Pool.Exec(ctx, `UPDATE follows SET show_reposts = $1 WHERE follower_id = $2 AND followee_id = $3`, show, followerID, followeeID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return feed.Errorf(feed.ENOTFOUND, "you do not follow this user")
	}
	return nil
}

// SetQuotePolicy implements feed.RepostStore.
func (db *DB) SetQuotePolicy(ctx context.Context, postID, userID int64, p feed.QuotePolicy, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var author int64
		err := tx.QueryRow(ctx, `SELECT user_id FROM posts WHERE id = $1 FOR NO KEY UPDATE`, postID).Scan(&author)
		if errors.Is(err, pgx.ErrNoRows) {
			return feed.ErrNotFound("post")
		} else if err != nil {
			return err
		} else if author != userID {
			return feed.ErrNotQuotePolicySetter
		}
		_, err = tx.Exec(ctx, `UPDATE posts SET quote_policy = $1, updated_at = $2 WHERE id = $3`, int16(p), ms(now), postID)
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
	rows, err := db.Pool.Query(ctx, `SELECT post_id, user_id FROM reposts
		WHERE user_id = ANY($1) AND post_id = ANY($3) AND created_at >= $2`, userIDs, ms(since), postIDs)
	if err != nil {
		return nil, err
	}
	var post, user int64
	_, err = pgx.ForEachRow(rows, []any{&post, &user}, func() error {
		out[post] = append(out[post], user)
		return nil
	})
	return out, err
}
