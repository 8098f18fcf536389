package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.ImportStore = (*DB)(nil)

// ImportProgress implements feed.ImportStore.
func (db *DB) ImportProgress(ctx context.Context, source string) ([]feed.ImportCheckpoint, error) {
	rows, err := db.Pool.Query(ctx, `SELECT phase, last_key, done, counts FROM import_progress WHERE source = $1 ORDER BY phase`, source)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (feed.ImportCheckpoint, error) {
		cp := feed.ImportCheckpoint{Source: source}
		var counts []byte
		if err := row.Scan(&cp.Phase, &cp.Last, &cp.Done, &counts); err != nil {
			return cp, err
		}
		return cp, json.Unmarshal(counts, &cp.Counts)
	})
}

// SaveImportProgress implements feed.ImportStore.
func (db *DB) SaveImportProgress(ctx context.Context, cps ...feed.ImportCheckpoint) error {
	return db.tx(ctx, func(tx pgx.Tx) error { return saveProgress(ctx, tx, cps) })
}

func saveProgress(ctx context.Context, tx pgx.Tx, cps []feed.ImportCheckpoint) error {
	for _, cp := range cps {
		counts, err := json.Marshal(cp.Counts)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO import_progress (source, phase, last_key, done, counts, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (source, phase) DO UPDATE SET last_key = EXCLUDED.last_key, done = EXCLUDED.done,
				counts = EXCLUDED.counts, updated_at = EXCLUDED.updated_at`,
			cp.Source, cp.Phase, cp.Last, cp.Done, string(counts), ms(time.Now())); err != nil {
			return err
		}
	}
	return nil
}

// staged is a batch on its way in: COPY puts its rows (each with its
// index in the batch, ord) into a temporary table dropped at commit, and
// one INSERT ... SELECT ... ON CONFLICT DO NOTHING moves them into the
// table, returning the ords it could not write. COPY is PostgreSQL's
// fastest way in; the staging table lets a conflict skip its row instead
// of failing the COPY.
type staged struct {
	name  string   // the temporary table
	def   string   // its columns' definitions, ord first
	cols  []string // its columns, ord first
	rows  [][]any
	moveQ string // the INSERT ... SELECT, returning the skipped ords
}

func (s staged) run(ctx context.Context, tx pgx.Tx) ([]int, error) {
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TEMPORARY TABLE %s (%s) ON COMMIT DROP`, s.name, s.def)); err != nil {
		return nil, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.name}, s.cols, pgx.CopyFromRows(s.rows)); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, s.moveQ)
	if err != nil {
		return nil, err
	}
	ords, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := make([]int, len(ords))
	for i, o := range ords {
		out[i] = int(o)
	}
	slices.Sort(out)
	return out, err
}

// bumpSequence moves the id sequence of table past id, so that the rows
// feedd makes itself get ids above every imported one. A sequence is not
// transactional: a batch rolled back leaves it moved, which only skips ids.
func bumpSequence(ctx context.Context, tx pgx.Tx, table string, id int64) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%[1]s', 'id'),
		greatest($1, (SELECT last_value FROM %[1]s_id_seq)))`, table), id)
	return err
}

// importBatch runs one batch of an import in a transaction: move writes
// the rows and returns the skipped ones; then the checkpoints of commit.
func (db *DB) importBatch(ctx context.Context, move func(tx pgx.Tx) ([]feed.ImportSkip, error), commit feed.ImportCommit) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		skips, err := move(tx)
		if err != nil {
			return err
		}
		return saveProgress(ctx, tx, commit(skips))
	})
}

// ImportUsers implements feed.ImportStore.
func (db *DB) ImportUsers(ctx context.Context, users []*feed.User, commit feed.ImportCommit) error {
	if len(users) == 0 {
		return db.importBatch(ctx, func(pgx.Tx) ([]feed.ImportSkip, error) { return nil, nil }, commit)
	}
	s := staged{name: "import_users", def: "ord int, id bigint, phone text, nick_name text, icon text, city text, introduce text, created_at bigint, active_at bigint",
		cols: []string{"ord", "id", "phone", "nick_name", "icon", "city", "introduce", "created_at", "active_at"},
		moveQ: `WITH ins AS (
				INSERT INTO users (id, phone, nick_name, icon, city, introduce, created_at, active_at)
				SELECT id, phone, nick_name, icon, city, introduce, created_at, active_at FROM import_users ORDER BY ord
				ON CONFLICT DO NOTHING RETURNING id
			)
			SELECT ord FROM import_users WHERE id NOT IN (SELECT id FROM ins)`}
	var maxID int64
	for i, u := range users {
		s.rows = append(s.rows, []any{int32(i), u.ID, u.Phone, u.NickName, u.Icon, u.City, u.Introduce, ms(u.CreatedAt), ms(u.ActiveAt)})
		maxID = max(maxID, u.ID)
	}
	return db.importBatch(ctx, func(tx pgx.Tx) ([]feed.ImportSkip, error) {
		ords, err := s.run(ctx, tx)
		if err != nil {
			return nil, err
		}
		var skips []feed.ImportSkip
		for _, o := range ords {
			// Not written: its id was taken, or else its phone.
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)`, users[o].ID).Scan(&taken); err != nil {
				return nil, err
			}
			reason := feed.SkipDuplicatePhone
			if taken {
				reason = feed.SkipIDTaken
			}
			skips = append(skips, feed.ImportSkip{Index: o, Reason: reason})
		}
		return skips, bumpSequence(ctx, tx, "users", maxID)
	}, commit)
}

