package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/hmdp"
)

// HMDPOptions size a synthetic instance of the tutorial's service: what
// feedd bench import imports, and the import tests' larger data.
type HMDPOptions struct {
	Users   int // users (ids 1..Users)
	Follows int // follows per user, on average
	Posts   int // posts per user, on average
	Likes   int // likes per post, on average (in Redis; none without it)
	// Comments per post, on average: about half open a thread, the others
	// reply in one.
	Comments int
	// Seed seeds the choices (0: a fixed seed: the same data every time).
	Seed uint64
	// Progress receives a line per table made (nil: none).
	Progress io.Writer
}

// HMDPData is what MakeHMDP made.
type HMDPData struct {
	Users   int64 `json:"users"`
	Posts   int64 `json:"posts"`
	Follows int64 `json:"follows"`
	Likes   int64 `json:"likes"`
	// Comments counts the replies too.
	Comments int64 `json:"comments"`
	// TopFollowers is the largest number of followers of one user.
	TopFollowers int64 `json:"top_followers"`
}

// MakeHMDP loads the tutorial's schema (hmdp.Schema) into the empty
// database db and fills it: users with a tb_user_info row each, posts
// spread over the last 30 days, a follow graph whose followees are drawn
// from a power law (Zipf, s = 1.1: a few users have a large share of the
// followers, most have few, as in a social network), and, when rdb is
// given, comments in tb_blog_comments, and likes in blog:liked:{blogId}
// under prefix (the tutorial's key
// with the import's --redis-key-prefix). Follows are written in rounds
// over blocks of users, so tb_follow's id order mixes followers as time
// would. Rows go in with multi-row INSERTs on four connections.
func MakeHMDP(ctx context.Context, db *sql.DB, rdb goredis.UniversalClient, prefix string, o HMDPOptions) (HMDPData, error) {
	var d HMDPData
	if o.Users < 2 {
		return d, fmt.Errorf("bench: a synthetic hmdp needs at least 2 users")
	}
	for _, stmt := range strings.Split(hmdp.Schema, ";") {
		if strings.TrimSpace(stripComments(stmt)) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return d, fmt.Errorf("load the tutorial's schema: %w", err)
		}
	}
	seed := o.Seed
	if seed == 0 {
		seed = 1
	}
	now := time.Now().Truncate(time.Second)
	start := now.Add(-30 * 24 * time.Hour)
	n := int64(o.Users)
	stamp := func(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05") + "'" }
	span := now.Sub(start)

	// Users.
	if err := insertRows(ctx, db, "tb_user (id, phone, password, nick_name, icon, create_time, update_time)", n, func(i int64, b *strings.Builder) {
		t := stamp(start.Add(time.Duration(i) * span / time.Duration(4*n)))
		icon := ""
		if i%3 != 0 {
			icon = fmt.Sprintf("/imgs/icons/%d.jpg", i%97)
		}
		fmt.Fprintf(b, "(%d,'%d','','user_%s','%s',%s,%s)", i, 13000000000+i, strconv.FormatInt(i*7919, 36), icon, t, t)
	}); err != nil {
		return d, err
	}
	cities := []string{"Hangzhou", "Shanghai", "Beijing", "Shenzhen", "Chengdu"}
	if err := insertRows(ctx, db, "tb_user_info (user_id, city, introduce)", n, func(i int64, b *strings.Builder) {
		fmt.Fprintf(b, "(%d,'%s','hello from user %d')", i, cities[i%int64(len(cities))], i)
	}); err != nil {
		return d, err
	}
	d.Users = n
	say(o.Progress, "tb_user: %d users", n)

	// Posts, in time order, by random authors.
	posts := n * int64(o.Posts)
	rng := rand.New(rand.NewPCG(seed, 1))
	authors := make([]int64, posts)
	for i := range authors {
		authors[i] = 1 + rng.Int64N(n)
	}
	if err := insertRows(ctx, db, "tb_blog (id, shop_id, user_id, title, images, content, liked, comments, create_time, update_time)", posts, func(i int64, b *strings.Builder) {
		t := stamp(start.Add(span/4 + time.Duration(i)*span*3/4/time.Duration(max(posts, 1))))
		fmt.Fprintf(b, "(%d,%d,%d,'Note %d','/imgs/blogs/%d.jpg','A day out, part %d. The food was good.',0,0,%s,%s)",
			i, 1+i%13, authors[i-1], i, i%101, i, t, t)
	}); err != nil {
		return d, err
	}
	d.Posts = posts
	say(o.Progress, "tb_blog: %d posts", posts)

	// Follows: each user follows a number drawn around o.Follows of
	// distinct others, the followees by a power law.
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 2)), 1.1, 1, uint64(n-1))
	// A power law over ranks; rank r is user scatter(r), so the popular
	// users are spread over the ids.
	scatter := func(r int64) int64 { return (r*2654435761)%n + 1 }
	if gcd(2654435761, n) != 1 { // the scatter must be a bijection
		return d, fmt.Errorf("bench: %d users: choose another number", n)
	}
	fans := make([]int64, n+1)
	const block = 10_000
	var follows [][2]int64
	for lo := int64(1); lo <= n; lo += block {
		hi := min(lo+block-1, n)
		lists := make([][]int64, hi-lo+1)
		rounds := 0
		for u := lo; u <= hi; u++ {
			k := rng.IntN(2*o.Follows + 1) // o.Follows on average
			k = min(k, int(n-1))
			seen := make(map[int64]bool, k)
			for tries := 0; len(seen) < k && tries < 20*k; tries++ {
				f := scatter(int64(zipf.Uint64()))
				if f != u && !seen[f] {
					seen[f] = true
					lists[u-lo] = append(lists[u-lo], f)
				}
			}
			rounds = max(rounds, len(lists[u-lo]))
		}
		for r := range rounds {
			order := rng.Perm(len(lists))
			for _, j := range order {
				if r < len(lists[j]) {
					f := lists[j][r]
					follows = append(follows, [2]int64{lo + int64(j), f})
					fans[f]++
				}
			}
		}
	}
	for _, c := range fans {
		d.TopFollowers = max(d.TopFollowers, c)
	}
	nf := int64(len(follows))
	if err := insertRows(ctx, db, "tb_follow (id, user_id, follow_user_id, create_time)", nf, func(i int64, b *strings.Builder) {
		f := follows[i-1]
		fmt.Fprintf(b, "(%d,%d,%d,%s)", i, f[0], f[1], stamp(start.Add(span/2+time.Duration(i)*span/2/time.Duration(nf))))
	}); err != nil {
		return d, err
	}
	follows = nil
	d.Follows = nf
	say(o.Progress, "tb_follow: %d follows, the most followed user has %d followers", nf, d.TopFollowers)

	// Comments: after each post, a minute apart, by random users; the
	// first opens a thread, each after it opens one or (as often) replies
	// in one of the post's threads, to its top-level comment or a reply.
	type comment struct{ user, blog, parent, answer, at int64 }
	var comments []comment
	crng := rand.New(rand.NewPCG(seed, 4))
	for id := int64(1); id <= posts && o.Comments > 0; id++ {
		at := start.Add(span/4 + time.Duration(id)*span*3/4/time.Duration(posts))
		var threads [][]int64 // each thread's ids, its top-level comment first
		for j := range crng.IntN(2*o.Comments + 1) {
			c := comment{user: 1 + crng.Int64N(n), blog: id, at: at.Add(time.Duration(j+1) * time.Minute).Unix()}
			cid := int64(len(comments)) + 1
			if t := crng.IntN(2 * max(len(threads), 1)); t < len(threads) {
				c.parent, c.answer = threads[t][0], threads[t][crng.IntN(len(threads[t]))]
				threads[t] = append(threads[t], cid)
			} else {
				threads = append(threads, []int64{cid})
			}
			comments = append(comments, c)
		}
	}
	nc := int64(len(comments))
	if err := insertRows(ctx, db, "tb_blog_comments (id, user_id, blog_id, parent_id, answer_id, content, liked, status, create_time, update_time)", nc, func(i int64, b *strings.Builder) {
		c := comments[i-1]
		t := stamp(time.Unix(c.at, 0))
		fmt.Fprintf(b, "(%d,%d,%d,%d,%d,'Comment %d on note %d. Agreed!',%d,0,%s,%s)", i, c.user, c.blog, c.parent, c.answer, i, c.blog, i%7, t, t)
	}); err != nil {
		return d, err
	}
	comments = nil
	d.Comments = nc
	say(o.Progress, "tb_blog_comments: %d comments", nc)

	// Likes, in Redis: blog:liked:{id}, member the user, score the time.
	if rdb == nil || o.Likes <= 0 {
		return d, nil
	}
	lrng := rand.New(rand.NewPCG(seed, 3))
	liked := make([]int, posts+1)
	const pipe = 2000
	for lo := int64(1); lo <= posts; lo += pipe {
		hi := min(lo+pipe-1, posts)
		_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for id := lo; id <= hi; id++ {
				k := lrng.IntN(2*o.Likes + 1)
				at := start.Add(span/4 + time.Duration(id)*span*3/4/time.Duration(posts)).UnixMilli()
				zs := make([]goredis.Z, 0, k)
				seen := map[int64]bool{}
				for len(zs) < k {
					u := 1 + lrng.Int64N(n)
					if seen[u] {
						continue
					}
					seen[u] = true
					zs = append(zs, goredis.Z{Score: float64(at + int64(len(zs)+1)*60_000), Member: strconv.FormatInt(u, 10)})
				}
				if len(zs) > 0 {
					p.ZAdd(ctx, prefix+"blog:liked:"+strconv.FormatInt(id, 10), zs...)
				}
				liked[id] = len(zs)
				d.Likes += int64(len(zs))
			}
			return nil
		})
		if err != nil {
			return d, fmt.Errorf("bench: likes: %w", err)
		}
	}
	// tb_blog.liked, as the tutorial keeps it beside the set.
	for lo := int64(1); lo <= posts; lo += 5000 {
		hi := min(lo+4999, posts)
		var b strings.Builder
		b.WriteString("UPDATE tb_blog SET liked = CASE id")
		for id := lo; id <= hi; id++ {
			fmt.Fprintf(&b, " WHEN %d THEN %d", id, liked[id])
		}
		fmt.Fprintf(&b, " END WHERE id BETWEEN %d AND %d", lo, hi)
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return d, fmt.Errorf("bench: tb_blog.liked: %w", err)
		}
	}
	say(o.Progress, "blog:liked: %d likes", d.Likes)
	return d, nil
}

// insertRows inserts rows 1..n into table (its name and columns) with
// multi-row INSERTs of 2000 rows, four at a time; row writes row i's
// parenthesized values, which must be literals that need no escaping.
func insertRows(ctx context.Context, db *sql.DB, table string, n int64, row func(i int64, b *strings.Builder)) error {
	const per = 2000
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for lo := int64(1); lo <= n && ctx.Err() == nil; lo += per {
		hi := min(lo+per-1, n)
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " VALUES ")
		for i := lo; i <= hi; i++ {
			if i > lo {
				b.WriteByte(',')
			}
			row(i, &b)
		}
		q := b.String()
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := db.ExecContext(ctx, q); err != nil {
				cancel(fmt.Errorf("bench: insert into %s: %w", strings.Fields(table)[0], err))
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
