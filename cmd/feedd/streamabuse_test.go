package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// What other users can do to a user's live stream (docs/API.md,
// "Hardening (both APIs)", live streams): nothing. Attacker, victim and
// author are distinct clients (127.0.0.2, .3, .4).

// streamPost waits for the next post event of st and returns its post id;
// it fails the test if the stream ends or nothing comes within d.
func streamPost(t *testing.T, st *sseStream, d time.Duration, what string) int64 {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			if ev.Kind != "post" {
				continue
			}
			var p struct{ ID int64 }
			if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
				t.Fatalf("%s: post event %q: %v", what, ev.Data, err)
			}
			return p.ID
		case <-deadline:
			t.Fatalf("%s: no post event within %v", what, d)
		}
	}
}

// TestOthersCannotEndStream: an unrelated user unblocking the victim (no
// such block: nothing changes) every 50 ms, then blocking and unblocking
// it for real, does not end the victim's live stream, which receives
// every post of the author it follows live meanwhile; the victim's
// stream-open limit (3/1m) is not spent, so it can still open two more.
// The attacker's unblocks are limited per user (--block-limit-user):
// past the limit, 429 with Retry-After.
func TestOthersCannotEndStream(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--stream-open-limit-user", "3/1m", "--block-limit-user", "30/1m")
	attacker, victim, author := s.from("127.0.0.2"), s.from("127.0.0.3"), s.from("127.0.0.4")
	ac, vc, pc := attacker.v1(), victim.v1(), author.v1()
	atok, vtok, ptok := ac.login("13900000001"), vc.login("13900000002"), pc.login("13900000003")
	vID, pID := vc.me(vtok).ID, pc.me(ptok).ID
	vc.want(204, "PUT", "/v1/following/{id}", vtok, nil, nil, pID)

	st := vc.openStream(vtok, "", "127.0.0.3")
	for i := range 20 {
		ac.want(204, "DELETE", "/v1/blocks/{id}", atok, nil, nil, vID)
		if i%5 == 4 {
			id, _ := pc.publishV1(ptok, fmt.Sprintf("during unblocks %d", i))
			if got := streamPost(t, st, 10*time.Second, fmt.Sprintf("post %d during the unblocks", i)); got != id {
				t.Fatalf("stream sent post %d, want %d", got, id)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Blocks that change rows do not end the blocked user's stream either:
	// what the block hides is left out as each event is sent.
	for i := range 4 {
		ac.want(204, "PUT", "/v1/blocks/{id}", atok, nil, nil, vID)
		ac.want(204, "DELETE", "/v1/blocks/{id}", atok, nil, nil, vID)
		id, _ := pc.publishV1(ptok, fmt.Sprintf("after block %d", i))
		if got := streamPost(t, st, 10*time.Second, fmt.Sprintf("post after block %d", i)); got != id {
			t.Fatalf("stream sent post %d, want %d", got, id)
		}
	}
	// 28 block changes so far: two more, then the limit refuses.
	ac.want(204, "DELETE", "/v1/blocks/{id}", atok, nil, nil, vID)
	ac.want(204, "DELETE", "/v1/blocks/{id}", atok, nil, nil, vID)
	r, err := ac.send("DELETE", "/v1/blocks/{id}", atok, nil, vID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the 31st block change of a minute: %d %s (Retry-After %q), want 429 with Retry-After", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	select {
	case _, ok := <-st.events:
		if !ok {
			t.Fatal("the victim's stream ended")
		}
	default:
	}
	// The victim opened one stream this minute: two more are its own.
	vc.openStream(vtok, "", "127.0.0.3")
	vc.openStream(vtok, "", "127.0.0.3")
}

// TestBlockEndsOwnStreamOnlyOnChange: an unblock that changes nothing
// leaves the caller's own stream open; a block that changes a row ends
// it (its client reconnects and reads anew), and leaves the blocked
// user's stream open.
func TestBlockEndsOwnStreamOnlyOnChange(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir())
	a, b := s.from("127.0.0.2"), s.from("127.0.0.3")
	ac, bc := a.v1(), b.v1()
	atok, btok := ac.login("13900000001"), bc.login("13900000002")
	aID, bID := ac.me(atok).ID, bc.me(btok).ID
	bc.want(204, "PUT", "/v1/following/{id}", btok, nil, nil, aID)

	sa, sb := ac.openStream(atok, "", "127.0.0.2"), bc.openStream(btok, "", "127.0.0.3")
	for range 3 {
		ac.want(204, "DELETE", "/v1/blocks/{id}", atok, nil, nil, bID)
	}
	ac.want(204, "PUT", "/v1/blocks/{id}", atok, nil, nil, bID)
	streamEnds(t, sa, 5*time.Second, "the blocker's stream after its block")
	// b no longer follows a (the block removed it), and a's post is not
	// shown to b; b's own post still reaches b's stream.
	ac.publishV1(atok, "after the block")
	id, _ := bc.publishV1(btok, "b's own")
	if got := streamPost(t, sb, 10*time.Second, "the blocked user's stream"); got != id {
		t.Fatalf("the blocked user's stream sent post %d, want its own %d", got, id)
	}
}
