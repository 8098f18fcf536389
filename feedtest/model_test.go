package feedtest_test

import (
	"testing"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
)

// The reference model passes its own suite; with a cap, it keeps it exactly.
func TestModel(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T, cap int) feed.Inbox {
		if cap == 0 {
			return feedtest.NewModel()
		}
		return feedtest.NewCappedModel(cap)
	}, func(int) int { return 0 })
}
