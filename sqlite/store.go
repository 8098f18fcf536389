package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

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

type scanner interface{ Scan(dest ...any) error }

func scanUser(s scanner) (*feed.User, error) {
	var u feed.User
	var mode, active, created int64
	if err := s.Scan(&u.ID, &mode, &active, &u.Phone, &u.NickName, &u.Icon, &u.City, &u.Introduce, &u.Fans, &u.Followee, &created); err != nil {
		return nil, err
	}
	u.Mode = feed.Mode(mode)
	u.ActiveAt, u.CreatedAt = time.UnixMilli(active), time.UnixMilli(created)
	return &u, nil
}

// FindOrCreateUser implements feed.UserStore.
func (db *DB) FindOrCreateUser(ctx context.Context, phone, nickName string, now time.Time) (*feed.User, error) {
	var u *feed.User
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (phone, nick_name, created_at, active_at) VALUES (?1, ?2, ?3, ?3) ON CONFLICT (phone) DO NOTHING`,
			phone, nickName, ms(now)); err != nil {
			return err
		}
		var err error
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE phone = ?`, phone))
		return err
	})
	return u, err
}

// User implements feed.UserStore.
func (db *DB) User(ctx context.Context, id int64) (*feed.User, error) {
	u, err := scanUser(db.readRow(ctx, `SELECT `+userCols+` FROM users WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := db.read(ctx, `SELECT `+userCols+` FROM users WHERE id IN (SELECT value FROM json_each(?))`, idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out[u.ID] = u
	}
	return out, rows.Err()
}

// ---- login codes and sessions

// SaveCode implements feed.AuthStore.
func (db *DB) SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var sent int64
		err := tx.QueryRowContext(ctx, `SELECT sent_at FROM login_codes WHERE phone = ?`, phone).Scan(&sent)
		if err == nil && now.Sub(time.UnixMilli(sent)) < resendAfter {
			return feed.ResendTooSoon(resendAfter, resendAfter-now.Sub(time.UnixMilli(sent)))
		} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Sweep a few codes that can no longer matter (expired and past
		// their resend window), so a flood of requests does not pile rows up.
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_codes WHERE phone IN (SELECT phone FROM login_codes WHERE expires_at <= ? AND sent_at <= ? LIMIT 100)`,
			ms(now), ms(now.Add(-resendAfter))); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO login_codes (phone, code_hash, sent_at, expires_at, tries) VALUES (?, ?, ?, ?, 0)
			ON CONFLICT (phone) DO UPDATE SET code_hash = excluded.code_hash, sent_at = excluded.sent_at, expires_at = excluded.expires_at, tries = 0`,
			phone, codeHash, ms(now), ms(now.Add(ttl)))
		return err
	})
}

// ConsumeCode implements feed.AuthStore.
func (db *DB) ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error {
	var refusal error
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var hash string
		var expires int64
		var tries int
		err := tx.QueryRowContext(ctx, `SELECT code_hash, expires_at, tries FROM login_codes WHERE phone = ?`, phone).Scan(&hash, &expires, &tries)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && (now.UnixMilli() >= expires || tries >= maxTries)) {
			refusal = feed.Errorf(feed.EINVALID, "the code has expired or was not requested; ask for a new code")
			return nil
		} else if err != nil {
			return err
		}
		if hash == codeHash {
			_, err = tx.ExecContext(ctx, `DELETE FROM login_codes WHERE phone = ?`, phone)
			return err
		}
		// A wrong try is counted (and committed) even though the login is
		// refused. The maxTries-th burns the code, whose row stays until
		// SaveCode replaces it, so that its resend wait holds.
		refusal = feed.Errorf(feed.EINVALID, "the code is wrong")
		_, err = tx.ExecContext(ctx, `UPDATE login_codes SET tries = tries + 1 WHERE phone = ?`, phone)
		return err
	})
	if err != nil {
		return err
	}
	return refusal
}

// CreateSession implements feed.AuthStore.
func (db *DB) CreateSession(ctx context.Context, tokenHash string, userID int64, now, expires time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Sweep a few sessions expired by the caller's clock (as Session
		// judges them), so the table does not grow forever.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions WHERE expires_at <= ? LIMIT 100)`, ms(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, expires_at) VALUES (?, ?, ?)`, tokenHash, userID, ms(expires))
		return err
	})
}

// sessionSlack is how stale an expiry may get before a read extends it: a
// session is extended at most once a minute, not on every request.
const sessionSlack = time.Minute

// Session implements feed.AuthStore.
func (db *DB) Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error) {
	var userID, expires int64
	err := db.readRow(ctx, `SELECT user_id, expires_at FROM sessions WHERE token_hash = ?`, tokenHash).Scan(&userID, &expires)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && expires <= ms(now)) {
		return 0, feed.Errorf(feed.EUNAUTHORIZED, "login required")
	} else if err != nil {
		return 0, err
	}
	if next := ms(now.Add(ttl)); next-expires >= sessionSlack.Milliseconds() {
		if _, err := db.exec(ctx, `UPDATE sessions SET expires_at = ? WHERE token_hash = ? AND expires_at < ?`, next, tokenHash, next); err != nil {
			return 0, err
		}
	}
	return userID, nil
}

// DeleteSession implements feed.AuthStore.
func (db *DB) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := db.exec(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return err
}

// ---- posts and likes

const postCols = `id, user_id, shop_id, title, images, content, liked, comments, comment_policy, created_at, updated_at, coalesce(foreign_id, ''),
	quote_of, quote_policy, reposts, quotes`

func scanPost(s scanner) (*feed.Post, error) {
	var p feed.Post
	var created, updated int64
	if err := s.Scan(&p.ID, &p.UserID, &p.ShopID, &p.Title, &p.Images, &p.Content, &p.Liked, &p.Comments, &p.CommentPolicy, &created, &updated, &p.ForeignID,
		&p.QuoteOf, &p.QuotePolicy, &p.Reposts, &p.Quotes); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return &p, nil
}

func scanPosts(rows *sql.Rows, err error) ([]*feed.Post, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*feed.Post{}
	for rows.Next() {
		p, err := scanPost(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (db *DB) enqueue(ctx context.Context, tx *sql.Tx, jobs ...feed.Job) error {
	if db.Enqueue == nil {
		return errors.New("sqlite: no job queue configured")
	}
	if err := db.Enqueue(ctx, tx, jobs...); err != nil {
		return err
	}
	prev, _ := db.enqueuedIn.LoadOrStore(tx, &[]feed.Job{})
	js := prev.(*[]feed.Job) // tx is used by one goroutine at a time
	*js = append(*js, jobs...)
	return nil
}

// CreatePost implements feed.PostStore.
func (db *DB) CreatePost(ctx context.Context, p *feed.Post) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var quoted int64 // the quoted post's author
		if p.QuoteOf != 0 {
			var err error
			if quoted, err = quotablePost(ctx, tx, p.QuoteOf, p.UserID); err != nil {
				return err
			}
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO posts (user_id, shop_id, title, images, content, comment_policy, created_at, updated_at, quote_of, quote_policy)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			p.UserID, p.ShopID, p.Title, p.Images, p.Content, int(p.CommentPolicy), ms(p.CreatedAt), ms(p.UpdatedAt), p.QuoteOf, int(p.QuotePolicy)).Scan(&p.ID)
		if err != nil {
			return err
		}
		if p.QuoteOf != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE posts SET quotes = quotes + 1 WHERE id = ?`, p.QuoteOf); err != nil {
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
// when the foreign id is taken (posts_foreign_id), and the post found
// then is the one returned; SQLite's one writer orders concurrent calls.
func (db *DB) CreateForeignPost(ctx context.Context, p *feed.Post) (bool, error) {
	created := false
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO posts (user_id, shop_id, title, images, content, comment_policy, created_at, updated_at, foreign_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (foreign_id) WHERE foreign_id IS NOT NULL DO NOTHING RETURNING id`,
			p.UserID, p.ShopID, p.Title, p.Images, p.Content, int(p.CommentPolicy), ms(p.CreatedAt), ms(p.UpdatedAt), p.ForeignID).Scan(&p.ID)
		if errors.Is(err, sql.ErrNoRows) {
			first, err := scanPost(tx.QueryRowContext(ctx, `SELECT `+postCols+` FROM posts WHERE foreign_id = ?`, p.ForeignID))
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
	p, err := scanPost(db.readRow(ctx, `SELECT `+postCols+` FROM posts WHERE foreign_id = ?`, foreignID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("post")
	}
	return p, err
}

// Post implements feed.PostStore.
func (db *DB) Post(ctx context.Context, id int64) (*feed.Post, error) {
	p, err := scanPost(db.readRow(ctx, `SELECT `+postCols+` FROM posts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	posts, err := scanPosts(db.read(ctx, `SELECT `+postCols+` FROM posts WHERE id IN (SELECT value FROM json_each(?))`, idList(ids)))
	for _, p := range posts {
		out[p.ID] = p
	}
	return out, err
}

// DeletePost implements feed.PostStore.
func (db *DB) DeletePost(ctx context.Context, id, userID int64) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var author, created, quoteOf int64
		err := tx.QueryRowContext(ctx, `SELECT user_id, created_at, quote_of FROM posts WHERE id = ?`, id).Scan(&author, &created, &quoteOf)
		if errors.Is(err, sql.ErrNoRows) {
			return feed.ErrNotFound("post")
		} else if err != nil {
			return err
		} else if author != userID {
			return feed.Errorf(feed.EFORBIDDEN, "only the author may delete this post")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM likes WHERE post_id = ?`, id); err != nil {
			return err
		}
		if err := unlinkMedia(ctx, tx, id, time.Now()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM posts WHERE id = ?`, id); err != nil {
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
	return scanPosts(db.read(ctx, `SELECT `+postCols+` FROM posts WHERE user_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, userID, limit, offset))
}

// PostsOfUserWithin implements feed.PostStore on the posts_user index.
func (db *DB) PostsOfUserWithin(ctx context.Context, userID int64, b feed.Bound, limit int) ([]*feed.Post, error) {
	return scanPosts(db.read(ctx, `SELECT `+postCols+` FROM posts WHERE user_id = ?1
		AND created_at <= ?2 AND (created_at < ?2 OR ?3 = 0 OR id < ?3)
		ORDER BY created_at DESC, id DESC LIMIT ?4`, userID, b.Max, b.BeforeID, limit))
}

// HotPosts implements feed.PostStore.
func (db *DB) HotPosts(ctx context.Context, offset, limit int) ([]*feed.Post, error) {
	return scanPosts(db.read(ctx, `SELECT `+postCols+` FROM posts
		ORDER BY liked DESC, created_at DESC, id DESC LIMIT ? OFFSET ?`, limit, offset))
}

// likablePost returns the author of post postID, or refuses with "post not
// found" when there is no such post or its author blocks userID (the same
// refusal, so a blocked user learns nothing). In the like's transaction:
// SQLite's one writer orders it with the block that would remove the like.
func likablePost(ctx context.Context, tx *sql.Tx, postID, userID int64) (int64, error) {
	var author int64
	err := tx.QueryRowContext(ctx, `SELECT p.user_id FROM posts p WHERE p.id = ?
		AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = ?)`, postID, userID).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, feed.ErrNotFound("post")
	}
	return author, err
}

// ToggleLike implements feed.PostStore.
func (db *DB) ToggleLike(ctx context.Context, postID, userID int64, now time.Time) (bool, error) {
	var liked bool
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM likes WHERE post_id = ? AND user_id = ?`, postID, userID)
		if err != nil {
			return err
		}
		delta := -1
		if k, _ := res.RowsAffected(); k == 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (?, ?, ?, ?)`,
				postID, userID, ms(now), author); err != nil {
				return err
			}
			delta, liked = 1, true
		}
		if err := db.notifyLike(ctx, tx, author, postID, userID, liked, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE posts SET liked = liked + ? WHERE id = ?`, delta, postID)
		return err
	})
	return liked, err
}

