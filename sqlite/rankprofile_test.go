package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestPackedList: puts and deletions of random tuples, with both signs and
// the extremes, against a map; a put past the bound gives nil.
func TestPackedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []int64{math.MinInt64, -3, -1, 0, 1, 2, 5, 1 << 40, math.MaxInt64}
	for round := range 200 {
		width, max := 2+rng.IntN(2), 1+rng.IntN(6)
		l := packedList{emptyList(), width}
		model := map[int64][]int64{}
		for op := range 40 {
			key := vals[rng.IntN(len(vals))]
			if rng.IntN(3) == 0 {
				l.b = l.del(key)
				delete(model, key)
			} else {
				tup := []int64{key}
				for range width - 1 {
					tup = append(tup, vals[rng.IntN(len(vals))])
				}
				out := l.put(tup, max)
				_, had := model[key]
				if out == nil {
					if had || len(model) < max {
						t.Fatalf("round %d op %d: put %v refused with %d of %d", round, op, tup, len(model), max)
					}
					continue
				}
				l.b = out
				model[key] = tup
			}
			keys := make([]int64, 0, len(model))
			for k := range model {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if l.len() != len(keys) {
				t.Fatalf("round %d op %d: %d tuples, want %d", round, op, l.len(), len(keys))
			}
			for i, k := range keys {
				for f := range width {
					if got := l.field(i, f); got != model[k][f] {
						t.Fatalf("round %d op %d: tuple %d field %d = %d, want %v", round, op, i, f, got, model[k])
					}
				}
			}
		}
	}
}

// TestRankProfile: random likes, unlikes, follows, unfollows, blocks, post
// deletions and rows written by plain SQL (as a bulk load does), by a few
// users; after each, every user's profile holds exactly their likes and
// follows rows, and RankFacts reads the same through the profile as
// through the rows (the profile dropped).
func TestRankProfile(t *testing.T) {
	ctx := t.Context()
	db, err := OpenOptions(ctx, t.TempDir(), Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	rng := rand.New(rand.NewPCG(9, 10))
	now := time.UnixMilli(1_800_000_000_000)
	var users []int64
	for i := range 6 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("1370000000%d", i), fmt.Sprint("u", i), now)
		must(t, err)
		users = append(users, u.ID)
	}
	var posts []feed.Post
	post := func() {
		p := feed.Post{UserID: users[rng.IntN(len(users))], Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
		must(t, db.CreatePost(ctx, &p))
		posts = append(posts, p)
	}
	for range 20 {
		post()
	}
	user := func() int64 { return users[rng.IntN(len(users))] }
	blocks := 0
	for op := range 400 {
		now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		switch k := rng.IntN(20); {
		case k < 8:
			p := posts[rng.IntN(len(posts))]
			if err := db.SetLike(ctx, p.ID, user(), rng.IntN(3) > 0, now); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND && feed.ErrorCode(err) != feed.EFORBIDDEN {
				t.Fatal(err)
			}
		case k < 9:
			p := posts[rng.IntN(len(posts))]
			if _, err := db.ToggleLike(ctx, p.ID, user(), now); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND && feed.ErrorCode(err) != feed.EFORBIDDEN {
				t.Fatal(err)
			}
		case k < 14:
			a, b := user(), user()
			if a != b {
				if err := db.SetFollow(ctx, a, b, rng.IntN(3) > 0, now); err != nil && feed.ErrorCode(err) == feed.EINTERNAL {
					t.Fatal(err)
				}
			}
		case k < 15:
			a, b := user(), user()
			if a != b {
				blocks++
				must(t, db.SetBlock(ctx, a, b, true, now))
				must(t, db.SetBlock(ctx, a, b, false, now))
			}
		case k < 16:
			i := rng.IntN(len(posts))
			p := posts[i]
			must(t, db.DeletePost(ctx, p.ID, p.UserID))
			posts = slices.Delete(posts, i, i+1)
			post()
		case k < 18: // plain SQL, as a bulk load writes
			u := user()
			_, err := db.Write.ExecContext(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id)
				SELECT id, ?, ?, user_id FROM posts ORDER BY random() LIMIT 3 ON CONFLICT DO NOTHING`, u, now.UnixMilli())
			must(t, err)
		default:
			_, err := db.Write.ExecContext(ctx, `UPDATE likes SET created_at = created_at - 1 WHERE user_id = ?`, user())
			must(t, err)
		}
		for _, u := range users {
			checkProfile(t, db, fmt.Sprintf("op %d: user %d", op, u), u, now)
		}
	}
	if blocks == 0 {
		t.Fatal("no block: the test did not reach every case")
	}
}

// checkProfile fails unless u's profile is their likes and follows rows,
// and RankFacts reads the same with and without it.
func checkProfile(t *testing.T, db *DB, what string, u int64, now time.Time) {
	t.Helper()
	ctx := t.Context()
	var likes, follows []byte
	err := db.Read.QueryRowContext(ctx, `SELECT likes, follows FROM rank_profile WHERE user_id = ?`, u).Scan(&likes, &follows)
	if err == sql.ErrNoRows {
		var n int
		must(t, db.Read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM likes WHERE user_id = ?1) + (SELECT count(*) FROM follows WHERE follower_id = ?1)`, u).Scan(&n))
		if n > 0 {
			t.Fatalf("%s: %d likes and follows, no profile", what, n)
		}
		return
	}
	must(t, err)
	list := func(b []byte, width int) string {
		if b == nil {
			return "NULL"
		}
		l := packedList{b, width}
		var out []string
		for i := range l.len() {
			var fs []string
			for f := range width {
				fs = append(fs, fmt.Sprint(l.field(i, f)))
			}
			out = append(out, strings.Join(fs, ","))
		}
		return strings.Join(out, " ")
	}
	var wantLikes, wantFollows string
	must(t, db.Read.QueryRowContext(ctx, `SELECT
		coalesce((SELECT group_concat(post_id || ',' || author_id || ',' || created_at, ' ') FROM (SELECT * FROM likes WHERE user_id = ?1 ORDER BY post_id)), ''),
		coalesce((SELECT group_concat(followee_id || ',' || created_at, ' ') FROM (SELECT * FROM follows WHERE follower_id = ?1 ORDER BY followee_id)), '')`, u).
		Scan(&wantLikes, &wantFollows))
	if got := list(likes, 3); got != wantLikes {
		t.Fatalf("%s: profile likes %q, rows %q", what, got, wantLikes)
	}
	if got := list(follows, 2); got != wantFollows {
		t.Fatalf("%s: profile follows %q, rows %q", what, got, wantFollows)
	}
	since := now.Add(-time.Duration(1+rand.IntN(20)) * time.Second)
	minID := int64(rand.IntN(30))
	authors := []int64{u + 1, u + 2 + int64(rand.IntN(5))} // asked about, whether followed or not
	viaProfile, err := db.RankFacts(ctx, u, nil, authors, minID, since)
	must(t, err)
	sortLikes := func(ls []feed.RankLike) []feed.RankLike {
		ls = slices.Clone(ls)
		slices.SortFunc(ls, func(a, b feed.RankLike) int { return cmp.Compare(a.PostID, b.PostID) })
		return ls
	}
	// The same through the rows, for one list or both: the profile's
	// lists set aside, then put back as they were.
	for _, set := range []string{"likes = NULL", "follows = NULL", "likes = NULL, follows = NULL"} {
		_, err = db.Write.ExecContext(ctx, `UPDATE rank_profile SET `+set+` WHERE user_id = ?`, u)
		must(t, err)
		viaRows, err := db.RankFacts(ctx, u, nil, authors, minID, since)
		must(t, err)
		_, err = db.Write.ExecContext(ctx, `UPDATE rank_profile SET likes = ?, follows = ? WHERE user_id = ?`, likes, follows, u)
		must(t, err)
		if !slices.Equal(sortLikes(viaProfile.Likes), sortLikes(viaRows.Likes)) || fmt.Sprint(viaProfile.Follows) != fmt.Sprint(viaRows.Follows) ||
			viaProfile.AllFollows != viaRows.AllFollows {
			t.Fatalf("%s: RankFacts through the profile %+v, with %s %+v", what, viaProfile, set, viaRows)
		}
	}
}

