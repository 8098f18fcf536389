package feedtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestIdentity runs the contract of an app's own users: identities,
// revocation, ending a user's sessions, API keys, posts under the app's
// foreign ids, batches of follows, and a user's export and erasure by
// kind. open must return a backend with the stores of identity.go,
// apikey.go and account.go set.
func TestIdentity(t *testing.T, open func(t *testing.T) *Backend) {
	t.Run("LinkIdentities", func(t *testing.T) { testLinkIdentities(t, open(t)) })
	t.Run("LinkRace", func(t *testing.T) { testLinkRace(t, open(t)) })
	t.Run("EndSessions", func(t *testing.T) { testEndSessions(t, open(t)) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeys(t, open(t)) })
	t.Run("ForeignPosts", func(t *testing.T) { testForeignPosts(t, open(t)) })
	t.Run("SetFollows", func(t *testing.T) { testSetFollows(t, open(t)) })
	t.Run("ExportErase", func(t *testing.T) { testExportErase(t, open(t)) })
	t.Run("Erasures", func(t *testing.T) { testErasures(t, open(t)) })
}

func names(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%s%d", prefix, n) }
}

func link(t testing.TB, b *Backend, issuer string, subjects []string, profiles []feed.Profile, now time.Time) []feed.Link {
	t.Helper()
	if profiles == nil {
		profiles = make([]feed.Profile, len(subjects))
	}
	links, err := b.Identities.LinkIdentities(context.Background(), issuer, subjects, profiles, names("made_"), now)
	must(t, err, "LinkIdentities")
	if len(links) != len(subjects) {
		t.Fatalf("LinkIdentities returned %d links for %d subjects", len(links), len(subjects))
	}
	for i, l := range links {
		if l.Err != nil || l.UserID <= 0 {
			t.Fatalf("link of %q: %+v", subjects[i], l)
		}
	}
	return links
}

func testLinkIdentities(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ls := link(t, b, "iss-a", []string{"alice", "bob"}, []feed.Profile{{Name: "Alice", Picture: "https://cdn.example/a.png"}, {}}, now)
	if !ls[0].Created || !ls[1].Created || ls[0].UserID == ls[1].UserID {
		t.Fatalf("first links %+v: want two new users", ls)
	}
	alice, bob := getUser(t, b, ls[0].UserID), getUser(t, b, ls[1].UserID)
	if alice.Phone != "" || alice.NickName != "Alice" || alice.Icon != "https://cdn.example/a.png" || bob.NickName != "made_1" {
		t.Fatalf("new users %+v, %+v", alice, bob)
	}
	// Again: the same users; a profile that says nothing new writes nothing,
	// one that does is kept.
	again := link(t, b, "iss-a", []string{"bob", "alice"}, []feed.Profile{{Name: "Bob"}, {Name: "Alice"}}, now)
	if again[0].UserID != bob.ID || again[1].UserID != alice.ID || again[0].Created || again[1].Created {
		t.Fatalf("links again %+v", again)
	}
	if u := getUser(t, b, bob.ID); u.NickName != "Bob" || u.Icon != "" {
		t.Fatalf("bob after his name changed: %+v", u)
	}
	if u := getUser(t, b, alice.ID); u.Icon != "https://cdn.example/a.png" {
		t.Fatalf("alice's picture went with a profile that gave none: %+v", u)
	}
	// Another issuer's "alice" is another user; phone users are apart.
	other := link(t, b, "iss-b", []string{"alice"}, nil, now)
	if other[0].UserID == alice.ID || !other[0].Created {
		t.Fatalf("alice of another issuer: %+v", other)
	}
	p := newUser(t, b, 1, now)
	if p.ID == alice.ID || p.ID == bob.ID {
		t.Fatalf("a phone user took a linked user's id")
	}
	m, err := b.Identities.IdentityUsers(ctx, "iss-a", []string{"alice", "bob", "carol"})
	must(t, err, "IdentityUsers")
	if len(m) != 2 || m["alice"] != alice.ID || m["bob"] != bob.ID {
		t.Fatalf("IdentityUsers = %v", m)
	}
	// Revocation: the time comes back with the next link.
	must(t, b.Identities.Revoke(ctx, alice.ID, now.Add(time.Second)), "Revoke")
	wantCode(t, b.Identities.Revoke(ctx, 1<<40, now), feed.ENOTFOUND, "Revoke of no user")
	got := link(t, b, "iss-a", []string{"alice"}, nil, now)
	if !got[0].RevokedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("RevokedAt = %v, want %v", got[0].RevokedAt, now.Add(time.Second))
	}
}

