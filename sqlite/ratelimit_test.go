package sqlite_test

import (
	"testing"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
)

func TestRateStore(t *testing.T) {
	feedtest.TestRateStore(t, func(t *testing.T) feed.RateStore { return open(t) })
}
