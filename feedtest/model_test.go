package feedtest_test

import (
	"testing"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
)

// The reference model passes its own suite.
func TestModel(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T) feed.Inbox { return feedtest.NewModel() })
}
