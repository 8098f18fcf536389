package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	feed "github.com/feedd/feedd"
)

// NotifyOptions shape `feedd bench notify`.
type NotifyOptions struct {
	Likes       int `json:"likes"`       // likes of each measured phase, by distinct users
	Concurrency int `json:"concurrency"` // likes in flight at once
	BigGroup    int `json:"big_group"`   // actors of the big group (loaded in bulk)
	Reads       int `json:"reads"`       // page reads of each of the two users
	Runs        int `json:"runs"`        // rounds of the like phases (medians)
	// SetNotify switches the recording of notifications on or off in the
	// service's store (--notify); required.
	SetNotify func(on bool) `json:"-"`
}

// NotifyResult is the outcome of `feedd bench notify`.
type NotifyResult struct {
	Backend string        `json:"backend"`
	Options NotifyOptions `json:"options"`
	// Likes of one fresh post by distinct users, Concurrency at once, with
	// notifications recorded (on) and without (off, the baseline): likes
	// per second and per-like latency, medians over the runs.
	OnPerS     float64 `json:"on_likes_per_s"`
	OffPerS    float64 `json:"off_likes_per_s"`
	PerSRatio  float64 `json:"likes_per_s_ratio"` // on / off
	OnP50      float64 `json:"on_p50_ms"`
	OnP99      float64 `json:"on_p99_ms"`
	OffP50     float64 `json:"off_p50_ms"`
	OffP99     float64 `json:"off_p99_ms"`
	P99Ratio   float64 `json:"p99_ratio"` // on / off
	BigLikeP50 float64 `json:"big_group_like_p50_ms"`
	BigLikeP99 float64 `json:"big_group_like_p99_ms"`
	// BigCount is the big group's count after the likes into it: BigGroup
	// plus Likes, exactly (the run fails otherwise).
	BigCount int `json:"big_group_count"`
	// The first page of notifications of a user whose group has 3 actors
	// and of one whose group has BigGroup (Service calls, no HTTP).
	PageSmallP50 float64 `json:"page_3_actors_p50_ms"`
	PageSmallP99 float64 `json:"page_3_actors_p99_ms"`
	PageBigP50   float64 `json:"page_big_group_p50_ms"`
	PageBigP99   float64 `json:"page_big_group_p99_ms"`
	PageRatio    float64 `json:"page_p50_ratio"` // big / small
}

// Text is the human-readable result.
func (r *NotifyResult) Text() string {
	return fmt.Sprintf("notifications, %s, %d likes per phase by distinct users, %d at once (median of %d runs)\n"+
		"  likes, notifications on   %8.0f likes/s   p50 %6.2f ms   p99 %6.2f ms\n"+
		"  likes, --notify=false     %8.0f likes/s   p50 %6.2f ms   p99 %6.2f ms\n"+
		"  on/off   throughput %.2fx   p99 %.2fx\n"+
		"  likes into a group of %d actors   p50 %.2f ms   p99 %.2f ms   (count after: %d)\n"+
		"  first page, a group of 3 actors        p50 %.3f ms   p99 %.3f ms\n"+
		"  first page, a group of %d actors   p50 %.3f ms   p99 %.3f ms   p50 ratio %.2fx\n",
		r.Backend, r.Options.Likes, r.Options.Concurrency, r.Options.Runs,
		r.OnPerS, r.OnP50, r.OnP99, r.OffPerS, r.OffP50, r.OffP99, r.PerSRatio, r.P99Ratio,
		r.Options.BigGroup, r.BigLikeP50, r.BigLikeP99, r.BigCount,
		r.PageSmallP50, r.PageSmallP99, r.Options.BigGroup, r.PageBigP50, r.PageBigP99, r.PageRatio)
}

