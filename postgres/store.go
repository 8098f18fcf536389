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

// Compile-time checks: DB implements every store of the domain.
var (
	_ feed.UserStore   = (*DB)(nil)
	_ feed.AuthStore   = (*DB)(nil)
	_ feed.PostStore   = (*DB)(nil)
	_ feed.FollowStore = (*DB)(nil)
	_ feed.SocialStore = (*DB)(nil)
)

func ms(t time.Time) int64 { return t.UnixMilli() }

// ---- users

const userCols = `id, mode, active_at, coalesce(phone, ''), nick_name, icon, city, introduce, fans, followee, created_at`

func scanUser(row pgx.Row) (*feed.User, error) {
	var u feed.User
	var mode int16
	var active, created int64
	if err := row.Scan(&u.ID, &mode, &active, &u.Phone, &u.NickName, &u.Icon, &u.City, &u.Introduce, &u.Fans, &u.Followee, &created); err != nil {
		return nil, err
	}
	u.Mode = feed.Mode(mode)
	u.ActiveAt, u.CreatedAt = time.UnixMilli(active), time.UnixMilli(created)
	return &u, nil
}

// FindOrCreateUser implements feed.UserStore. Concurrent first logins of
// one phone create one user: the loser of the insert race reads the winner's.
func (db *DB) FindOrCreateUser(ctx context.Context, phone, nickName string, now time.Time) (*feed.User, error) {
	const byPhone = `SELECT ` + userCols + ` FROM users WHERE phone = $1`
	u, err := scanUser(db.Pool.QueryRow(ctx, byPhone, phone))
	if !errors.Is(err, pgx.ErrNoRows) {
		return u, err
	}
	u, err = scanUser(db.Pool.QueryRow(ctx, `INSERT INTO users (phone, nick_name, created_at, active_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (phone) DO NOTHING RETURNING `+userCols, phone, nickName, ms(now)))
	if !errors.Is(err, pgx.ErrNoRows) {
		return u, err
	}
	// A concurrent login inserted it after our first read; this statement's
	// snapshot sees that committed row.
	return scanUser(db.Pool.QueryRow(ctx, byPhone, phone))
}

// User implements feed.UserStore.
func (db *DB) User(ctx context.Context, id int64) (*feed.User, error) {
	u, err := scanUser(db.Pool.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, feed.ErrNotFound("user")
	}
	return u, err
}