// ImportPosts implements feed.ImportStore.
func (db *DB) ImportPosts(ctx context.Context, posts []*feed.Post, commit feed.ImportCommit) error {
	s := staged{name: "import_posts", def: "ord int, id bigint, user_id bigint, shop_id bigint, title text, images text, content text, liked int, comments int, created_at bigint, updated_at bigint",
		cols: []string{"ord", "id", "user_id", "shop_id", "title", "images", "content", "liked", "comments", "created_at", "updated_at"},
		moveQ: `WITH ins AS (
				INSERT INTO posts (id, user_id, shop_id, title, images, content, liked, comments, created_at, updated_at)
				SELECT id, user_id, shop_id, title, images, content, liked, comments, created_at, updated_at FROM import_posts i
				WHERE NOT EXISTS (SELECT 1 FROM reposts r WHERE r.id = i.id) ORDER BY ord
				ON CONFLICT DO NOTHING RETURNING id
			)
			SELECT ord FROM import_posts WHERE id NOT IN (SELECT id FROM ins)`}
	var maxID int64
	for i, p := range posts {
		s.rows = append(s.rows, []any{int32(i), p.ID, p.UserID, p.ShopID, p.Title, p.Images, p.Content, int32(p.Liked), int32(p.Comments), ms(p.CreatedAt), ms(p.UpdatedAt)})
		maxID = max(maxID, p.ID)
	}
	return db.importBatch(ctx, func(tx pgx.Tx) ([]feed.ImportSkip, error) {
		if len(posts) == 0 {
			return nil, nil
		}
		ords, err := s.run(ctx, tx)
		if err != nil {
			return nil, err
		}
		return skipsOf(ords, feed.SkipIDTaken), bumpSequence(ctx, tx, "posts", maxID)
	}, commit)
}

func skipsOf(ords []int, reason string) []feed.ImportSkip {
	out := make([]feed.ImportSkip, len(ords))
	for i, o := range ords {
		out[i] = feed.ImportSkip{Index: o, Reason: reason}
	}
	return out
}

// pairs takes out of a batch the rows whose key a row before them has:
// ON CONFLICT sees a row's conflict with another of the same statement,
// but the ords returned could not tell which of the two was written. It
// returns the ords of the rows kept and the skips of the others.
func pairs(n int, key func(i int) [2]int64) (keep []int, skips []feed.ImportSkip) {
	seen := make(map[[2]int64]bool, n)
	for i := range n {
		k := key(i)
		if seen[k] {
			skips = append(skips, feed.ImportSkip{Index: i, Reason: feed.SkipDuplicate})
			continue
		}
		seen[k] = true
		keep = append(keep, i)
	}
	return keep, skips
}