// Notify measures what notifications cost a like, and a page read with a
// group of BigGroup actors against one of 3.
//
// Each run likes a fresh post of one author by Likes distinct users with
// notifications off, then another with them on (the same users, the same
// concurrency). Then BigGroup likes of one post are loaded in bulk, with
// their group as the stores would have written it, and Likes more users
// like that post through the service. Last, the first notification page of
// that post's author and of an author whose one group has 3 actors are
// read Reads times each, alternately. Every phase checks its counts.
func Notify(ctx context.Context, env *Env, opt NotifyOptions) (*NotifyResult, error) {
	if opt.Likes < 1 || opt.Concurrency < 1 || opt.BigGroup < 1 || opt.Reads < 1 || opt.Runs < 1 || opt.SetNotify == nil {
		return nil, fmt.Errorf("likes, concurrency, big group, reads and runs must be at least 1")
	}
	defer opt.SetNotify(true)
	svc := env.Service
	const authors = 4 // on, off, big group, small group
	n := authors + opt.Likes + opt.BigGroup
	env.logf("loading %d users", n)
	first, err := env.Store.CreateUsers(ctx, "notify-", n, func(int) {})
	if err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	onAuthor, offAuthor, bigAuthor, smallAuthor := first, first+1, first+2, first+3
	liker := func(i int) int64 { return first + authors + int64(i) }
	bulkFirst := liker(opt.Likes) // the big group's bulk actors: the next BigGroup users
	res := &NotifyResult{Backend: env.Backend(), Options: opt}

	likeAll := func(post int64) (Latencies, time.Duration, error) {
		lat := make(Latencies, opt.Likes)
		start := time.Now()
		err := parallel(ctx, opt.Concurrency, opt.Likes, func(ctx context.Context, i int) error {
			t := time.Now()
			err := svc.SetLike(ctx, liker(i), post, true)
			lat[i] = time.Since(t)
			return err
		})
		return lat, time.Since(start), err
	}
	groupCount := func(user int64) (int, int, error) {
		p, err := svc.Notifications(ctx, user, nil, feed.MaxTimelineLimit)
		if err != nil || len(p.List) == 0 {
			return 0, 0, err
		}
		return len(p.List), p.List[0].Count, nil
	}
	var onPerS, offPerS, onP50, onP99, offP50, offP99 []float64
	for run := range opt.Runs {
		order := []bool{false, true} // alternated, so neither phase always runs second
		if run%2 == 1 {
			order = []bool{true, false}
		}
		for _, on := range order {
			author := offAuthor
			if on {
				author = onAuthor
			}
			opt.SetNotify(on)
			p, err := svc.Publish(ctx, author, benchPost(run))
			if err != nil {
				return nil, err
			}
			lat, took, err := likeAll(p.ID)
			if err != nil {
				return nil, fmt.Errorf("like: %w", err)
			}
			perS := float64(opt.Likes) / took.Seconds()
			groups, count, err := groupCount(author)
			if err != nil {
				return nil, err
			}
			if on {
				if groups != run+1 || count != opt.Likes {
					return nil, fmt.Errorf("after %d likes with notifications on: %d groups, the newest counting %d", opt.Likes, groups, count)
				}
				onPerS, onP50, onP99 = append(onPerS, perS), append(onP50, ms(lat.Quantile(.5))), append(onP99, ms(lat.Quantile(.99)))
			} else {
				if groups != 0 {
					return nil, fmt.Errorf("notifications recorded with --notify=false: %d groups", groups)
				}
				offPerS, offP50, offP99 = append(offPerS, perS), append(offP50, ms(lat.Quantile(.5))), append(offP99, ms(lat.Quantile(.99)))
			}
			env.logf("run %d, notifications %v: %.0f likes/s, p99 %.2f ms", run+1, on, perS, ms(lat.Quantile(.99)))
		}
	}
	opt.SetNotify(true)
	res.OnPerS, res.OffPerS = round(Median(onPerS), 1), round(Median(offPerS), 1)
	res.OnP50, res.OnP99, res.OffP50, res.OffP99 = round(Median(onP50), 3), round(Median(onP99), 3), round(Median(offP50), 3), round(Median(offP99), 3)
	res.PerSRatio, res.P99Ratio = round(res.OnPerS/res.OffPerS, 3), round(res.OnP99/res.OffP99, 3)

	// The big group, loaded in bulk, then liked through the service.
	big, err := svc.Publish(ctx, bigAuthor, benchPost(-1))
	if err != nil {
		return nil, err
	}
	env.logf("loading a group of %d likes", opt.BigGroup)
	if err := loadLikeGroup(ctx, env, big, bulkFirst, opt.BigGroup, env.now()); err != nil {
		return nil, fmt.Errorf("load the big group: %w", err)
	}
	lat, _, err := likeAll(big.ID)
	if err != nil {
		return nil, fmt.Errorf("like the big group's post: %w", err)
	}
	res.BigLikeP50, res.BigLikeP99 = round(ms(lat.Quantile(.5)), 3), round(ms(lat.Quantile(.99)), 3)
	if groups, count, err := groupCount(bigAuthor); err != nil {
		return nil, err
	} else if groups != 1 || count != opt.BigGroup+opt.Likes {
		return nil, fmt.Errorf("the big group: %d groups, counting %d, want one counting %d", groups, count, opt.BigGroup+opt.Likes)
	} else {
		res.BigCount = count
	}
	small, err := svc.Publish(ctx, smallAuthor, benchPost(-2))
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		if err := svc.SetLike(ctx, liker(i), small.ID, true); err != nil {
			return nil, err
		}
	}

	// Page reads, alternately.
	var smallLat, bigLat Latencies
	for range opt.Reads {
		for _, u := range []int64{smallAuthor, bigAuthor} {
			t := time.Now()
			p, err := svc.Notifications(ctx, u, nil, feed.DefaultTimelineLimit)
			d := time.Since(t)
			if err != nil {
				return nil, err
			}
			if len(p.List) != 1 || len(p.List[0].Actors) != feed.NotifyActorsShown {
				return nil, fmt.Errorf("the page of user %d: %d groups", u, len(p.List))
			}
			if u == smallAuthor {
				smallLat = append(smallLat, d)
			} else {
				bigLat = append(bigLat, d)
			}
		}
	}
	res.PageSmallP50, res.PageSmallP99 = round(ms(smallLat.Quantile(.5)), 3), round(ms(smallLat.Quantile(.99)), 3)
	res.PageBigP50, res.PageBigP99 = round(ms(bigLat.Quantile(.5)), 3), round(ms(bigLat.Quantile(.99)), 3)
	res.PageRatio = round(ms(bigLat.Quantile(.5))/ms(smallLat.Quantile(.5)), 3)
	return res, nil
}

