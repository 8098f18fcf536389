package postgres_test

import (
	"testing"

	"github.com/feedd/feedd/feedtest"
)

func TestBlocks(t *testing.T) { feedtest.TestBlocks(t, openBackend) }