// Users implements feed.UserStore.
func (db *DB) Users(ctx context.Context, ids []int64) (map[int64]*feed.User, error) {
	out := make(map[int64]*feed.User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+userCols+` FROM users WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	users, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*feed.User, error) { return scanUser(row) })
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		out[u.ID] = u
	}
	return out, nil
}

// ---- posts and likes

const postCols = `id, user_id, shop_id, title, images, content, liked, comments, comment_policy, created_at, updated_at, coalesce(foreign_id, ''),
	quote_of, quote_policy, reposts, quotes`

func scanPost(row pgx.Row) (*feed.Post, error) {
	var p feed.Post
	var created, updated int64
	if err := row.Scan(&p.ID, &p.UserID, &p.ShopID, &p.Title, &p.Images, &p.Content, &p.Liked, &p.Comments, &p.CommentPolicy, &created, &updated, &p.ForeignID,
		&p.QuoteOf, &p.QuotePolicy, &p.Reposts, &p.Quotes); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return &p, nil
}

func scanPosts(rows pgx.Rows, err error) ([]*feed.Post, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*feed.Post, error) { return scanPost(row) })
}

func scanIDs(rows pgx.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// CreatePost implements feed.PostStore.
func (db *DB) CreatePost(ctx context.Context, p *feed.Post) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var quoted int64 // the quoted post's author
		if p.QuoteOf != 0 {
			var err error
			if quoted, err = quotablePost(ctx, tx, p.QuoteOf, p.UserID); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO posts (user_id, shop_id, title, images, content, comment_policy, created_at, updated_at, quote_of, quote_policy)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			p.UserID, p.ShopID, p.Title, p.Images, p.Content, int16(p.CommentPolicy), ms(p.CreatedAt), ms(p.UpdatedAt), p.QuoteOf, int16(p.QuotePolicy)).Scan(&p.ID)
		if err != nil {
			return err
		}
		if p.QuoteOf != 0 {
			// The quoted post's row before the notification group's, as
			// likes do (likeNotified).
			if _, err := tx.Exec(ctx, `UPDATE posts SET quotes = quotes + 1 WHERE id = $1`, p.QuoteOf); err != nil {
				return err
			}
			if err := db.notifyAdd(ctx, tx, quoted, feed.NotifyQuote, p.ID, p.UserID, "", p.CreatedAt); err != nil {
				return err
			}
		}
		if err := linkMedia(ctx, tx, p.ID, p.UserID, p.MediaIDs); err != nil {
			return err
		}
		return db.enqueue(ctx, tx, feed.FanoutJob{PostID: p.ID, AuthorID: p.UserID, Score: p.Score()})
	})
}

// CreateForeignPost implements feed.PostStore: the insert does nothing
// when the foreign id is taken (posts_foreign_id; a concurrent insert of
// the same id waits for the first to commit, then does nothing), and the
// post found then is the one returned.
func (db *DB) CreateForeignPost(ctx context.Context, p *feed.Post) (bool, error) {
	created := false
	err := db.tx(ctx, func(tx pgx.Tx) error {
		created = false
		err := tx.QueryRow(ctx, `INSERT INTO posts (user_id, shop_id, title, images, content, comment_policy, created_at, updated_at, foreign_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (foreign_id) WHERE foreign_id IS NOT NULL DO NOTHING RETURNING id`,
			p.UserID, p.ShopID, p.Title, p.Images, p.Content, int16(p.CommentPolicy), ms(p.CreatedAt), ms(p.UpdatedAt), p.ForeignID).Scan(&p.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			first, err := scanPost(tx.QueryRow(ctx, `SELECT `+postCols+` FROM posts WHERE foreign_id = $1`, p.ForeignID))
			if err != nil {
				return err
			}
			*p = *first
			return nil
		} else if err != nil {
			return err
		}
		created = true
		return db.enqueue(ctx, tx, feed.FanoutJob{PostID: p.ID, AuthorID: p.UserID, Score: p.Score()})
	})
	return created, err
}

// PostByForeignID implements feed.PostStore.
func (db *DB) PostByForeignID(ctx context.Context, foreignID string) (*feed.Post, error) {
	p, err := scanPost(db.Pool.QueryRow(ctx, `SELECT `+postCols+` FROM posts WHERE foreign_id = $1`, foreignID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, feed.ErrNotFound("post")
	}
	return p, err
}

// Post implements feed.PostStore.
func (db *DB) Post(ctx context.Context, id int64) (*feed.Post, error) {
	p, err := scanPost(db.Pool.QueryRow(ctx, `SELECT `+postCols+` FROM posts WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, feed.ErrNotFound("post")
	}
	return p, err
}

// Posts implements feed.PostStore.
func (db *DB) Posts(ctx context.Context, ids []int64) (map[int64]*feed.Post, error) {
	out := make(map[int64]*feed.Post, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	posts, err := scanPosts(db.Pool.Query(ctx, `SELECT `+postCols+` FROM posts WHERE id = ANY($1)`, ids))
	for _, p := range posts {
		out[p.ID] = p
	}
	return out, err
}

// DeletePost implements feed.PostStore. The post's row is locked first, so
// a concurrent delete of the same post waits and then finds nothing (one
// RemoveJob), and a concurrent ToggleLike (which holds a key-share lock on
// the row) either finishes before the likes are deleted or finds no post.
func (db *DB) DeletePost(ctx context.Context, id, userID int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var author, created, quoteOf int64
		err := tx.QueryRow(ctx, `SELECT user_id, created_at, quote_of FROM posts WHERE id = $1 FOR UPDATE`, id).Scan(&author, &created, &quoteOf)
		if errors.Is(err, pgx.ErrNoRows) {
			return feed.ErrNotFound("post")
		} else if err != nil {
			return err
		} else if author != userID {
			return feed.Errorf(feed.EFORBIDDEN, "only the author may delete this post")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM likes WHERE post_id = $1`, id); err != nil {
			return err
		}
		if err := unlinkMedia(ctx, tx, id, time.Now()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM posts WHERE id = $1`, id); err != nil {
			return err
		}
		if err := db.notifyForgetPost(ctx, tx, author, id); err != nil {
			return err
		}
		if err := db.unquote(ctx, tx, quoteOf, id); err != nil {
			return err
		}
		return db.enqueue(ctx, tx, feed.RemoveJob{PostID: id, AuthorID: author, Score: created})
	})
}

