package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// CommentsOptions shape `feedd bench comments`.
type CommentsOptions struct {
	Comments    int `json:"comments"`    // comments of the throughput phase, on one post
	Users       int `json:"users"`       // users who write them (and the bulk comments)
	Concurrency int `json:"concurrency"` // comments in flight at once
	Big         int `json:"big"`         // top-level comments of the big post (loaded in bulk)
	Small       int `json:"small"`       // comments of the small post
	Reads       int `json:"reads"`       // first pages read of each post in each order
	Runs        int `json:"runs"`        // rounds of the throughput phase (medians)
}

// DefaultCommentsOptions is the run of BENCHMARKS.md.
func DefaultCommentsOptions() CommentsOptions {
	return CommentsOptions{Comments: 2000, Users: 500, Concurrency: 32, Big: 100_000, Small: 10, Reads: 200, Runs: 3}
}

// CommentsResult is the outcome of `feedd bench comments`.
type CommentsResult struct {
	Backend string          `json:"backend"`
	Options CommentsOptions `json:"options"`
	// Comments (through the service: checks, counts and notifications in
	// one transaction) on one post by distinct users, Concurrency at once:
	// comments per second and per-comment latency, medians over the runs.
	PerS float64 `json:"comments_per_s"`
	P50  float64 `json:"comment_p50_ms"`
	P99  float64 `json:"comment_p99_ms"`
	// The first page (20 top-level comments with their first replies, as
	// GET /v1/posts/{id}/comments reads it, no HTTP) of the big and of the
	// small post, in each order, read alternately: p50 and p99, and the
	// p50 ratio big/small.
	TopBigP50   float64 `json:"top_big_p50_ms"`
	TopBigP99   float64 `json:"top_big_p99_ms"`
	TopSmallP50 float64 `json:"top_small_p50_ms"`
	TopSmallP99 float64 `json:"top_small_p99_ms"`
	TopRatio    float64 `json:"top_p50_ratio"`
	NewBigP50   float64 `json:"new_big_p50_ms"`
	NewBigP99   float64 `json:"new_big_p99_ms"`
	NewSmallP50 float64 `json:"new_small_p50_ms"`
	NewSmallP99 float64 `json:"new_small_p99_ms"`
	NewRatio    float64 `json:"new_p50_ratio"`
	// Deleting the big post: the delete itself, and until its comments
	// are purged (the removal job, PurgeBatch comments a transaction).
	DeleteMS  float64 `json:"delete_ms"`
	PurgedMS  float64 `json:"purged_ms"`
	BigCount  int     `json:"big_count"` // the big post's comment count before its delete
	Purged    int64   `json:"purged"`    // comments left of it afterwards: 0
	LoadedSec float64 `json:"loaded_s"`  // how long the bulk load took (context)
}

// Text is the human-readable result.
func (r *CommentsResult) Text() string {
	return fmt.Sprintf("comments, %s, %d comments on one post by %d users, %d at once (median of %d runs)\n"+
		"  %8.0f comments/s   p50 %6.2f ms   p99 %6.2f ms\n"+
		"  first page, top order: %d comments p50 %.3f ms p99 %.3f ms, %d comments p50 %.3f ms p99 %.3f ms, ratio %.2fx\n"+
		"  first page, new order: %d comments p50 %.3f ms p99 %.3f ms, %d comments p50 %.3f ms p99 %.3f ms, ratio %.2fx\n"+
		"  delete of the %d-comment post %.1f ms; its comments purged %.0f ms later\n",
		r.Backend, r.Options.Comments, r.Options.Users, r.Options.Concurrency, r.Options.Runs,
		r.PerS, r.P50, r.P99,
		r.Options.Big, r.TopBigP50, r.TopBigP99, r.Options.Small, r.TopSmallP50, r.TopSmallP99, r.TopRatio,
		r.Options.Big, r.NewBigP50, r.NewBigP99, r.Options.Small, r.NewSmallP50, r.NewSmallP99, r.NewRatio,
		r.BigCount, r.DeleteMS, r.PurgedMS)
}

