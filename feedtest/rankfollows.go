package feedtest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// RankFollowStore is what CheckRankFactsFollows reads and writes: a
// store's users, posts and follows, and its RankFacts (sqlite.DB,
// postgres.DB).
type RankFollowStore interface {
	feed.RankFactReader
	FindOrCreateUser(ctx context.Context, phone, nickName string, now time.Time) (*feed.User, error)
	CreatePost(ctx context.Context, p *feed.Post) error
	SetFollow(ctx context.Context, followerID, followeeID int64, follow bool, now time.Time) error
}

// CheckRankFactsFollows checks the follows RankFacts reads (and that
// RankPosts returns its posts, and RankPostRange those of a range): all of a
// viewer's when they are at most feed.RankAllFollows (AllFollows: an
// absent author is not followed), also when it is asked about no post and
// no author (the viewer alone: its likes and follows); past that,
// only those of the page's authors (asked about, or of the posts read),
// with the same answer for those authors either way: when each was
// followed, zero for the one not followed. addFollows must give viewer n
// more follows, of ids no user has.
func CheckRankFactsFollows(t *testing.T, db RankFollowStore, addFollows func(viewer int64, n int)) {
	t.Helper()
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	viewer, err := db.FindOrCreateUser(ctx, "13800000000", "viewer", now)
	must(t, err, "FindOrCreateUser")
	var authors, posts []int64
	for a := range 3 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", a), fmt.Sprintf("a%d", a), now)
		must(t, err, "FindOrCreateUser")
		authors = append(authors, u.ID)
		p := &feed.Post{UserID: u.ID, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now}
		must(t, db.CreatePost(ctx, p), "CreatePost")
		posts = append(posts, p.ID)
	}
	followed := map[int64]time.Time{}
	for i, a := range authors[:2] {
		at := now.Add(-time.Duration(i+1) * time.Hour)
		must(t, db.SetFollow(ctx, viewer.ID, a, true, at), "SetFollow")
		followed[a] = at
	}
	stranger := int64(1 << 40) // asked about, followed by no one
	check := func(many bool) {
		t.Helper()
		rr, err := db.RankFacts(ctx, viewer.ID, posts[1:], []int64{authors[0], stranger}, posts[0], now.Add(-time.Hour))
		must(t, err, "RankFacts")
		if rr.AllFollows == many {
			t.Fatalf("many follows %v: AllFollows %v", many, rr.AllFollows)
		}
		for _, a := range append(slices.Clone(authors), stranger) {
			got, ok := rr.Follows[a]
			if !ok && !rr.AllFollows {
				t.Fatalf("many follows %v: author %d not answered", many, a)
			}
			if !got.Equal(followed[a]) {
				t.Fatalf("many follows %v: author %d followed at %v, want %v", many, a, got, followed[a])
			}
		}
		if many && len(rr.Follows) > 10 {
			t.Fatalf("many follows: %d follows kept, want the page's authors only", len(rr.Follows))
		}
		// RankPosts: RankFacts's posts alone (an id of no post skipped).
		got, err := db.RankPosts(ctx, append(slices.Clone(posts[1:]), 1<<50))
		must(t, err, "RankPosts")
		byID := func(a, b feed.RankCandidate) int { return cmp.Compare(a.PostID, b.PostID) }
		slices.SortFunc(got, byID)
		slices.SortFunc(rr.Posts, byID)
		if len(rr.Posts) != 2 || !slices.Equal(got, rr.Posts) {
			t.Fatalf("RankPosts %v, RankFacts's posts %v (want 2)", got, rr.Posts)
		}
		// RankPostRange: RankPosts of every id of a range.
		last := posts[len(posts)-1]
		inRange, err := db.RankPostRange(ctx, posts[1], last)
		must(t, err, "RankPostRange")
		slices.SortFunc(inRange, byID)
		if !slices.Equal(inRange, got) {
			t.Fatalf("RankPostRange(%d, %d) %v, RankPosts %v", posts[1], last, inRange, got)
		}
		for _, r := range [][2]int64{{last + 1, last + 1000}, {last, posts[0]}} {
			if none, err := db.RankPostRange(ctx, r[0], r[1]); err != nil || len(none) != 0 {
				t.Fatalf("RankPostRange(%d, %d) = %v, %v; want no post", r[0], r[1], none, err)
			}
		}
		// The viewer alone: every follow when few, none when many.
		rr, err = db.RankFacts(ctx, viewer.ID, nil, nil, math.MaxInt64, now.Add(-time.Hour))
		must(t, err, "RankFacts of the viewer alone")
		if rr.AllFollows == many || len(rr.Posts) != 0 {
			t.Fatalf("many follows %v, the viewer alone: AllFollows %v, %d posts", many, rr.AllFollows, len(rr.Posts))
		}
		if !many {
			for _, a := range append(slices.Clone(authors), stranger) {
				if got := rr.Follows[a]; !got.Equal(followed[a]) {
					t.Fatalf("the viewer alone: author %d followed at %v, want %v", a, got, followed[a])
				}
			}
		} else if len(rr.Follows) != 0 {
			t.Fatalf("many follows, the viewer alone: %d follows kept, want none", len(rr.Follows))
		}
	}
	check(false)
	addFollows(viewer.ID, feed.RankAllFollows+100)
	check(true)
}