// Migration 008_rank_profile.sql writes the bounds as numbers (each plus
// one, the rows its rebuilds read): they are this package's.
func TestRankProfileMigration(t *testing.T) {
	body, err := migrationFS.ReadFile("migrations/008_rank_profile.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{
		fmt.Sprintf("FROM likes WHERE user_id = new.user_id LIMIT %d))", likesMax+1),
		fmt.Sprintf("FROM follows WHERE follower_id = new.follower_id LIMIT %d))", followsMax+1),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("008_rank_profile.sql has no %q", want)
		}
	}
	if n := strings.Count(s, "LIMIT "); n != strings.Count(s, fmt.Sprintf("LIMIT %d", likesMax+1))+strings.Count(s, fmt.Sprintf("LIMIT %d", followsMax+1)) {
		t.Errorf("008_rank_profile.sql has a LIMIT other than the bounds")
	}
}

// The aggregate orders its tuples by their first field across the whole
// int64 range (a comparison by subtraction would overflow there).
func TestListAggregateOrder(t *testing.T) {
	db, err := Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b []byte
	must(t, db.Read.QueryRowContext(t.Context(), `SELECT feedd_follows(column1, 7)
		FROM (VALUES (9223372036854775807), (-9223372036854775808), (0), (-1))`).Scan(&b))
	l := packedList{b, 2}
	var got []int64
	for i := range l.len() {
		got = append(got, l.field(i, 0))
	}
	if want := []int64{math.MinInt64, -1, 0, math.MaxInt64}; !slices.Equal(got, want) {
		t.Fatalf("feedd_follows ordered %v, want %v", got, want)
	}
}