// testLinkRace: concurrent first links of one identity make one user.
func testLinkRace(t *testing.T, b *Backend) {
	now := base()
	var wg sync.WaitGroup
	ids := make([]int64, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			links, err := b.Identities.LinkIdentities(context.Background(), "iss", []string{"same"}, []feed.Profile{{Name: fmt.Sprint("n", i)}}, names("x"), now)
			if err != nil || links[0].Err != nil {
				t.Errorf("link %d: %v %+v", i, err, links)
				return
			}
			ids[i] = links[0].UserID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent links made users %v", ids)
		}
	}
}

func testEndSessions(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u, v := newUser(t, b, 1, now), newUser(t, b, 2, now)
	for _, s := range []struct {
		hash string
		user int64
	}{{"h1", u.ID}, {"h2", u.ID}, {"h3", v.ID}} {
		must(t, b.Auth.CreateSession(ctx, s.hash, s.user, now, now.Add(time.Hour)), "CreateSession")
	}
	must(t, b.Auth.EndSessions(ctx, u.ID), "EndSessions")
	must(t, b.Auth.EndSessions(ctx, u.ID), "EndSessions again")
	for _, h := range []string{"h1", "h2"} {
		_, err := b.Auth.Session(ctx, h, now, time.Hour)
		wantCode(t, err, feed.EUNAUTHORIZED, "an ended session")
	}
	if id, err := b.Auth.Session(ctx, "h3", now, time.Hour); err != nil || id != v.ID {
		t.Fatalf("another user's session: %d, %v", id, err)
	}
}

func testAPIKeys(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	k, err := b.APIKeys.CreateAPIKey(ctx, "backend", "hash-1", now)
	must(t, err, "CreateAPIKey")
	if k.ID <= 0 || k.Name != "backend" || !k.CreatedAt.Equal(now) || !k.UsedAt.IsZero() || !k.RevokedAt.IsZero() {
		t.Fatalf("new key %+v", k)
	}
	_, err = b.APIKeys.CreateAPIKey(ctx, "backend", "hash-2", now)
	wantCode(t, err, feed.ECONFLICT, "a second live key of one name")
	got, err := b.APIKeys.APIKeyByHash(ctx, "hash-1")
	must(t, err, "APIKeyByHash")
	if got.ID != k.ID {
		t.Fatalf("APIKeyByHash = %+v", got)
	}
	_, err = b.APIKeys.APIKeyByHash(ctx, "hash-2")
	wantCode(t, err, feed.ENOTFOUND, "the hash of no key")
	must(t, b.APIKeys.TouchAPIKey(ctx, k.ID, now.Add(time.Minute)), "TouchAPIKey")
	must(t, b.APIKeys.RevokeAPIKey(ctx, "backend", now.Add(2*time.Minute)), "RevokeAPIKey")
	wantCode(t, b.APIKeys.RevokeAPIKey(ctx, "backend", now), feed.ENOTFOUND, "revoking a revoked key")
	_, err = b.APIKeys.APIKeyByHash(ctx, "hash-1")
	wantCode(t, err, feed.ENOTFOUND, "a revoked key")
	// The name is free again: the rotation of a key.
	k2, err := b.APIKeys.CreateAPIKey(ctx, "backend", "hash-3", now)
	must(t, err, "CreateAPIKey after a revocation")
	keys, err := b.APIKeys.APIKeys(ctx)
	must(t, err, "APIKeys")
	if len(keys) != 2 || keys[0].ID != k.ID || keys[1].ID != k2.ID || !keys[0].UsedAt.Equal(now.Add(time.Minute)) ||
		!keys[0].RevokedAt.Equal(now.Add(2*time.Minute)) || !keys[1].RevokedAt.IsZero() {
		t.Fatalf("APIKeys = %+v %+v", keys[0], keys[len(keys)-1])
	}
}

