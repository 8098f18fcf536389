package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/sqlite"
)

// TestRankOneStatement checks that the one-statement read of a first
// ranked page's inputs (DB.RankInputs) returns what the two statements of
// feed.RankStore (Candidates, then Affinity of the candidates' authors)
// return, for the candidates of an inbox page, in a random world with
// likes inside and outside the affinity window, authors followed and not,
// and a deleted post whose entry is still in the inbox.
func TestRankOneStatement(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	db.Enqueue = noJobs
	ib := &sqlite.Inbox{DB: db, Cap: 1 << 20}
	r := rand.New(rand.NewPCG(7, 7))
	now := time.UnixMilli(1_800_000_000_000)
	viewer, err := db.FindOrCreateUser(ctx, "13800000000", "viewer", now)
	must(t, err)
	var authors []int64
	for a := range 8 {
		u, err := db.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", a), fmt.Sprintf("a%d", a), now)
		must(t, err)
		authors = append(authors, u.ID)
		if a < 6 { // two authors' posts reach the inbox without a follow
			must(t, db.SetFollow(ctx, viewer.ID, u.ID, true, now.Add(-time.Duration(a+1)*24*time.Hour)))
		}
	}
	for i := range 120 {
		at := now.Add(-time.Duration(r.IntN(200)) * time.Hour)
		p := &feed.Post{UserID: authors[r.IntN(len(authors))], Title: "t", Content: "c", CreatedAt: at, UpdatedAt: at}
		must(t, db.CreatePost(ctx, p))
		must(t, ib.Deliver(ctx, feed.Entry{PostID: p.ID, Score: p.Score()}, []int64{viewer.ID}))
		if r.IntN(3) == 0 {
			// Liked up to 100 h after publication: some likes fall before
			// the affinity window although their post is a candidate.
			must(t, db.SetLike(ctx, p.ID, viewer.ID, true, at.Add(time.Duration(r.IntN(100))*time.Hour)))
		}
		for k := range r.IntN(3) {
			must(t, db.SetLike(ctx, p.ID, authors[k], true, at))
		}
		if i == 60 {
			must(t, db.DeletePost(ctx, p.ID, p.UserID))
		}
	}
	since, halfLife := now.Add(-60*time.Hour), 48*time.Hour
	for _, limit := range []int{1, 40, 200} {
		oldest := now.Add(-150 * time.Hour).UnixMilli()
		// The two-statement path.
		page, err := ib.Page(ctx, viewer.ID, feed.Top(), 0, limit)
		must(t, err)
		if i := slices.IndexFunc(page, func(e feed.Entry) bool { return e.Score < oldest }); i >= 0 {
			page = page[:i]
		}
		ids := make([]int64, len(page))
		for i, e := range page {
			ids[i] = e.PostID
		}
		wantCands, err := db.Candidates(ctx, viewer.ID, ids)
		must(t, err)
		var as []int64
		for _, c := range wantCands {
			as = append(as, c.AuthorID)
		}
		slices.Sort(as)
		wantAff, err := db.Affinity(ctx, viewer.ID, slices.Compact(as), since, now, halfLife)
		must(t, err)

		cands, aff, err := db.RankInputs(ctx, viewer.ID, ids, since, now, halfLife)
		must(t, err)
		sameInputs(t, fmt.Sprintf("RankInputs, %d entries", len(ids)), cands, aff, wantCands, wantAff)
		if limit == 200 && (len(wantCands) < 50 || len(wantAff) < 6) {
			t.Fatalf("the world is too small to tell: %d candidates, %d affinities", len(wantCands), len(wantAff))
		}
	}
}

func sameInputs(t *testing.T, what string, cands map[int64]feed.RankCandidate, aff map[int64]feed.Affinity,
	wantCands map[int64]feed.RankCandidate, wantAff map[int64]feed.Affinity) {
	t.Helper()
	if !maps.Equal(cands, wantCands) {
		t.Errorf("%s: candidates %v\nwant %v", what, cands, wantCands)
	}
	if !maps.EqualFunc(aff, wantAff, func(a, b feed.Affinity) bool {
		return math.Abs(a.Likes-b.Likes) < 1e-9 && a.FollowedAt.Equal(b.FollowedAt)
	}) {
		t.Errorf("%s: affinity %v\nwant %v", what, aff, wantAff)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func noJobs(context.Context, *sql.Tx, ...feed.Job) error { return nil }

// TestRankFactsFollows: feedtest.CheckRankFactsFollows.
func TestRankFactsFollows(t *testing.T) {
	db := open(t)
	db.Enqueue = noJobs
	feedtest.CheckRankFactsFollows(t, db, func(viewer int64, n int) {
		_, err := db.Write.ExecContext(t.Context(), `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO follows (follower_id, followee_id, created_at) SELECT ?, (1 << 41) + i, 1 FROM n`, n, viewer)
		must(t, err)
	})
}
