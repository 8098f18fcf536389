// Package feedtest holds the conformance suites that every feedd backend
// runs: TestInbox for feed.Inbox, TestStores for the store interfaces and
// TestFeed for the follow feed served by feed.Service on top of them. A
// backend's own tests call them with a function that opens a fresh, empty
// instance:
//
//	func TestInbox(t *testing.T) {
//		feedtest.TestInbox(t, func(t *testing.T) feed.Inbox { ... })
//	}
//
// The randomized parts log their seed; set FEEDTEST_SEED to replay one.
package feedtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// EnvSeed names the environment variable that fixes the seed of the
// randomized tests, to reproduce a failure.
const EnvSeed = "FEEDTEST_SEED"

// newRand returns a seeded generator and logs the seed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(EnvSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvSeed, v, err)
		}
		seed = s
	}
	t.Logf("random seed %d (rerun with %s=%d)", seed, EnvSeed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// wantCode fails t unless err carries the error code want ("" for nil).
func wantCode(t testing.TB, err error, want, what string) {
	t.Helper()
	if got := feed.ErrorCode(err); got != want {
		t.Fatalf("%s: error code %q (err %v), want %q", what, got, err, want)
	}
}

// must fails t on an unexpected error.
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func fmtEntries(es []feed.Entry) string {
	s := "["
	for i, e := range es {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d/%d", e.Score, e.PostID)
	}
	return s + "]"
}