func testForeignPosts(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := newUser(t, b, 1, now)
	p := &feed.Post{UserID: u.ID, Title: "first", Content: "c", CreatedAt: now, UpdatedAt: now, ForeignID: "app-1"}
	created, err := b.Posts.CreateForeignPost(ctx, p)
	must(t, err, "CreateForeignPost")
	if !created || p.ID <= 0 {
		t.Fatalf("first: created %v, %+v", created, p)
	}
	if jobs := b.Jobs(); len(jobs) != 1 {
		t.Fatalf("first publish enqueued %v", jobs)
	}
	q := &feed.Post{UserID: u.ID, Title: "retry", Content: "c", CreatedAt: now.Add(time.Second), UpdatedAt: now, ForeignID: "app-1"}
	created, err = b.Posts.CreateForeignPost(ctx, q)
	must(t, err, "CreateForeignPost again")
	if created || q.ID != p.ID || q.Title != "first" || !q.CreatedAt.Equal(now) || q.ForeignID != "app-1" {
		t.Fatalf("again: created %v, %+v", created, q)
	}
	wantNoJobs(t, b, "a repeated foreign id")
	got, err := b.Posts.PostByForeignID(ctx, "app-1")
	must(t, err, "PostByForeignID")
	if got.ID != p.ID || got.ForeignID != "app-1" {
		t.Fatalf("PostByForeignID = %+v", got)
	}
	_, err = b.Posts.PostByForeignID(ctx, "app-2")
	wantCode(t, err, feed.ENOTFOUND, "no post of that foreign id")
	if plain := newPost(t, b, u.ID, now, "plain"); getPost(t, b, plain.ID).ForeignID != "" {
		t.Fatalf("a post without foreign id has one")
	}
	b.Jobs()
	// Concurrent publishes of one foreign id store one post.
	var wg sync.WaitGroup
	ids := make([]int64, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &feed.Post{UserID: u.ID, Title: fmt.Sprint("race ", i), Content: "c", CreatedAt: now, UpdatedAt: now, ForeignID: "app-race"}
			if _, err := b.Posts.CreateForeignPost(context.Background(), p); err != nil {
				t.Errorf("CreateForeignPost %d: %v", i, err)
			}
			ids[i] = p.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent publishes of one foreign id made posts %v", ids)
		}
	}
	if jobs := b.Jobs(); len(jobs) != 1 {
		t.Fatalf("concurrent publishes enqueued %d jobs, want 1", len(jobs))
	}
}

func testSetFollows(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	ids := newUsers(t, b, 4, now)
	a, x, y, blocker := ids[0], ids[1], ids[2], ids[3]
	_, err := b.Social.SetBlock(ctx, blocker, a, true, now)
	must(t, err, "SetBlock")
	b.Jobs()
	errs, err := b.Follows.SetFollows(ctx, []feed.FollowChange{
		{FollowerID: a, FolloweeID: x, Follow: true},
		{FollowerID: a, FolloweeID: 1 << 40, Follow: true},
		{FollowerID: a, FolloweeID: blocker, Follow: true},
		{FollowerID: a, FolloweeID: y, Follow: true},
		{FollowerID: a, FolloweeID: x, Follow: true}, // again: nothing changes
	}, now)
	must(t, err, "SetFollows")
	for i, want := range []string{"", feed.ENOTFOUND, feed.EFORBIDDEN, "", ""} {
		wantCode(t, errs[i], want, fmt.Sprintf("change %d", i))
	}
	if !isFollowing(t, b, a, x) || !isFollowing(t, b, a, y) || isFollowing(t, b, a, blocker) {
		t.Fatal("the follows made are not the good changes'")
	}
	wantCounts(t, b, a, 0, 2)
	wantCounts(t, b, x, 1, 0)
	if jobs := b.Jobs(); len(jobs) != 2 {
		t.Fatalf("SetFollows enqueued %v, want a job per follow made", jobs)
	}
	errs, err = b.Follows.SetFollows(ctx, []feed.FollowChange{{FollowerID: a, FolloweeID: x}, {FollowerID: a, FolloweeID: blocker}}, now)
	must(t, err, "SetFollows (unfollows)")
	wantCode(t, errs[0], "", "unfollow")
	wantCode(t, errs[1], "", "unfollow of a user never followed")
	wantCounts(t, b, a, 0, 1)
	wantCounts(t, b, x, 0, 0)
}

