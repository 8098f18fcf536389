package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.ImportStore = (*DB)(nil)

// ImportProgress implements feed.ImportStore.
func (db *DB) ImportProgress(ctx context.Context, source string) ([]feed.ImportCheckpoint, error) {
	rows, err := db.read(ctx, `SELECT phase, last_key, done, counts FROM import_progress WHERE source = ? ORDER BY phase`, source)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []feed.ImportCheckpoint
	for rows.Next() {
		cp := feed.ImportCheckpoint{Source: source}
		var counts string
		if err := rows.Scan(&cp.Phase, &cp.Last, &cp.Done, &counts); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(counts), &cp.Counts); err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, rows.Err()
}

// SaveImportProgress implements feed.ImportStore.
func (db *DB) SaveImportProgress(ctx context.Context, cps ...feed.ImportCheckpoint) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error { return saveProgress(ctx, tx, cps) })
}

func saveProgress(ctx context.Context, tx *sql.Tx, cps []feed.ImportCheckpoint) error {
	for _, cp := range cps {
		counts, err := json.Marshal(cp.Counts)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_progress (source, phase, last_key, done, counts, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (source, phase) DO UPDATE SET last_key = excluded.last_key, done = excluded.done,
				counts = excluded.counts, updated_at = excluded.updated_at`,
			cp.Source, cp.Phase, cp.Last, cp.Done, string(counts), ms(time.Now())); err != nil {
			return err
		}
	}
	return nil
}

// importBatch writes a batch of n rows in one transaction, in the order
// of order (nil: as they come): insert writes row i and returns the reason
// it was skipped ("" if written); then the
// checkpoints of commit are saved. The statements keep their prepared
// form on the writer connection (stmtcache.go), so a row costs one
// execution.
func (db *DB) importBatch(ctx context.Context, n int, order []int, insert func(tx *sql.Tx, i int) (string, error), after func(tx *sql.Tx) error, commit feed.ImportCommit) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var skips []feed.ImportSkip
		for j := range n {
			i := j
			if order != nil {
				i = order[j]
			}
			reason, err := insert(tx, i)
			if err != nil {
				return err
			}
			if reason != "" {
				skips = append(skips, feed.ImportSkip{Index: i, Reason: reason})
			}
		}
		if after != nil {
			if err := after(tx); err != nil {
				return err
			}
		}
		return saveProgress(ctx, tx, commit(skips))
	})
}

// inserted reports whether an INSERT ... ON CONFLICT DO NOTHING wrote its row.
func inserted(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ImportUsers implements feed.ImportStore. AUTOINCREMENT keeps the largest
// id ever written, so feedd's own users come after the imported ones.
func (db *DB) ImportUsers(ctx context.Context, users []*feed.User, commit feed.ImportCommit) error {
	return db.importBatch(ctx, len(users), nil, func(tx *sql.Tx, i int) (string, error) {
		u := users[i]
		ok, err := inserted(tx.ExecContext(ctx, `INSERT INTO users (id, phone, nick_name, icon, city, introduce, created_at, active_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			u.ID, u.Phone, u.NickName, u.Icon, u.City, u.Introduce, ms(u.CreatedAt), ms(u.ActiveAt)))
		if err != nil || ok {
			return "", err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = ?`, u.ID).Scan(&n); err != nil {
			return "", err
		}
		if n > 0 {
			return feed.SkipIDTaken, nil
		}
		return feed.SkipDuplicatePhone, nil
	}, nil, commit)
}

// ImportPosts implements feed.ImportStore.
func (db *DB) ImportPosts(ctx context.Context, posts []*feed.Post, commit feed.ImportCommit) error {
	return db.importBatch(ctx, len(posts), nil, func(tx *sql.Tx, i int) (string, error) {
		p := posts[i]
		// An id a repost has is taken too: an inbox entry's id names one
		// or the other (repost.go).
		ok, err := inserted(tx.ExecContext(ctx, `INSERT INTO posts (id, user_id, shop_id, title, images, content, liked, comments, created_at, updated_at)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE NOT EXISTS (SELECT 1 FROM reposts WHERE id = ?1) ON CONFLICT DO NOTHING`,
			p.ID, p.UserID, p.ShopID, p.Title, p.Images, p.Content, p.Liked, p.Comments, ms(p.CreatedAt), ms(p.UpdatedAt)))
		if err != nil || ok {
			return "", err
		}
		return feed.SkipIDTaken, nil
	}, nil, commit)
}

// ImportFollows implements feed.ImportStore. The follows' pull flags and
// the users' counts are set by FinishImport.
func (db *DB) ImportFollows(ctx context.Context, follows []feed.ImportFollow, commit feed.ImportCommit) error {
	order := byKey(len(follows), func(i int) [2]int64 { return [2]int64{follows[i].FollowerID, follows[i].FolloweeID} })
	return db.importBatch(ctx, len(follows), order, func(tx *sql.Tx, i int) (string, error) {
		f := follows[i]
		ok, err := inserted(tx.ExecContext(ctx, `INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			f.FollowerID, f.FolloweeID, ms(f.CreatedAt)))
		if err != nil || ok {
			return "", err
		}
		return feed.SkipDuplicate, nil
	}, nil, commit)
}