// Comments measures comments: how many a second one post takes through the
// service, what the first page of a post with Big comments costs against
// one with Small, and the delete of the big post.
//
// Each run has Users users write Comments comments on a fresh post,
// Concurrency at once, and checks the post's count. Then Big top-level
// comments of another post are loaded in bulk (likes spread over them, a
// few threads with replies, the counts as the stores keep them), and Small
// comments of a third through the service. Their first pages are read
// Reads times in each order, alternately. Last, the big post is deleted
// and its comments purged by the workers.
func Comments(ctx context.Context, env *Env, opt CommentsOptions) (*CommentsResult, error) {
	if opt.Comments < 1 || opt.Users < 1 || opt.Concurrency < 1 || opt.Big < 1 || opt.Small < 1 || opt.Reads < 1 || opt.Runs < 1 {
		return nil, fmt.Errorf("comments, users, concurrency, big, small, reads and runs must be at least 1")
	}
	svc := env.Service
	env.logf("loading %d users", opt.Users+1)
	first, err := env.Store.CreateUsers(ctx, "comments-", opt.Users+1, func(int) {})
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	author := first
	user := func(i int) int64 { return first + 1 + int64(i%opt.Users) }
	res := &CommentsResult{Backend: env.Backend(), Options: opt}
	if err := env.Start(ctx); err != nil {
		return nil, err
	}

	var perS, p50, p99 []float64
	for run := range opt.Runs {
		p, err := svc.Publish(ctx, author, benchPost(run))
		if err != nil {
			return nil, err
		}
		lat := make(Latencies, opt.Comments)
		start := time.Now()
		err = parallel(ctx, opt.Concurrency, opt.Comments, func(ctx context.Context, i int) error {
			t := time.Now()
			_, err := svc.AddComment(ctx, user(i), p.ID, feed.CommentInput{Text: fmt.Sprintf("comment %d of run %d", i, run)})
			lat[i] = time.Since(t)
			return err
		})
		took := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("comment: %w", err)
		}
		if got, err := svc.Posts.Post(ctx, p.ID); err != nil {
			return nil, err
		} else if got.Comments != opt.Comments {
			return nil, fmt.Errorf("after %d comments the post counts %d", opt.Comments, got.Comments)
		}
		perS = append(perS, float64(opt.Comments)/took.Seconds())
		p50, p99 = append(p50, ms(lat.Quantile(.5))), append(p99, ms(lat.Quantile(.99)))
		env.logf("run %d: %.0f comments/s, p99 %.2f ms", run+1, perS[run], p99[run])
	}
	res.PerS, res.P50, res.P99 = round(Median(perS), 1), round(Median(p50), 3), round(Median(p99), 3)

	big, err := svc.Publish(ctx, author, benchPost(-1))
	if err != nil {
		return nil, err
	}
	env.logf("loading %d comments", opt.Big)
	t0 := time.Now()
	if err := loadComments(ctx, env, big.ID, first+1, opt.Users, opt.Big, env.now().UnixMilli()); err != nil {
		return nil, fmt.Errorf("load comments: %w", err)
	}
	res.LoadedSec = round(time.Since(t0).Seconds(), 1)
	small, err := svc.Publish(ctx, author, benchPost(-2))
	if err != nil {
		return nil, err
	}
	for i := range opt.Small {
		if _, err := svc.AddComment(ctx, user(i), small.ID, feed.CommentInput{Text: fmt.Sprintf("comment %d", i)}); err != nil {
			return nil, err
		}
	}

	lat := map[string]Latencies{}
	for n := range opt.Reads {
		for _, order := range []string{feed.CommentOrderTop, feed.CommentOrderNew} {
			posts := []*feed.Post{big, small}
			if n%2 == 1 {
				posts[0], posts[1] = small, big
			}
			for _, p := range posts {
				t := time.Now()
				page, err := svc.PostComments(ctx, user(n), p.ID, order, nil, 0)
				d := time.Since(t)
				if err != nil {
					return nil, err
				}
				want := min(feed.DefaultTimelineLimit, opt.Small)
				if p == big {
					want = min(feed.DefaultTimelineLimit, opt.Big)
				}
				if len(page.List) != want {
					return nil, fmt.Errorf("the first %s page of post %d holds %d comments, want %d", order, p.ID, len(page.List), want)
				}
				key := order + "-small"
				if p == big {
					key = order + "-big"
				}
				lat[key] = append(lat[key], d)
			}
		}
	}
	q := func(key string, x float64) float64 { return round(ms(lat[key].Quantile(x)), 3) }
	res.TopBigP50, res.TopBigP99, res.TopSmallP50, res.TopSmallP99 = q("top-big", .5), q("top-big", .99), q("top-small", .5), q("top-small", .99)
	res.NewBigP50, res.NewBigP99, res.NewSmallP50, res.NewSmallP99 = q("new-big", .5), q("new-big", .99), q("new-small", .5), q("new-small", .99)
	res.TopRatio, res.NewRatio = round(res.TopBigP50/res.TopSmallP50, 2), round(res.NewBigP50/res.NewSmallP50, 2)

	got, err := svc.Posts.Post(ctx, big.ID)
	if err != nil {
		return nil, err
	}
	res.BigCount = got.Comments
	t0 = time.Now()
	if err := svc.DeletePost(ctx, author, big.ID); err != nil {
		return nil, err
	}
	res.DeleteMS = round(ms(time.Since(t0)), 2)
	if err := poll(ctx, 20*time.Millisecond, 5*time.Minute, func() (bool, error) {
		n, err := countComments(ctx, env, big.ID)
		res.Purged = n
		return n == 0, err
	}); err != nil {
		return nil, fmt.Errorf("waiting for the purge: %w", err)
	}
	res.PurgedMS = round(ms(time.Since(t0)), 0)
	return res, nil
}