// exportAll reads every item of kind.
func exportAll(t testing.TB, b *Backend, kind string, userID int64) []feed.ExportItem {
	t.Helper()
	var all []feed.ExportItem
	var after int64
	for {
		items, next, err := b.Accounts.ExportPage(context.Background(), kind, userID, after, 2)
		must(t, err, "ExportPage "+kind)
		all = append(all, items...)
		if next == 0 {
			return all
		}
		after = next
	}
}

// testExportErase: a user's data of each kind is exported, then erased
// with the counts it moved (ErasePage, ErasePost), leaving others' data.
func testExportErase(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := link(t, b, "iss", []string{"u"}, []feed.Profile{{Name: "U"}}, now)[0].UserID
	ids := newUsers(t, b, 3, now)
	v, w, z := ids[0], ids[1], ids[2]
	var posts []*feed.Post
	for i := range 3 {
		posts = append(posts, newPost(t, b, u, now.Add(time.Duration(i)*time.Millisecond), fmt.Sprint("p", i)))
	}
	vp := newPost(t, b, v, now, "v's")
	must(t, b.Posts.SetLike(ctx, vp.ID, u, true, now), "SetLike")
	must(t, b.Posts.SetLike(ctx, posts[0].ID, v, true, now), "SetLike of u's post")
	must(t, b.Follows.SetFollow(ctx, u, v, true, now), "SetFollow")
	must(t, b.Follows.SetFollow(ctx, u, w, true, now), "SetFollow")
	must(t, b.Follows.SetFollow(ctx, w, u, true, now), "SetFollow")
	must(t, b.Social.SetMute(ctx, u, z, true, now), "SetMute")
	must(t, b.Social.SetMute(ctx, z, u, true, now), "SetMute")
	_, err := b.Social.SetBlock(ctx, u, z, true, now)
	must(t, err, "SetBlock")
	must(t, b.Filters.SetMutedWord(ctx, u, "spoiler", true, now), "SetMutedWord")
	c := &feed.Comment{PostID: vp.ID, UserID: u, Text: "nice", CreatedAt: now, UpdatedAt: now}
	must(t, b.Comments.CreateComment(ctx, c), "CreateComment")
	// Markers and push subscriptions live in the same store.
	markers, ok1 := b.Accounts.(feed.MarkerStore)
	pushes, ok2 := b.Accounts.(feed.PushStore)
	if !ok1 || !ok2 {
		t.Fatal("the account store keeps no markers or push subscriptions")
	}
	must(t, markers.PutMarkers(ctx, u, []feed.MarkerPut{{M: feed.Marker{Timeline: feed.MarkerTimeline, LastReadID: vp.ID,
		Position: feed.Entry{PostID: vp.ID, Score: vp.Score()}, Version: 1, UpdatedAt: now}}}), "PutMarkers")
	sub := &feed.PushSubscription{UserID: u, Endpoint: "https://push.example/u", P256dh: "k", Auth: "a", CreatedAt: now}
	must(t, pushes.SavePushSubscription(ctx, sub), "SavePushSubscription")
	b.Jobs()

	for kind, want := range map[string]int{"identities": 1, "profile": 1, "posts": 3, "comments": 1, "likes": 1,
		"following": 2, "followers": 1, "mutes": 1, "blocks": 1, "muted_words": 1, "reports": 0, "markers": 1} {
		if got := exportAll(t, b, kind, u); len(got) != want {
			t.Fatalf("export of %s: %d items %v, want %d", kind, len(got), got, want)
		}
	}
	if p := exportAll(t, b, "posts", u)[0]; p["title"] != "p0" || p["id"] != posts[0].ID {
		t.Fatalf("exported post %v", p)
	}

	for _, p := range posts {
		must(t, b.Accounts.ErasePost(ctx, p.ID), "ErasePost")
		must(t, b.Accounts.ErasePost(ctx, p.ID), "ErasePost again")
	}
	wantNoJobs(t, b, "ErasePost")
	for _, k := range feed.DataKinds {
		if !k.Erase || k.Name == "posts" || k.Name == "inbox" || k.Name == "reposts" || k.Name == "media" { // the Service's (eraseSome)
			continue
		}
		for {
			_, more, err := b.Accounts.ErasePage(ctx, k.Name, u, 1, now)
			must(t, err, "ErasePage "+k.Name)
			if !more {
				break
			}
		}
	}
	for _, k := range feed.DataKinds {
		if k.Export {
			if got := exportAll(t, b, k.Name, u); len(got) != 0 {
				t.Fatalf("after the erasure, %s still has %v", k.Name, got)
			}
		}
	}
	if subs, err := pushes.PushSubscriptions(ctx, u); err != nil || len(subs) != 0 {
		t.Fatalf("the erased user's push subscriptions: %v %v", subs, err)
	}
	_, err = b.Users.User(ctx, u)
	wantCode(t, err, feed.ENOTFOUND, "the erased user")
	if p := getPost(t, b, vp.ID); p.Liked != 0 || p.Comments != 0 {
		t.Fatalf("v's post after u's like and comment went: %+v", p)
	}
	wantCounts(t, b, v, 0, 0)
	wantCounts(t, b, w, 0, 0)
	if ms, err := b.Social.Muted(ctx, z, 0, 10); err != nil || len(ms) != 0 {
		t.Fatalf("z's mute of the erased user: %v %v", ms, err)
	}
	if m, err := b.Identities.IdentityUsers(ctx, "iss", []string{"u"}); err != nil || len(m) != 0 {
		t.Fatalf("the erased user's identity: %v %v", m, err)
	}
}