// PostsOfUser implements feed.PostStore.
func (db *DB) PostsOfUser(ctx context.Context, userID int64, offset, limit int) ([]*feed.Post, error) {
	return scanPosts(db.Pool.Query(ctx, `SELECT `+postCols+` FROM posts WHERE user_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, userID, limit, offset))
}

// PostsOfUserWithin implements feed.PostStore on the posts_user index.
func (db *DB) PostsOfUserWithin(ctx context.Context, userID int64, b feed.Bound, limit int) ([]*feed.Post, error) {
	return scanPosts(db.Pool.Query(ctx, `SELECT `+postCols+` FROM posts WHERE user_id = $1
		AND created_at <= $2 AND (created_at < $2 OR $3::bigint = 0 OR id < $3)
		ORDER BY created_at DESC, id DESC LIMIT $4`, userID, b.Max, b.BeforeID, limit))
}

// HotPosts implements feed.PostStore.
func (db *DB) HotPosts(ctx context.Context, offset, limit int) ([]*feed.Post, error) {
	return scanPosts(db.Pool.Query(ctx, `SELECT `+postCols+` FROM posts
		ORDER BY liked DESC, created_at DESC, id DESC LIMIT $1 OFFSET $2`, limit, offset))
}

// toggleAttempts bounds ToggleLike's retries; each retry means another
// toggle of the same like committed in between, so two are enough in
// practice.
const toggleAttempts = 8

// ToggleLike implements feed.PostStore.
//
// The post's row is held with FOR KEY SHARE: likers do not block each other
// (the counter update takes a lock that does not conflict with it), but
// DeletePost's FOR UPDATE waits for them, so no like outlives its post. The
// like row itself decides the direction: only a toggle whose DELETE or
// INSERT changed a row moves the counter, so concurrent toggles by one user
// never double count.
func (db *DB) ToggleLike(ctx context.Context, postID, userID int64, now time.Time) (bool, error) {
	var liked bool
	err := db.tx(ctx, func(tx pgx.Tx) error {
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		for range toggleAttempts {
			tag, err := tx.Exec(ctx, `DELETE FROM likes WHERE post_id = $1 AND user_id = $2`, postID, userID)
			if err != nil {
				return err
			}
			delta := -1
			liked = false
			if tag.RowsAffected() == 0 {
				// Under READ COMMITTED each statement sees what committed
				// before it: if a concurrent toggle inserted the like after
				// our DELETE, the INSERT does nothing and we try again.
				tag, err = tx.Exec(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES ($1, $2, $3, $4)
					ON CONFLICT (post_id, user_id) DO NOTHING`, postID, userID, ms(now), author)
				if err != nil {
					return err
				}
				if tag.RowsAffected() == 0 {
					continue
				}
				delta, liked = 1, true
			}
			// The post's row before the notification group's, in every
			// transaction that takes both (likeNotified).
			return db.likeNotified(ctx, tx, author, postID, userID, liked, delta, now)
		}
		return errors.New("postgres: toggle like: too many concurrent toggles")
	})
	return liked, err
}