// loadLikeGroup makes users first..first+n-1 like post p, its like count in
// step, with the like group of its author as the stores write it (one
// group row with the count, one actor row per liker, a millisecond apart,
// the newest at now): what n likes through the service would leave, in a
// few statements.
func loadLikeGroup(ctx context.Context, env *Env, p *feed.Post, first int64, n int, now time.Time) error {
	last := first + int64(n) - 1
	nowMS := now.UnixMilli()
	stmts := []string{
		`INSERT INTO likes (post_id, user_id, created_at, author_id)
			SELECT CAST($1 AS BIGINT), id, CAST($2 AS BIGINT) - (CAST($4 AS BIGINT) - id), CAST($3 AS BIGINT) FROM users WHERE id BETWEEN $5 AND $4`,
		`UPDATE posts SET liked = liked + CAST($2 AS INTEGER) WHERE id = $1`,
		`INSERT INTO notify_groups (user_id, kind, target_id, first_at, latest_at, count)
			VALUES ($1, 'like', $2, CAST($3 AS BIGINT) - CAST($4 AS BIGINT), $3, $4)`,
		`INSERT INTO notify_actors (group_id, actor_id, at)
			SELECT (SELECT max(id) FROM notify_groups WHERE user_id = $1 AND target_id = $2), id, CAST($3 AS BIGINT) - (CAST($4 AS BIGINT) - id)
			FROM users WHERE id BETWEEN $5 AND $4`,
	}
	args := [][]any{
		{p.ID, nowMS, p.UserID, last, first},
		{p.ID, n},
		{p.UserID, p.ID, nowMS, n},
		{p.UserID, p.ID, nowMS, last, first},
	}
	switch s := env.Store.(type) {
	case *SQLiteStore:
		return s.tx(ctx, func(tx *sql.Tx) error {
			for i, q := range stmts {
				if _, err := tx.ExecContext(ctx, dollarsToSQLite(q), args[i]...); err != nil {
					return err
				}
			}
			return nil
		})
	case *PostgresStore:
		tx, err := s.Pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for i, q := range stmts {
			if _, err := tx.Exec(ctx, q, args[i]...); err != nil {
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		return s.analyze(ctx)
	}
	return fmt.Errorf("bench notify: no bulk loader for %T", env.Store)
}

// dollarsToSQLite turns PostgreSQL's $N parameters into SQLite's ?N.
func dollarsToSQLite(q string) string {
	b := []byte(q)
	for i := range b {
		if b[i] == '$' {
			b[i] = '?'
		}
	}
	return string(slices.Clip(b))
}