// ImportLikes implements feed.ImportStore.
func (db *DB) ImportLikes(ctx context.Context, posts []int64, likes []feed.ImportLike, commit feed.ImportCommit) error {
	return db.importBatch(ctx, len(likes), nil, func(tx *sql.Tx, i int) (string, error) {
		l := likes[i]
		ok, err := inserted(tx.ExecContext(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			l.PostID, l.UserID, ms(l.CreatedAt), l.AuthorID))
		if err != nil || ok {
			return "", err
		}
		return feed.SkipDuplicate, nil
	}, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE posts SET liked = (SELECT count(*) FROM likes WHERE post_id = posts.id)
			WHERE id IN (SELECT value FROM json_each(?))`, idList(posts))
		return err
	}, commit)
}

// ImportComments implements feed.ImportStore. AUTOINCREMENT keeps the
// largest id ever written, so feedd's own comments come after the
// imported ones. The counts are counted again over comments_post and
// comments_thread, in the batch's transaction.
func (db *DB) ImportComments(ctx context.Context, comments []*feed.Comment, commit feed.ImportCommit) error {
	posts, threads := feed.ImportCommentTargets(comments)
	return db.importBatch(ctx, len(comments), nil, func(tx *sql.Tx, i int) (string, error) {
		c := comments[i]
		ok, err := inserted(tx.ExecContext(ctx, `INSERT INTO comments (id, post_id, user_id, parent_id, answer_id, content, liked, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			c.ID, c.PostID, c.UserID, c.ParentID, c.AnswerID, c.Text, c.Liked, int(c.Status), ms(c.CreatedAt), ms(c.UpdatedAt)))
		if err != nil || ok {
			return "", err
		}
		return feed.SkipIDTaken, nil
	}, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE posts SET comments = (SELECT count(*) FROM comments c WHERE c.post_id = posts.id AND c.deleted = 0)
			WHERE id IN (SELECT value FROM json_each(?))`, idList(posts)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE comments SET replies = (SELECT count(*) FROM comments r
				WHERE r.parent_id = comments.id AND r.parent_id <> 0 AND r.deleted = 0)
			WHERE id IN (SELECT value FROM json_each(?))`, idList(threads))
		return err
	}, commit)
}

// ImportedUsers implements feed.ImportStore.
func (db *DB) ImportedUsers(ctx context.Context, fn func(id int64)) error {
	rows, err := db.read(ctx, `SELECT id FROM users ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		fn(id)
	}
	return rows.Err()
}

// ImportedPosts implements feed.ImportStore.
func (db *DB) ImportedPosts(ctx context.Context, fn func(id, authorID, score int64)) error {
	rows, err := db.read(ctx, `SELECT id, user_id, created_at FROM posts`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, author, score int64
		if err := rows.Scan(&id, &author, &score); err != nil {
			return err
		}
		fn(id, author, score)
	}
	return rows.Err()
}

// ImportedFollowees implements feed.ImportStore: one range of the
// follows' primary key.
func (db *DB) ImportedFollowees(ctx context.Context, from, to int64) (map[int64][]int64, error) {
	rows, err := db.read(ctx, `SELECT follower_id, followee_id FROM follows WHERE follower_id BETWEEN ? AND ?`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]int64{}
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			return nil, err
		}
		out[a] = append(out[a], b)
	}
	return out, rows.Err()
}

// FinishImport implements feed.ImportStore in one transaction: the counts
// of every user from the follows' two indexes, then pull mode as
// SetMode sets it.
func (db *DB) FinishImport(ctx context.Context, pullThreshold int) ([]int64, error) {
	var pull []int64
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE users SET
			fans = (SELECT count(*) FROM follows WHERE followee_id = users.id),
			followee = (SELECT count(*) FROM follows WHERE follower_id = users.id)`); err != nil {
			return err
		}
		if pullThreshold > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET mode = ? WHERE mode = ? AND fans >= ?`,
				int(feed.PullMode), int(feed.PushMode), pullThreshold); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE follows SET pull = 1 WHERE pull = 0
			AND followee_id IN (SELECT id FROM users WHERE mode <> 0)`); err != nil {
			return err
		}
		var err error
		pull, err = scanIDs(tx.QueryContext(ctx, `SELECT id FROM users WHERE mode <> 0 ORDER BY id`))
		return err
	})
	return pull, err
}

// byKey returns the indexes 0..n-1 in the order of their keys: rows
// inserted in primary-key order land on neighbouring pages of the B-tree.
func byKey(n int, key func(i int) [2]int64) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := key(a), key(b)
		return cmp.Or(cmp.Compare(ka[0], kb[0]), cmp.Compare(ka[1], kb[1]))
	})
	return order
}