// SetLike implements feed.PostStore. The post's row is held with FOR KEY
// SHARE, as in ToggleLike (likers do not block each other; DeletePost waits
// for them). Under READ COMMITTED a concurrent INSERT of the same like waits
// for the first and then does nothing, a concurrent DELETE finds no row:
// only the statement that changed the like row moves the count.
func (db *DB) SetLike(ctx context.Context, postID, userID int64, like bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		var tag pgconn.CommandTag
		delta := 1
		if like {
			tag, err = tx.Exec(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES ($1, $2, $3, $4)
				ON CONFLICT (post_id, user_id) DO NOTHING`, postID, userID, ms(now), author)
		} else {
			delta = -1
			tag, err = tx.Exec(ctx, `DELETE FROM likes WHERE post_id = $1 AND user_id = $2`, postID, userID)
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err // already so: the count stays
		}
		return db.likeNotified(ctx, tx, author, postID, userID, like, delta, now)
	})
}

// likeNotified moves the post's like count by delta, then records the
// (un)like in the author's notifications; a post deleted meanwhile undoes
// the like (ENOTFOUND). Every transaction that locks both
// a post's row and a notification group's locks the post's first (here,
// DeletePost), so that likes, unlikes and deletions of one post cannot
// wait for each other in a cycle.
func (db *DB) likeNotified(ctx context.Context, tx pgx.Tx, author, postID, userID int64, liked bool, delta int, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE posts SET liked = liked + $1 WHERE id = $2`, delta, postID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		// DeletePost committed since likablePost (its row lock held an
		// older version of the row): the like goes with the post.
		return feed.ErrNotFound("post")
	}
	return db.notifyLike(ctx, tx, author, postID, userID, liked, now)
}

// Likers implements feed.PostStore.
func (db *DB) Likers(ctx context.Context, postID int64, limit int) ([]int64, error) {
	return scanIDs(db.Pool.Query(ctx, `SELECT user_id FROM likes WHERE post_id = $1 ORDER BY id LIMIT $2`, postID, limit))
}

// LikedBy implements feed.PostStore.
func (db *DB) LikedBy(ctx context.Context, userID int64, postIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if len(postIDs) == 0 {
		return out, nil
	}
	ids, err := scanIDs(db.Pool.Query(ctx, `SELECT post_id FROM likes WHERE user_id = $1 AND post_id = ANY($2)`, userID, postIDs))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// FeedEntries implements feed.PostStore. Each followed author contributes at
// most offset+limit of their newest posts and of their newest reposts (an
// index range scan each, through LATERAL), so the merge stays bounded
// however much they posted.
func (db *DB) FeedEntries(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	return scanEntries(db.Pool.Query(ctx, `SELECT p.created_at, p.id
		FROM (SELECT followee_id AS author FROM follows WHERE follower_id = $1 UNION ALL SELECT $1) a
		CROSS JOIN LATERAL (SELECT created_at, id FROM posts WHERE user_id = a.author
			AND created_at <= $2 AND (created_at < $2 OR $5::bigint = 0 OR id < $5)
			ORDER BY created_at DESC, id DESC LIMIT $3::bigint + $4::bigint) p
		UNION ALL
		SELECT r.created_at, r.id
		FROM (SELECT followee_id AS author FROM follows WHERE follower_id = $1 UNION ALL SELECT $1) a
		CROSS JOIN LATERAL (SELECT created_at, id FROM reposts WHERE user_id = a.author
			AND created_at <= $2 AND (created_at < $2 OR $5::bigint = 0 OR id < $5)
			ORDER BY created_at DESC, id DESC LIMIT $3::bigint + $4::bigint) r
		ORDER BY 1 DESC, 2 DESC LIMIT $3 OFFSET $4`, userID, b.Max, limit, offset, b.BeforeID))
}

// ---- follows

// SetFollow implements feed.FollowStore. A follow between users where
// either blocks the other is refused; an unfollow never is.
//
// The two users' rows are locked first, in id order (lockPair), as SetBlock
// locks them: a follow racing a block of the same pair waits for it and then
// sees the block, so no follow outlives a block; A following B while B
// follows A cannot deadlock; and every writer of follows locks the users
// before the follow row. Only a call whose INSERT or DELETE changed the
// follow row moves the counters and enqueues a feed.FollowJob, in the same
// transaction, so concurrent calls cannot double count.
func (db *DB) SetFollow(ctx context.Context, followerID, followeeID int64, follow bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPair(ctx, tx, followerID, followeeID); err != nil {
			return err
		}
		job, err := db.setFollow(ctx, tx, followerID, followeeID, follow, now)
		if err != nil || job == nil {
			return err
		}
		return db.enqueue(ctx, tx, job)
	})
}

