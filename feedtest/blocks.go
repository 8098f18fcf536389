package feedtest

import (
	"fmt"
	"sync/atomic"
	"testing"

	feed "github.com/feedd/feedd"
)

// TestBlocks runs what a block means to the blocked user through
// feed.Service on the backend: once B blocks A, A cannot read B's posts
// (ENOTFOUND, as for a missing post), does not find them in B's list or in
// the hot list, cannot like them, and A's likes of B's posts are gone with
// the like counts in step. Others are not affected; unblocking shows the
// posts again. open must return an empty backend on every call.
func TestBlocks(t *testing.T, open func(t *testing.T) *Backend) {
	b := open(t)
	ctx := t.Context()
	var clock atomic.Int64
	clock.Store(base().UnixMilli())
	s := newService(b, &clock)
	now := base()
	owner, attacker, other := newUser(t, b, 1, now).ID, newUser(t, b, 2, now).ID, newUser(t, b, 3, now).ID
	var posts []int64
	for i := range 3 {
		clock.Add(1)
		p, err := s.Publish(ctx, owner, feed.PostInput{Title: fmt.Sprintf("post %d", i), Content: "c"})
		must(t, err, "Publish")
		posts = append(posts, p.ID)
	}
	clock.Add(1)
	mine, err := s.Publish(ctx, attacker, feed.PostInput{Title: "attacker's", Content: "c"})
	must(t, err, "Publish")
	must(t, s.Follow(ctx, attacker, owner, true), "Follow")
	for _, id := range posts[:2] {
		must(t, s.SetLike(ctx, attacker, id, true), "SetLike by the attacker")
		must(t, s.SetLike(ctx, other, id, true), "SetLike by another user")
	}
	must(t, s.SetLike(ctx, owner, mine.ID, true), "SetLike by the owner")
	b.Jobs()

	if changed, err := s.Block(ctx, owner, attacker, true); err != nil || !changed {
		t.Fatalf("Block: changed %v, %v; want a change", changed, err)
	}
	b.Jobs()

	for _, id := range posts {
		_, err := s.Post(ctx, attacker, id)
		wantMessage(t, err, feed.ENOTFOUND, "post not found", "the blocked user reads a post")
		wantMessage(t, s.SetLike(ctx, attacker, id, true), feed.ENOTFOUND, "post not found", "the blocked user likes a post")
		_, err = s.ToggleLike(ctx, attacker, id)
		wantMessage(t, err, feed.ENOTFOUND, "post not found", "the blocked user toggles a like")
		if _, err := s.Post(ctx, other, id); err != nil {
			t.Fatalf("another user reads post %d: %v", id, err)
		}
	}
	// The attacker's likes are gone, the others' stay; counts in step.
	for i, id := range posts {
		p, err := b.Posts.Post(ctx, id)
		must(t, err, "Post")
		want := 0
		if i < 2 {
			want = 1 // the other user's like
		}
		if p.Liked != want {
			t.Fatalf("post %d has %d likes after the block, want %d", id, p.Liked, want)
		}
		liked, err := b.Posts.LikedBy(ctx, attacker, []int64{id})
		must(t, err, "LikedBy")
		if liked[id] {
			t.Fatalf("the blocked user still likes post %d", id)
		}
	}
	// The blocker's own like of the attacker's post is the blocker's to keep.
	if p, err := b.Posts.Post(ctx, mine.ID); err != nil || p.Liked != 1 {
		t.Fatalf("the attacker's post has %v likes (err %v), want 1", p, err)
	}
	if vs, err := s.PostsOfUser(ctx, attacker, owner, 1); err != nil || len(vs) != 0 {
		t.Fatalf("the blocked user lists the owner's posts: %d posts, %v; want none", len(vs), err)
	}
	if vs, err := s.PostsOfUser(ctx, other, owner, 1); err != nil || len(vs) != len(posts) {
		t.Fatalf("another user lists the owner's posts: %d posts, %v; want %d", len(vs), err, len(posts))
	}
	if vs, err := s.PostsOfUser(ctx, owner, owner, 1); err != nil || len(vs) != len(posts) {
		t.Fatalf("the owner lists their own posts: %d posts, %v; want %d", len(vs), err, len(posts))
	}
	hot, err := s.HotPosts(ctx, attacker, 1)
	must(t, err, "HotPosts")
	for _, v := range hot {
		if v.UserID == owner {
			t.Fatalf("the blocked user finds post %d of the owner in the hot list", v.ID)
		}
	}
	page, err := s.Timeline(ctx, attacker, nil, 20)
	must(t, err, "Timeline")
	for _, v := range page.List {
		if v.UserID == owner {
			t.Fatalf("the blocked user's timeline shows post %d of the owner", v.ID)
		}
	}

	if changed, err := s.Block(ctx, owner, attacker, false); err != nil || !changed {
		t.Fatalf("Unblock: changed %v, %v; want a change", changed, err)
	}
	b.Jobs()
	if _, err := s.Post(ctx, attacker, posts[0]); err != nil {
		t.Fatalf("after unblocking, the user reads the post: %v", err)
	}
	must(t, s.SetLike(ctx, attacker, posts[0], true), "SetLike after unblocking")
}
