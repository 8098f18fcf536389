package main

import (
	"time"

	feedhttp "github.com/feedd/feedd/http"
)

// The defaults of load shedding (README "Overload"), sized for a small
// machine: enough requests at once to keep two cores and the database busy,
// few enough that a request admitted is answered well within a second.
const (
	defaultMaxReads  = 32
	defaultMaxWrites = 16
	defaultShedWait  = 20 * time.Millisecond
)

// shed is the admission control of the configured limits: a write waits
// ten times as long as a read for its turn, so reads are shed first.
func (c *config) shed() *feedhttp.Shed {
	return &feedhttp.Shed{
		Reads: c.maxReads, Writes: c.maxWrites,
		ReadWait: c.shedWait, WriteWait: 10 * c.shedWait,
		RetryAfter: time.Second,
	}
}