// setFollow is SetFollow in tx, once the users are locked, but for the
// job, which it returns for the caller to enqueue (nil when the follow did
// not change).
func (db *DB) setFollow(ctx context.Context, tx pgx.Tx, followerID, followeeID int64, follow bool, now time.Time) (feed.Job, error) {
	var tag pgconn.CommandTag
	var err error
	delta := 1
	if follow {
		if blocked, err := eitherBlocks(ctx, tx, followerID, followeeID); err != nil {
			return nil, err
		} else if blocked {
			return nil, errFollowBlocked
		}
		// pull copies the followee's mode, read under lockPair's lock
		// (follows.pull, migrations/001_baseline.sql).
		tag, err = tx.Exec(ctx, `INSERT INTO follows (follower_id, followee_id, created_at, pull)
			SELECT $1, $2, $3, mode <> 0 FROM users WHERE id = $2 ON CONFLICT DO NOTHING`, followerID, followeeID, ms(now))
	} else {
		delta = -1
		tag, err = tx.Exec(ctx, `DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2`, followerID, followeeID)
	}
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, nil // already in that state
	}
	if err := addFollowCounts(ctx, tx, followerID, followeeID, delta); err != nil {
		return nil, err
	}
	if err := db.notifyFollow(ctx, tx, followerID, followeeID, follow, now); err != nil {
		return nil, err
	}
	return feed.FollowJob{FollowerID: followerID, FolloweeID: followeeID, Follow: follow}, nil
}

// SetFollows implements feed.FollowStore: one transaction that first locks
// every user of the changes in id order (as lockPair does for one pair, so
// that batches and single follows never deadlock), then makes each change
// in a savepoint of its own, and enqueues the jobs of the changes made
// together at the end (one insert).
func (db *DB) SetFollows(ctx context.Context, changes []feed.FollowChange, now time.Time) ([]error, error) {
	errs := make([]error, len(changes))
	ids := make([]int64, 0, 2*len(changes))
	for _, c := range changes {
		ids = append(ids, c.FollowerID, c.FolloweeID)
	}
	err := db.tx(ctx, func(tx pgx.Tx) error {
		clear(errs)
		found, err := scanIDs(tx.Query(ctx, `SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, ids))
		if err != nil {
			return err
		}
		var jobs []feed.Job
		for i, c := range changes {
			if _, ok := slices.BinarySearch(found, c.FolloweeID); !ok {
				errs[i] = feed.ErrNotFound("user")
				continue
			}
			if _, err := tx.Exec(ctx, `SAVEPOINT follow`); err != nil {
				return err
			}
			job, err := db.setFollow(ctx, tx, c.FollowerID, c.FolloweeID, c.Follow, now)
			if job != nil {
				jobs = append(jobs, job)
			}
			if err != nil {
				if feed.ErrorCode(err) == feed.EINTERNAL {
					return err // a fault of the store, not of this change
				}
				errs[i] = err
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT follow`); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT follow`); err != nil {
				return err
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return db.enqueue(ctx, tx, jobs...)
	})
	return errs, err
}

// errFollowBlocked refuses a follow between users where one blocks the other.
var errFollowBlocked = feed.Errorf(feed.EFORBIDDEN, "you cannot follow this user")

// lockPair locks the rows of users actor and target (FOR NO KEY UPDATE: the
// lock the counter updates take anyway, which does not block inserts of rows
// referencing the users) in id order, and returns ENOTFOUND if target does
// not exist. Everything that changes follows or blocks takes it first.
func lockPair(ctx context.Context, tx pgx.Tx, actor, target int64) error {
	ids, err := scanIDs(tx.Query(ctx, `SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, []int64{actor, target}))
	if err != nil {
		return err
	}
	if !slices.Contains(ids, target) {
		return feed.ErrNotFound("user")
	}
	return nil
}

// eitherBlocks reports whether a blocks b or b blocks a: two primary-key
// lookups.
func eitherBlocks(ctx context.Context, tx pgx.Tx, a, b int64) (bool, error) {
	var blocked bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blocks WHERE user_id = $1 AND blocked_id = $2)
		OR EXISTS (SELECT 1 FROM blocks WHERE user_id = $2 AND blocked_id = $1)`, a, b).Scan(&blocked)
	return blocked, err
}

// addFollowCounts moves the counters of one follow that was added (delta 1)
// or removed (delta -1). The caller holds both rows' locks (lockPair).
func addFollowCounts(ctx context.Context, tx pgx.Tx, followerID, followeeID int64, delta int) error {
	if _, err := tx.Exec(ctx, `UPDATE users SET followee = followee + $1 WHERE id = $2`, delta, followerID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE users SET fans = fans + $1 WHERE id = $2`, delta, followeeID)
	return err
}