// loadComments loads n top-level comments of post postID by the users
// firstUser.. (users of them, in turn), a millisecond apart ending at now,
// with likes spread over them (liked counts only) and, on every 1000th, a
// thread of 3 replies; the post's count and the threads' as the stores keep
// them. A few statements.
func loadComments(ctx context.Context, env *Env, postID, firstUser int64, users, n int, now int64) error {
	const threadEvery = 1000
	insert := `INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, liked, replies, created_at, updated_at)
		SELECT $1, $2 + (i % $3), 0, 0, 'a bulk comment ' || i, (i * 7919) % 50,
			CASE WHEN i % ` + fmt.Sprint(threadEvery) + ` = 0 THEN 3 ELSE 0 END, $5 - $4 + i, $5 - $4 + i FROM g`
	stmts := []struct {
		q    string
		args []any
	}{
		{insert, []any{postID, firstUser, users, n, now}},
		{`INSERT INTO comments (post_id, user_id, parent_id, answer_id, content, created_at, updated_at)
			SELECT c.post_id, c.user_id, c.id, c.id, 'a bulk reply', c.created_at + r.k, c.created_at + r.k
			FROM comments c CROSS JOIN (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) r
			WHERE c.post_id = $1 AND c.parent_id = 0 AND c.replies = 3`, []any{postID}},
		{`UPDATE posts SET comments = (SELECT count(*) FROM comments WHERE post_id = $1) WHERE id = $1`, []any{postID}},
	}
	switch s := env.Store.(type) {
	case *SQLiteStore:
		return s.tx(ctx, func(tx *sql.Tx) error {
			for i, st := range stmts {
				q := st.q
				if i == 0 {
					q = `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $4) ` + q
				}
				if _, err := tx.ExecContext(ctx, dollarsToSQLite(q), st.args...); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `ANALYZE comments`)
			return err
		})
	case *PostgresStore:
		tx, err := s.Pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for i, st := range stmts {
			q := st.q
			if i == 0 {
				q = `WITH g(i) AS (SELECT generate_series(1, $4::bigint)) ` + strings.NewReplacer("$1", "$1::bigint", "$2", "$2::bigint", "$3", "$3::bigint", "$5", "$5::bigint").Replace(q)
			}
			if _, err := tx.Exec(ctx, q, st.args...); err != nil {
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		_, err = s.Pool.Exec(ctx, `ANALYZE comments`)
		return err
	}
	return fmt.Errorf("bench comments: no bulk loader for %T", env.Store)
}

// countComments counts the comments left of post postID.
func countComments(ctx context.Context, env *Env, postID int64) (int64, error) {
	var n int64
	switch s := env.Store.(type) {
	case *SQLiteStore:
		err := s.Read.QueryRowContext(ctx, `SELECT count(*) FROM comments WHERE post_id = ?`, postID).Scan(&n)
		return n, err
	case *PostgresStore:
		err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM comments WHERE post_id = $1`, postID).Scan(&n)
		return n, err
	}
	return 0, fmt.Errorf("bench comments: no store %T", env.Store)
}
