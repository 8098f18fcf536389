package feedtest

import (
	"fmt"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// The login codes' and sessions' part of TestStores (feed.AuthStore).

func testCodes(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	const ttl, resend, tries = 2 * time.Minute, 60 * time.Second, 5
	save := func(phone, code string, at time.Duration) error {
		return b.Auth.SaveCode(ctx, phone, feed.HashSecret(phone, code), now.Add(at), ttl, resend)
	}
	consume := func(phone, code string, at time.Duration) error {
		return b.Auth.ConsumeCode(ctx, phone, feed.HashSecret(phone, code), now.Add(at), tries)
	}

	// Resend refused within resendAfter, and the refusal changes nothing.
	a := phone(1)
	must(t, save(a, "111111", 0), "SaveCode")
	err := save(a, "222222", 30*time.Second)
	wantCode(t, err, feed.ECONFLICT, "SaveCode 30 s after the last")
	if w := feed.RetryAfter(err); w != resend-30*time.Second {
		t.Fatalf("SaveCode 30 s after the last: RetryAfter %v, want %v", w, resend-30*time.Second)
	}
	wantCode(t, save(a, "222222", resend-time.Millisecond), feed.ECONFLICT, "SaveCode just before resendAfter")
	wantCode(t, consume(a, "222222", 31*time.Second), feed.EINVALID, "ConsumeCode of the refused code")
	// After resendAfter a new code replaces the old one (and its tries).
	must(t, save(a, "333333", resend+time.Second), "SaveCode after resendAfter")
	wantCode(t, consume(a, "111111", resend+2*time.Second), feed.EINVALID, "ConsumeCode of the replaced code")
	must(t, consume(a, "333333", resend+3*time.Second), "ConsumeCode of the new code")
	wantCode(t, consume(a, "333333", resend+4*time.Second), feed.EINVALID, "second ConsumeCode of a used code")

	// No code at all.
	wantCode(t, consume(phone(2), "123456", 0), feed.EINVALID, "ConsumeCode without a code")

	// Wrong tries are counted: the right code still works after maxTries-1.
	c := phone(3)
	must(t, save(c, "424242", 0), "SaveCode")
	for i := 0; i < tries-1; i++ {
		wantCode(t, consume(c, "000000", time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(c, "424242", 2*time.Second), "ConsumeCode after 4 wrong tries")

	// maxTries wrong tries burn the code: the right one is refused too.
	d := phone(4)
	must(t, save(d, "424242", 0), "SaveCode")
	for i := 0; i < tries; i++ {
		wantCode(t, consume(d, fmt.Sprintf("00000%d", i), time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	wantCode(t, consume(d, "424242", 2*time.Second), feed.EINVALID, "ConsumeCode of a burned code")
	// A burned code holds the resend rule, and the refusal says how long
	// to wait: a new code only resendAfter after the burned one was sent.
	err = save(d, "515151", 3*time.Second)
	wantCode(t, err, feed.ECONFLICT, "SaveCode at once after burning")
	if w := feed.RetryAfter(err); w != resend-3*time.Second {
		t.Fatalf("SaveCode 3 s after a burned code: RetryAfter %v, want %v", w, resend-3*time.Second)
	}
	// The new code starts with no tries counted.
	must(t, save(d, "515151", resend), "SaveCode resendAfter after the burned code")
	for i := 0; i < tries-1; i++ {
		wantCode(t, consume(d, "000000", resend+time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(d, "515151", resend+2*time.Second), "ConsumeCode of the new code")

	// Tries of one phone do not count against another.
	e, f := phone(5), phone(6)
	must(t, save(e, "111111", 0), "SaveCode")
	must(t, save(f, "111111", 0), "SaveCode")
	for i := 0; i < tries; i++ {
		wantCode(t, consume(e, "999999", time.Second), feed.EINVALID, "ConsumeCode of a wrong code")
	}
	must(t, consume(f, "111111", 2*time.Second), "ConsumeCode of another phone")

	// Expiry: live just before ttl, refused after it.
	g, h := phone(7), phone(8)
	must(t, save(g, "777777", 0), "SaveCode")
	must(t, save(h, "888888", 0), "SaveCode")
	must(t, consume(g, "777777", ttl-time.Second), "ConsumeCode just before expiry")
	wantCode(t, consume(h, "888888", ttl+time.Second), feed.EINVALID, "ConsumeCode of an expired code")
	// An expired code does not block a new one.
	must(t, save(h, "999999", ttl+2*time.Second), "SaveCode after expiry")
	must(t, consume(h, "999999", ttl+3*time.Second), "ConsumeCode of the new code")
}

func testSessions(t *testing.T, b *Backend) {
	ctx := t.Context()
	now := base()
	const ttl = 30 * time.Minute
	u := newUser(t, b, 1, now)
	v := newUser(t, b, 2, now)
	session := func(token string, at time.Duration) (int64, error) {
		return b.Auth.Session(ctx, feed.HashSecret(token), now.Add(at), ttl)
	}
	create := func(token string, userID int64, expires time.Duration) {
		t.Helper()
		must(t, b.Auth.CreateSession(ctx, feed.HashSecret(token), userID, now, now.Add(expires)), "CreateSession")
	}

	create("tok-a", u.ID, ttl)
	create("tok-b", v.ID, ttl)
	id, err := session("tok-a", time.Minute)
	must(t, err, "Session")
	if id != u.ID {
		t.Fatalf("Session(tok-a) = user %d, want %d", id, u.ID)
	}
	id, err = session("tok-b", time.Minute)
	must(t, err, "Session")
	if id != v.ID {
		t.Fatalf("Session(tok-b) = user %d, want %d", id, v.ID)
	}
	_, err = session("tok-unknown", time.Minute)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session of an unknown token")

	// Expiry without use.
	create("tok-c", u.ID, ttl)
	_, err = session("tok-c", ttl+time.Second)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session after its expiry")

	// Sliding: a use 20 minutes in keeps the session alive past its first
	// expiry, and it expires ttl after the last use.
	create("tok-d", u.ID, ttl)
	_, err = session("tok-d", 20*time.Minute)
	must(t, err, "Session at 20 min")
	_, err = session("tok-d", 45*time.Minute)
	must(t, err, "Session at 45 min (slid from the use at 20 min)")
	_, err = session("tok-d", 45*time.Minute+ttl+time.Second)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session ttl after its last use")

	// Delete, idempotently; other sessions of the user live on.
	create("tok-e", u.ID, ttl)
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-a")), "DeleteSession")
	_, err = session("tok-a", 2*time.Minute)
	wantCode(t, err, feed.EUNAUTHORIZED, "Session after DeleteSession")
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-a")), "DeleteSession again")
	must(t, b.Auth.DeleteSession(ctx, feed.HashSecret("tok-never")), "DeleteSession of an unknown token")
	id, err = session("tok-e", 2*time.Minute)
	must(t, err, "Session of another token of the user")
	if id != u.ID {
		t.Fatalf("Session(tok-e) = user %d, want %d", id, u.ID)
	}
}

// testSessionSweepClock: the sweep of expired sessions that CreateSession
// does judges expiry by the caller's clock, as Session does, not by the
// machine's. Here the service's clock is two days behind the machine's: by
// the machine's clock every session has long expired, by the service's each
// is live, and creating one must not sweep the others.
func testSessionSweepClock(t *testing.T, b *Backend) {
	ctx := t.Context()
	const ttl = 30 * time.Minute
	now := base().Add(-48 * time.Hour)
	u := newUser(t, b, 1, now)
	var tokens []string
	for i := range 5 {
		tok := fmt.Sprintf("tok-behind-%d", i)
		at := now.Add(time.Duration(i) * time.Minute)
		must(t, b.Auth.CreateSession(ctx, feed.HashSecret(tok), u.ID, at, at.Add(ttl)), "CreateSession")
		tokens = append(tokens, tok)
	}
	for _, tok := range tokens {
		id, err := b.Auth.Session(ctx, feed.HashSecret(tok), now.Add(6*time.Minute), ttl)
		must(t, err, fmt.Sprintf("Session(%s) 6 minutes in, after later logins", tok))
		if id != u.ID {
			t.Fatalf("Session(%s) = user %d, want %d", tok, id, u.ID)
		}
	}
	// By the service's clock they do expire: ttl after their last use.
	late := now.Add(6*time.Minute + ttl + time.Second)
	must(t, b.Auth.CreateSession(ctx, feed.HashSecret("tok-late"), u.ID, late, late.Add(ttl)), "CreateSession")
	for _, tok := range tokens {
		_, err := b.Auth.Session(ctx, feed.HashSecret(tok), late, ttl)
		wantCode(t, err, feed.EUNAUTHORIZED, fmt.Sprintf("Session(%s) after its expiry by the service's clock", tok))
	}
	id, err := b.Auth.Session(ctx, feed.HashSecret("tok-late"), late.Add(time.Minute), ttl)
	must(t, err, "Session(tok-late)")
	if id != u.ID {
		t.Fatalf("Session(tok-late) = user %d, want %d", id, u.ID)
	}
}