// IsFollowing implements feed.FollowStore.
func (db *DB) IsFollowing(ctx context.Context, followerID, followeeID int64) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = $1 AND followee_id = $2)`, followerID, followeeID).Scan(&ok)
	return ok, err
}

// CommonFollowees implements feed.FollowStore.
func (db *DB) CommonFollowees(ctx context.Context, a, b int64, limit int) ([]int64, error) {
	return scanIDs(db.Pool.Query(ctx, `SELECT x.followee_id FROM follows x
		JOIN follows y ON y.follower_id = $1 AND y.followee_id = x.followee_id
		WHERE x.follower_id = $2 ORDER BY x.followee_id LIMIT $3`, b, a, limit))
}

// NthFollowerAfter implements feed.FollowStore: the OFFSET walks the index
// follows_followee (an index-only scan) without sending rows.
func (db *DB) NthFollowerAfter(ctx context.Context, followeeID, after int64, n int) (int64, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `SELECT follower_id FROM follows WHERE followee_id = $1 AND follower_id > $2
		ORDER BY follower_id LIMIT 1 OFFSET $3`, followeeID, after, n-1).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// FollowersAfter implements feed.FollowStore.
func (db *DB) FollowersAfter(ctx context.Context, followeeID, after int64, limit int) ([]int64, error) {
	return db.queryIDList(ctx, `SELECT follower_id AS id FROM follows WHERE followee_id = $1 AND follower_id > $2
		ORDER BY follower_id LIMIT $3`, followeeID, after, limit)
}

// likablePost locks post postID (FOR KEY SHARE) and its author's row (FOR
// SHARE, which waits for a SetBlock of the author in flight: it holds the
// row FOR NO KEY UPDATE), then refuses with "post not found" when there is
// no such post or its author blocks userID. So a like never lands after
// the block that removed the liker's likes.
func likablePost(ctx context.Context, tx pgx.Tx, postID, userID int64) (author int64, err error) {
	err = tx.QueryRow(ctx, `SELECT p.user_id FROM posts p JOIN users u ON u.id = p.user_id WHERE p.id = $1 FOR KEY SHARE OF p FOR SHARE OF u`, postID).Scan(&author)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, feed.ErrNotFound("post")
	} else if err != nil {
		return 0, err
	}
	var blocked bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blocks WHERE user_id = $1 AND blocked_id = $2)`, author, userID).Scan(&blocked); err != nil {
		return 0, err
	} else if blocked {
		return 0, feed.ErrNotFound("post")
	}
	return author, nil
}
