package feedtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestMedia runs the contract of feed.MediaStore on b.Media (the store of
// b.Posts): blobs shared by uploads, media linked to posts in order and
// released by a post's deletion, the refusals, the expiry and the trash.
func TestMedia(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("Lifecycle", func(t *testing.T) { testMediaLifecycle(t, open(t)) })
	t.Run("Link", func(t *testing.T) { testMediaLink(t, open(t)) })
	t.Run("Erase", func(t *testing.T) { testMediaErase(t, open(t)) })
}

var keySeq int

// newBlob begins a blob of sourceHash, as an upload does before it writes
// the objects.
func newBlob(t testing.TB, b *Backend, sourceHash string, at time.Time) *feed.Blob {
	t.Helper()
	keySeq++
	bl := &feed.Blob{Key: fmt.Sprintf("%032x", keySeq+int(at.UnixNano()%1e9)), ContentType: "image/jpeg", Width: 640, Height: 480, Bytes: 1234, Blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"}
	must(t, b.Media.BeginBlob(context.Background(), bl, sourceHash, at), "BeginBlob")
	return bl
}

// addMedia records an upload of userID on bl.
func addMedia(t testing.TB, b *Backend, userID int64, bl *feed.Blob, at time.Time) *feed.Media {
	t.Helper()
	m := &feed.Media{UserID: userID, Name: fmt.Sprintf("/blogs/1/2/%d-%d.jpg", userID, at.UnixNano()), Alt: "a cat", CreatedAt: at.Truncate(time.Millisecond), Blob: *bl}
	must(t, b.Media.AddMedia(context.Background(), m), "AddMedia")
	if m.ID <= 0 {
		t.Fatalf("AddMedia set id %d", m.ID)
	}
	return m
}

func testMediaLifecycle(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := base()
	u1, u2 := newUser(t, b, 1, now).ID, newUser(t, b, 2, now).ID
	bl := newBlob(t, b, "hash-a", now)
	_, err := b.Media.SourceBlob(ctx, "hash-a")
	wantCode(t, err, feed.ENOTFOUND, "SourceBlob of a pending blob")
	m1 := addMedia(t, b, u1, bl, now)
	got, err := b.Media.SourceBlob(ctx, "hash-a")
	must(t, err, "SourceBlob")
	if *got != *bl {
		t.Fatalf("SourceBlob: %+v, want %+v", got, bl)
	}
	// Another user uploads the same bytes: the blob is shared.
	m2 := addMedia(t, b, u2, got, now.Add(time.Millisecond))
	dup := *m2
	wantCode(t, b.Media.AddMedia(ctx, &dup), feed.ECONFLICT, "AddMedia of a taken name")

	named, err := b.Media.MediaNamed(ctx, m1.Name)
	must(t, err, "MediaNamed")
	if named.ID != m1.ID || named.UserID != u1 || named.Alt != "a cat" || named.PostID != 0 || named.Blob != *bl || !named.CreatedAt.Equal(m1.CreatedAt) {
		t.Fatalf("MediaNamed: %+v, want %+v", named, m1)
	}
	_, err = b.Media.MediaNamed(ctx, "/blogs/0/0/none.jpg")
	wantCode(t, err, feed.ENOTFOUND, "MediaNamed of nothing")

	wantCode(t, b.Media.SetMediaAlt(ctx, m1.ID, u2, "mine now"), feed.ENOTFOUND, "SetMediaAlt by another user")
	must(t, b.Media.SetMediaAlt(ctx, m1.ID, u1, "a black cat"), "SetMediaAlt")
	ms, err := b.Media.Media(ctx, []int64{m1.ID, m2.ID, 1 << 40})
	must(t, err, "Media")
	if len(ms) != 2 || ms[m1.ID].Alt != "a black cat" || ms[m2.ID].UserID != u2 {
		t.Fatalf("Media: %v", ms)
	}

	wantCode(t, b.Media.DeleteUnusedMedia(ctx, m1.ID, u2), feed.EFORBIDDEN, "DeleteUnusedMedia of another's")
	wantCode(t, b.Media.DeleteUnusedMedia(ctx, 1<<40, u2), feed.ENOTFOUND, "DeleteUnusedMedia of nothing")
	must(t, b.Media.DeleteUnusedMedia(ctx, m1.ID, u1), "DeleteUnusedMedia")
	wantTrash(t, b, nil, "after one of two uploads of a blob went")
	must(t, b.Media.DeleteUnusedMedia(ctx, m2.ID, u2), "DeleteUnusedMedia")
	wantTrash(t, b, bl.Objects(), "after the last upload of a blob went")
	_, err = b.Media.SourceBlob(ctx, "hash-a")
	wantCode(t, err, feed.ENOTFOUND, "SourceBlob of a removed blob")
	// An upload that found the blob before it went cannot use it now.
	late := &feed.Media{UserID: u1, Name: "/blogs/9/9/late.jpg", CreatedAt: now, Blob: *bl}
	wantCode(t, b.Media.AddMedia(ctx, late), feed.ENOTFOUND, "AddMedia on a removed blob")

	// A pending blob is expired once abandoned; DropBlob removes one at once.
	pending := newBlob(t, b, "hash-b", now)
	dropped := newBlob(t, b, "hash-c", now)
	must(t, b.Media.DropBlob(ctx, dropped.ID), "DropBlob")
	n, err := b.Media.ExpireMedia(ctx, now.Add(-time.Hour), now.Add(-time.Second), 10)
	must(t, err, "ExpireMedia")
	if n != 0 {
		t.Fatalf("ExpireMedia of a fresh pending blob: %d", n)
	}
	n, err = b.Media.ExpireMedia(ctx, now.Add(-time.Hour), now.Add(time.Second), 10)
	must(t, err, "ExpireMedia")
	if n != 1 {
		t.Fatalf("ExpireMedia of an abandoned blob: %d", n)
	}
	wantTrash(t, b, slices.Concat(bl.Objects(), pending.Objects(), dropped.Objects()), "after the expiry")
	keys, err := b.Media.Trash(ctx, 100)
	must(t, err, "Trash")
	must(t, b.Media.ForgetTrash(ctx, keys[:2]), "ForgetTrash")
	wantTrash(t, b, keys[2:], "after ForgetTrash")
}

// wantTrash checks the trash holds exactly keys.
func wantTrash(t *testing.T, b *Backend, keys []string, what string) {
	t.Helper()
	got, err := b.Media.Trash(context.Background(), 1000)
	must(t, err, "Trash")
	slices.Sort(got)
	want := slices.Sorted(slices.Values(keys))
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("trash %s: %v, want %v", what, got, want)
	}
}

func testMediaLink(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := base()
	u1, u2 := newUser(t, b, 1, now).ID, newUser(t, b, 2, now).ID
	var mine []*feed.Media
	for i := range 3 {
		mine = append(mine, addMedia(t, b, u1, newBlob(t, b, fmt.Sprint("h", i), now), now.Add(time.Duration(i)*time.Millisecond)))
	}
	theirs := addMedia(t, b, u2, newBlob(t, b, "h9", now), now)

	// A post showing another's upload is refused whole.
	p := &feed.Post{UserID: u1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, MediaIDs: []int64{mine[0].ID, theirs.ID}}
	wantCode(t, b.Posts.CreatePost(ctx, p), feed.ECONFLICT, "CreatePost with another's upload")
	b.Jobs()
	ms, err := b.Media.Media(ctx, []int64{mine[0].ID})
	must(t, err, "Media")
	if ms[mine[0].ID].PostID != 0 {
		t.Fatal("a refused post linked an upload")
	}

	p = &feed.Post{UserID: u1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, MediaIDs: []int64{mine[2].ID, mine[0].ID}}
	must(t, b.Posts.CreatePost(ctx, p), "CreatePost")
	q := newPost(t, b, u1, now, "no media")
	// An upload a post shows cannot go in another post, nor be deleted.
	again := &feed.Post{UserID: u1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, MediaIDs: []int64{mine[1].ID, mine[0].ID}}
	wantCode(t, b.Posts.CreatePost(ctx, again), feed.ECONFLICT, "CreatePost with an upload another post shows")
	wantCode(t, b.Media.DeleteUnusedMedia(ctx, mine[0].ID, u1), feed.ECONFLICT, "DeleteUnusedMedia of an upload in a post")
	b.Jobs()

	of, err := b.Media.MediaOfPosts(ctx, []int64{p.ID, q.ID})
	must(t, err, "MediaOfPosts")
	if len(of) != 1 || len(of[p.ID]) != 2 || of[p.ID][0].ID != mine[2].ID || of[p.ID][1].ID != mine[0].ID ||
		of[p.ID][0].PostID != p.ID || of[p.ID][1].Position != 1 || of[p.ID][0].Blob.Blurhash == "" {
		t.Fatalf("MediaOfPosts: %+v", of)
	}

	// Deleting the post releases its uploads; the expiry takes them once
	// they have been unused since before its cutoff, not before.
	must(t, b.Posts.DeletePost(ctx, p.ID, u1), "DeletePost")
	b.Jobs()
	of, err = b.Media.MediaOfPosts(ctx, []int64{p.ID})
	must(t, err, "MediaOfPosts")
	if len(of) != 0 {
		t.Fatalf("MediaOfPosts of a deleted post: %v", of)
	}
	deleted := time.Now()
	n, err := b.Media.ExpireMedia(ctx, deleted.Add(-time.Minute), deleted.Add(-time.Hour), 100)
	must(t, err, "ExpireMedia")
	if n != 0 {
		t.Fatalf("ExpireMedia took %d uploads released just now", n)
	}
	n, err = b.Media.ExpireMedia(ctx, deleted.Add(time.Minute), deleted.Add(-time.Hour), 100)
	must(t, err, "ExpireMedia")
	if n != 4 { // the three uploads of u1, and theirs: none shown by a post
		t.Fatalf("ExpireMedia: %d, want 4", n)
	}
	left, err := b.Media.Media(ctx, []int64{mine[0].ID, mine[1].ID, mine[2].ID, theirs.ID})
	must(t, err, "Media")
	if len(left) != 0 {
		t.Fatalf("uploads left after the expiry: %v", left)
	}
}

func testMediaErase(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := base()
	u1, u2 := newUser(t, b, 1, now).ID, newUser(t, b, 2, now).ID
	shared := newBlob(t, b, "shared", now)
	a := addMedia(t, b, u1, shared, now)
	own := newBlob(t, b, "own", now)
	c := addMedia(t, b, u1, own, now.Add(time.Millisecond))
	other := addMedia(t, b, u2, shared, now.Add(2*time.Millisecond))
	p := &feed.Post{UserID: u1, Title: "t", Content: "c", CreatedAt: now, UpdatedAt: now, MediaIDs: []int64{c.ID}}
	must(t, b.Posts.CreatePost(ctx, p), "CreatePost")
	b.Jobs()
	n, err := b.Media.DeleteUserMedia(ctx, u1, 1)
	must(t, err, "DeleteUserMedia")
	if n != 1 {
		t.Fatalf("DeleteUserMedia with limit 1: %d", n)
	}
	n, err = b.Media.DeleteUserMedia(ctx, u1, 10)
	must(t, err, "DeleteUserMedia")
	if n != 1 {
		t.Fatalf("DeleteUserMedia of the rest: %d", n)
	}
	left, err := b.Media.Media(ctx, []int64{a.ID, c.ID, other.ID})
	must(t, err, "Media")
	if len(left) != 1 || left[other.ID] == nil {
		t.Fatalf("after erasing u1: %v", left)
	}
	wantTrash(t, b, own.Objects(), "after erasing u1 (the shared blob stays)")
}
