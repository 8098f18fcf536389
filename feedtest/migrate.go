package feedtest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/rank"
)

// LikeAuthorStore is what CheckLikesAuthored reads and writes: the likes'
// side of a store (sqlite.DB, postgres.DB).
type LikeAuthorStore interface {
	Affinity(ctx context.Context, viewerID int64, authorIDs []int64, since, now time.Time, halfLife time.Duration) (map[int64]rank.Affinity, error)
	SetLike(ctx context.Context, postID, userID int64, like bool, now time.Time) error
	ToggleLike(ctx context.Context, postID, userID int64, now time.Time) (bool, error)
}

// Like is a row of a store's likes, as CheckLikesAuthored reads them.
type Like struct {
	PostID, AuthorID int64
	At               int64 // ms
}

// CheckLikesAuthored checks a store migrated from before likes kept their
// post's author, whose data was users 1-3, post 1 by user 2 and post 2 by
// user 3, and user 1's likes of post 1 (at ms 10) and post 2 (at ms 20):
// the likes' rows (read by readLikes, a viewer's) and the ranked
// timeline's read (Affinity) see those likes with their authors, and the
// likes made afterwards by SetLike and ToggleLike have theirs too.
func CheckLikesAuthored(t *testing.T, db LikeAuthorStore, readLikes func(viewer int64) ([]Like, error)) {
	t.Helper()
	ctx := t.Context()
	likes := func(viewer int64) []Like {
		t.Helper()
		ls, err := readLikes(viewer)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(ls, func(a, b Like) int { return cmp.Compare(a.PostID, b.PostID) })
		return ls
	}
	if got, want := likes(1), []Like{{PostID: 1, AuthorID: 2, At: 10}, {PostID: 2, AuthorID: 3, At: 20}}; !slices.Equal(got, want) {
		t.Fatalf("viewer 1's likes after the migration = %v, want %v", got, want)
	}
	aff, err := db.Affinity(ctx, 1, []int64{2, 3}, time.UnixMilli(0), time.UnixMilli(20), time.Hour)
	if err != nil || aff[2].Likes <= 0 || aff[3].Likes <= 0 {
		t.Fatalf("Affinity after the migration = %v, %v; want likes of authors 2 and 3", aff, err)
	}
	if err := db.SetLike(ctx, 1, 3, true, time.UnixMilli(30)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ToggleLike(ctx, 2, 2, time.UnixMilli(40)); err != nil {
		t.Fatal(err)
	}
	if got, want := likes(3), []Like{{PostID: 1, AuthorID: 2, At: 30}}; !slices.Equal(got, want) {
		t.Fatalf("SetLike's like = %v, want %v", got, want)
	}
	if got, want := likes(2), []Like{{PostID: 2, AuthorID: 3, At: 40}}; !slices.Equal(got, want) {
		t.Fatalf("ToggleLike's like = %v, want %v", got, want)
	}
}