// ImportFollows implements feed.ImportStore. The follows' pull flags and
// the users' counts are set by FinishImport.
func (db *DB) ImportFollows(ctx context.Context, follows []feed.ImportFollow, commit feed.ImportCommit) error {
	keep, dups := pairs(len(follows), func(i int) [2]int64 { return [2]int64{follows[i].FollowerID, follows[i].FolloweeID} })
	s := staged{name: "import_follows", def: "ord int, follower_id bigint, followee_id bigint, created_at bigint",
		cols: []string{"ord", "follower_id", "followee_id", "created_at"},
		moveQ: `WITH ins AS (
				INSERT INTO follows (follower_id, followee_id, created_at)
				SELECT follower_id, followee_id, created_at FROM import_follows ORDER BY ord
				ON CONFLICT DO NOTHING RETURNING follower_id, followee_id
			)
			SELECT s.ord FROM import_follows s LEFT JOIN ins USING (follower_id, followee_id) WHERE ins.follower_id IS NULL`}
	for _, i := range keep {
		f := follows[i]
		s.rows = append(s.rows, []any{int32(i), f.FollowerID, f.FolloweeID, ms(f.CreatedAt)})
	}
	return db.importBatch(ctx, func(tx pgx.Tx) ([]feed.ImportSkip, error) {
		if len(keep) == 0 {
			return dups, nil
		}
		ords, err := s.run(ctx, tx)
		return append(dups, skipsOf(ords, feed.SkipDuplicate)...), err
	}, commit)
}

// ImportLikes implements feed.ImportStore. The likes get ids of the
// sequence in the order of the batch (earliest first within a post), the
// order Likers reads.
func (db *DB) ImportLikes(ctx context.Context, posts []int64, likes []feed.ImportLike, commit feed.ImportCommit) error {
	keep, dups := pairs(len(likes), func(i int) [2]int64 { return [2]int64{likes[i].PostID, likes[i].UserID} })
	s := staged{name: "import_likes", def: "ord int, post_id bigint, user_id bigint, created_at bigint, author_id bigint",
		cols: []string{"ord", "post_id", "user_id", "created_at", "author_id"},
		moveQ: `WITH ins AS (
				INSERT INTO likes (post_id, user_id, created_at, author_id)
				SELECT post_id, user_id, created_at, author_id FROM import_likes ORDER BY ord
				ON CONFLICT DO NOTHING RETURNING post_id, user_id
			)
			SELECT s.ord FROM import_likes s LEFT JOIN ins USING (post_id, user_id) WHERE ins.post_id IS NULL`}
	for _, i := range keep {
		l := likes[i]
		s.rows = append(s.rows, []any{int32(i), l.PostID, l.UserID, ms(l.CreatedAt), l.AuthorID})
	}
	return db.importBatch(ctx, func(tx pgx.Tx) ([]feed.ImportSkip, error) {
		skips := dups
		if len(keep) > 0 {
			ords, err := s.run(ctx, tx)
			if err != nil {
				return nil, err
			}
			skips = append(skips, skipsOf(ords, feed.SkipDuplicate)...)
		}
		_, err := tx.Exec(ctx, `UPDATE posts p SET liked = (SELECT count(*) FROM likes l WHERE l.post_id = p.id)
			WHERE p.id = ANY($1)`, posts)
		return skips, err
	}, commit)
}