// SetLike implements feed.PostStore: the INSERT (or DELETE) of the like row
// decides whether the count moves, in the same transaction.
func (db *DB) SetLike(ctx context.Context, postID, userID int64, like bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		author, err := likablePost(ctx, tx, postID, userID)
		if err != nil {
			return err
		}
		var res sql.Result
		delta := 1
		if like {
			res, err = tx.ExecContext(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (?, ?, ?, ?)
				ON CONFLICT (post_id, user_id) DO NOTHING`, postID, userID, ms(now), author)
		} else {
			delta = -1
			res, err = tx.ExecContext(ctx, `DELETE FROM likes WHERE post_id = ? AND user_id = ?`, postID, userID)
		}
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return err // already so: the count stays
		}
		if err := db.notifyLike(ctx, tx, author, postID, userID, like, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE posts SET liked = liked + ? WHERE id = ?`, delta, postID)
		return err
	})
}

// Likers implements feed.PostStore.
func (db *DB) Likers(ctx context.Context, postID int64, limit int) ([]int64, error) {
	return scanIDs(db.read(ctx, `SELECT user_id FROM likes WHERE post_id = ? ORDER BY id LIMIT ?`, postID, limit))
}

// LikedBy implements feed.PostStore.
func (db *DB) LikedBy(ctx context.Context, userID int64, postIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if len(postIDs) == 0 {
		return out, nil
	}
	ids, err := scanIDs(db.read(ctx, `SELECT post_id FROM likes WHERE user_id = ? AND post_id IN (SELECT value FROM json_each(?))`, userID, idList(postIDs)))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// FeedEntries implements feed.PostStore. The posts_user and reposts_user
// indexes give each author's posts and reposts newest first; SQLite merges
// them for the ORDER BY.
func (db *DB) FeedEntries(ctx context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	return scanEntries(db.read(ctx, `SELECT created_at, id FROM (
		SELECT created_at, id FROM posts
			WHERE user_id IN (SELECT followee_id FROM follows WHERE follower_id = ?1 UNION ALL SELECT ?1)
			AND created_at <= ?2 AND (created_at < ?2 OR ?5 = 0 OR id < ?5)
		UNION ALL
		SELECT created_at, id FROM reposts
			WHERE user_id IN (SELECT followee_id FROM follows WHERE follower_id = ?1 UNION ALL SELECT ?1)
			AND created_at <= ?2 AND (created_at < ?2 OR ?5 = 0 OR id < ?5))
		ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4`, userID, b.Max, limit, offset, b.BeforeID))
}

func scanIDs(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