func testErasures(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	u := newUser(t, b, 1, now)
	e, err := b.Accounts.StartErasure(ctx, u.ID, now)
	must(t, err, "StartErasure")
	if e.ID <= 0 || e.UserID != u.ID || e.Step != "" || e.Done() {
		t.Fatalf("new erasure %+v", e)
	}
	if jobs := b.Jobs(); len(jobs) != 1 || jobs[0] != (feed.EraseJob{ErasureID: e.ID}) {
		t.Fatalf("StartErasure enqueued %v", jobs)
	}
	again, err := b.Accounts.StartErasure(ctx, u.ID, now)
	must(t, err, "StartErasure again")
	if again.ID != e.ID {
		t.Fatalf("a second erasure %d under way beside %d", again.ID, e.ID)
	}
	wantNoJobs(t, b, "StartErasure of an erasure under way")
	_, err = b.Accounts.StartErasure(ctx, 1<<40, now)
	wantCode(t, err, feed.ENOTFOUND, "StartErasure of no user")
	e.Step, e.Cursor, e.Counts = "posts", "7:100", map[string]int{"sessions": 2, "posts": 1}
	must(t, b.Accounts.SaveErasure(ctx, e, now.Add(time.Second)), "SaveErasure")
	got, err := b.Accounts.Erasure(ctx, e.ID)
	must(t, err, "Erasure")
	if got.Step != "posts" || got.Cursor != "7:100" || got.Counts["posts"] != 1 || got.Counts["sessions"] != 2 || !got.UpdatedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("Erasure = %+v", got)
	}
	e.FinishedAt = now.Add(2 * time.Second)
	must(t, b.Accounts.SaveErasure(ctx, e, now.Add(2*time.Second)), "SaveErasure (done)")
	if got, _ := b.Accounts.Erasure(ctx, e.ID); !got.Done() {
		t.Fatalf("a finished erasure is not done: %+v", got)
	}
	_, err = b.Accounts.Erasure(ctx, e.ID+1000)
	wantCode(t, err, feed.ENOTFOUND, "Erasure of none")
}