// ImportComments implements feed.ImportStore. The counts are counted
// again over comments_post and comments_thread, in the batch's
// transaction.
func (db *DB) ImportComments(ctx context.Context, comments []*feed.Comment, commit feed.ImportCommit) error {
	s := staged{name: "import_comments", def: "ord int, id bigint, post_id bigint, user_id bigint, parent_id bigint, answer_id bigint, content text, liked int, status smallint, created_at bigint, updated_at bigint",
		cols: []string{"ord", "id", "post_id", "user_id", "parent_id", "answer_id", "content", "liked", "status", "created_at", "updated_at"},
		moveQ: `WITH ins AS (
				INSERT INTO comments (id, post_id, user_id, parent_id, answer_id, content, liked, status, created_at, updated_at)
				SELECT id, post_id, user_id, parent_id, answer_id, content, liked, status, created_at, updated_at FROM import_comments ORDER BY ord
				ON CONFLICT DO NOTHING RETURNING id
			)
			SELECT ord FROM import_comments WHERE id NOT IN (SELECT id FROM ins)`}
	var maxID int64
	for i, c := range comments {
		s.rows = append(s.rows, []any{int32(i), c.ID, c.PostID, c.UserID, c.ParentID, c.AnswerID, c.Text, int32(c.Liked), int16(c.Status), ms(c.CreatedAt), ms(c.UpdatedAt)})
		maxID = max(maxID, c.ID)
	}
	posts, threads := feed.ImportCommentTargets(comments)
	return db.importBatch(ctx, func(tx pgx.Tx) ([]feed.ImportSkip, error) {
		if len(comments) == 0 {
			return nil, nil
		}
		ords, err := s.run(ctx, tx)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE posts p SET comments = n.n
			FROM (SELECT u.id, count(c.id) AS n FROM unnest($1::bigint[]) AS u(id) LEFT JOIN comments c ON c.post_id = u.id AND NOT c.deleted GROUP BY u.id) n
			WHERE p.id = n.id`, posts); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE comments t SET replies = n.n
			FROM (SELECT u.id, count(r.id) AS n FROM unnest($1::bigint[]) AS u(id) LEFT JOIN comments r ON r.parent_id = u.id AND r.parent_id <> 0 AND NOT r.deleted GROUP BY u.id) n
			WHERE t.id = n.id`, threads); err != nil {
			return nil, err
		}
		return skipsOf(ords, feed.SkipIDTaken), bumpSequence(ctx, tx, "comments", maxID)
	}, commit)
}

// ImportedUsers implements feed.ImportStore.
func (db *DB) ImportedUsers(ctx context.Context, fn func(id int64)) error {
	rows, err := db.Pool.Query(ctx, `SELECT id FROM users ORDER BY id`)
	if err != nil {
		return err
	}
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { fn(id); return nil })
	return err
}

// ImportedPosts implements feed.ImportStore.
func (db *DB) ImportedPosts(ctx context.Context, fn func(id, authorID, score int64)) error {
	rows, err := db.Pool.Query(ctx, `SELECT id, user_id, created_at FROM posts`)
	if err != nil {
		return err
	}
	var id, author, score int64
	_, err = pgx.ForEachRow(rows, []any{&id, &author, &score}, func() error { fn(id, author, score); return nil })
	return err
}

// ImportedFollowees implements feed.ImportStore: one range of the
// follows' primary key.
func (db *DB) ImportedFollowees(ctx context.Context, from, to int64) (map[int64][]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT follower_id, followee_id FROM follows WHERE follower_id BETWEEN $1 AND $2`, from, to)
	if err != nil {
		return nil, err
	}
	out := map[int64][]int64{}
	var a, b int64
	_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error { out[a] = append(out[a], b); return nil })
	return out, err
}

// FinishImport implements feed.ImportStore in one transaction: the counts
// of every user whose counts differ from the follows' (two grouped scans),
// then pull mode as SetMode sets it.
func (db *DB) FinishImport(ctx context.Context, pullThreshold int) ([]int64, error) {
	var pull []int64
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE users u SET fans = c.fans, followee = c.followee
			FROM (SELECT u.id, coalesce(a.n, 0) AS fans, coalesce(b.n, 0) AS followee FROM users u
				LEFT JOIN (SELECT followee_id AS id, count(*) AS n FROM follows GROUP BY followee_id) a USING (id)
				LEFT JOIN (SELECT follower_id AS id, count(*) AS n FROM follows GROUP BY follower_id) b USING (id)) c
			WHERE u.id = c.id AND (u.fans, u.followee) IS DISTINCT FROM (c.fans, c.followee)`); err != nil {
			return err
		}
		if pullThreshold > 0 {
			if _, err := tx.Exec(ctx, `UPDATE users SET mode = $1 WHERE mode = $2 AND fans >= $3`,
				int16(feed.PullMode), int16(feed.PushMode), pullThreshold); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE follows SET pull = true WHERE NOT pull
			AND followee_id IN (SELECT id FROM users WHERE mode <> 0)`); err != nil {
			return err
		}
		var err error
		pull, err = scanIDs(tx.Query(ctx, `SELECT id FROM users WHERE mode <> 0 ORDER BY id`))
		return err
	})
	return pull, err
}
