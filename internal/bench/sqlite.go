package bench

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	feed "github.com/feedd/feedd"
)

// chunk is how many rows one bulk statement writes.
const chunk = 50_000

// SQLiteStore is Store on feedd's SQLite database (the tables of
// sqlite/migrations). Write must be a pool of one connection, as feedd's.
// The inboxes are in InboxWrite/InboxRead, the pools of feedd's inbox.db
// (sqlite.OpenInbox), or in Write/Read when those are nil.
type SQLiteStore struct {
	Write, Read           *sql.DB
	InboxWrite, InboxRead *sql.DB
	Closer                func() error
}

func (s *SQLiteStore) inboxWrite() *sql.DB { return cmp.Or(s.InboxWrite, s.Write) }
func (s *SQLiteStore) inboxRead() *sql.DB  { return cmp.Or(s.InboxRead, s.Read) }

var _ Store = (*SQLiteStore)(nil)

// Engine implements Store.
func (s *SQLiteStore) Engine() string { return "sqlite" }

// Close implements Store.
func (s *SQLiteStore) Close() error {
	if s.Closer != nil {
		return s.Closer()
	}
	return nil
}

func (s *SQLiteStore) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// seq is a recursive common table expression g(i) counting from ?1 to ?2.
const sqliteSeq = `WITH RECURSIVE g(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM g WHERE i < ?2) `

// CreateUsers implements Store: one transaction, a statement per chunk.
func (s *SQLiteStore) CreateUsers(ctx context.Context, tag string, n int, progress func(int)) (int64, error) {
	now := time.Now().UnixMilli()
	var first, last int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for done := 0; done < n; {
			k := min(chunk, n-done)
			if _, err := tx.ExecContext(ctx, sqliteSeq+`INSERT INTO users (phone, nick_name, icon, created_at, active_at)
				SELECT ?3 || i, 'user_bench' || i, '/imgs/icons/bench.jpg', ?4, ?4 FROM g`, done+1, done+k, tag, now); err != nil {
				return err
			}
			done += k
			progress(done)
		}
		if err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE phone = ?`, fmt.Sprint(tag, 1)).Scan(&first); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM users WHERE phone = ?`, fmt.Sprint(tag, n)).Scan(&last)
	})
	if err == nil && last-first != int64(n-1) {
		err = fmt.Errorf("bench: user ids %d..%d are not consecutive", first, last)
	}
	return first, err
}

// FollowRange implements Store.
func (s *SQLiteStore) FollowRange(ctx context.Context, followee, first int64, n int, progress func(int)) error {
	now := time.Now().UnixMilli()
	return s.tx(ctx, func(tx *sql.Tx) error {
		for done := 0; done < n; {
			k := min(chunk, n-done)
			lo := first + int64(done)
			if _, err := tx.ExecContext(ctx, sqliteSeq+`INSERT INTO follows (follower_id, followee_id, created_at, pull)
				SELECT i, ?3, ?4, coalesce((SELECT mode <> 0 FROM users WHERE id = ?3), 0) FROM g WHERE true ON CONFLICT DO NOTHING`, lo, lo+int64(k)-1, followee, now); err != nil {
				return err
			}
			done += k
			progress(done)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET followee = followee + 1 WHERE id BETWEEN ? AND ?`, first, first+int64(n)-1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET fans = fans + ? WHERE id = ?`, n, followee)
		return err
	})
}

// Follow implements Store.
func (s *SQLiteStore) Follow(ctx context.Context, pairs [][2]int64) error {
	now := time.Now().UnixMilli()
	return s.tx(ctx, func(tx *sql.Tx) error {
		for len(pairs) > 0 {
			k := min(chunk/5, len(pairs))
			b, _ := json.Marshal(pairs[:k])
			if _, err := tx.ExecContext(ctx, `INSERT INTO follows (follower_id, followee_id, created_at, pull)
				SELECT value ->> 0, value ->> 1, ?, coalesce((SELECT mode <> 0 FROM users WHERE id = value ->> 1), 0)
				FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`, now, string(b)); err != nil {
				return err
			}
			pairs = pairs[k:]
		}
		return nil
	})
}

// FixCounts implements Store.
func (s *SQLiteStore) FixCounts(ctx context.Context, first, last int64) error {
	_, err := s.Write.ExecContext(ctx, `UPDATE users SET
		fans = (SELECT count(*) FROM follows WHERE followee_id = users.id),
		followee = (SELECT count(*) FROM follows WHERE follower_id = users.id)
		WHERE id BETWEEN ? AND ?`, first, last)
	return err
}

// LikeShare implements Store.
func (s *SQLiteStore) LikeShare(ctx context.Context, first, last int64, every int) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id)
			SELECT p.id, f.follower_id, p.created_at + 1, p.user_id FROM follows f JOIN posts p ON p.user_id = f.followee_id
			WHERE f.follower_id BETWEEN ?1 AND ?2 AND (p.id + f.follower_id) % ?3 = 0
			ORDER BY p.id, f.follower_id ON CONFLICT DO NOTHING`, first, last, every)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `UPDATE posts SET liked = (SELECT count(*) FROM likes WHERE post_id = posts.id)
			WHERE user_id BETWEEN ? AND ?`, first, last)
		return err
	})
	return n, err
}

func idList(ids []int64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// InboxHolding implements Store.
func (s *SQLiteStore) InboxHolding(ctx context.Context, e feed.Entry, ids []int64) (int, error) {
	var n int
	err := s.inboxRead().QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE score = ? AND post_id = ?
		AND user_id IN (SELECT value FROM json_each(?))`, e.Score, e.PostID, idList(ids)).Scan(&n)
	return n, err
}

// InboxHoldingRange implements Store.
func (s *SQLiteStore) InboxHoldingRange(ctx context.Context, e feed.Entry, first, last int64) (int, error) {
	var n int
	err := s.inboxRead().QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE user_id BETWEEN ? AND ?
		AND score = ? AND post_id = ?`, first, last, e.Score, e.PostID).Scan(&n)
	return n, err
}

// InboxEntries implements Store.
func (s *SQLiteStore) InboxEntries(ctx context.Context, first, last int64) (int64, error) {
	var n int64
	err := s.inboxRead().QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE user_id BETWEEN ? AND ?`, first, last).Scan(&n)
	return n, err
}

// InboxInsertOne implements Store.
func (s *SQLiteStore) InboxInsertOne(ctx context.Context, e feed.Entry, userID int64) error {
	_, err := s.inboxWrite().ExecContext(ctx, `INSERT INTO inbox (user_id, score, post_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		userID, e.Score, e.PostID)
	return err
}

// InboxInsertRange implements Store: SQLite has one writer, so one
// connection, a statement per chunk, each its own transaction.
func (s *SQLiteStore) InboxInsertRange(ctx context.Context, e feed.Entry, first int64, n int) error {
	for done := 0; done < n; {
		k := min(chunk, n-done)
		lo := first + int64(done)
		if _, err := s.inboxWrite().ExecContext(ctx, sqliteSeq+`INSERT INTO inbox (user_id, score, post_id)
			SELECT i, ?3, ?4 FROM g WHERE true ON CONFLICT DO NOTHING`, lo, lo+int64(k)-1, e.Score, e.PostID); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// InboxDelete implements Store.
func (s *SQLiteStore) InboxDelete(ctx context.Context, e feed.Entry, first, last int64) error {
	_, err := s.inboxWrite().ExecContext(ctx, `DELETE FROM inbox WHERE user_id BETWEEN ? AND ? AND score = ? AND post_id = ?`,
		first, last, e.Score, e.PostID)
	return err
}
