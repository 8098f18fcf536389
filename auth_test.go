package feed_test

import (
	"crypto/rand"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

// A new token names its user and carries 32 characters of randomness;
// TokenUser reads the id back and refuses anything that is not exactly
// that form.
func TestSessionToken(t *testing.T) {
	tok, err := feed.NewSessionToken(42, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, _ := strings.Cut(tok, ".")
	if id != "42" || len(secret) != 32 {
		t.Fatalf("NewSessionToken(42) = %q, want 42.<32 characters>", tok)
	}
	if again, _ := feed.NewSessionToken(42, rand.Reader); again == tok {
		t.Fatalf("two tokens of user 42 are both %q", tok)
	}
	if u, ok := feed.TokenUser(tok); !ok || u != 42 {
		t.Fatalf("TokenUser(%q) = %d, %v; want 42", tok, u, ok)
	}
	for _, bad := range []string{"", ".", "42", "42.", ".abc", "0.abc", "-1.abc", "+1.abc", "042.abc", "4x.abc",
		"99999999999999999999.abc", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", " 42.abc"} {
		if u, ok := feed.TokenUser(bad); ok {
			t.Errorf("TokenUser(%q) = %d, true; want false", bad, u)
		}
	}
}
