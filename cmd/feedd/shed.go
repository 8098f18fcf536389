package main

import (
	"time"

	feedhttp "github.com/feedd/feedd/http"
)

// The defaults of load shedding (docs/architecture.md "Overload and shedding"), sized for a small
// machine: enough requests at once to keep two cores and the database busy,
// few enough that a request admitted is answered well within a second.
const (
	defaultMaxReads  = 32
	defaultMaxWrites = 16
	defaultShedWait  = 20 * time.Millisecond
	// defaultMaxLag: well under the freshness a user notices (2 s), well
	// over an idle fan-out's (tens of milliseconds).
	defaultMaxLag = 500 * time.Millisecond
)

// shed is the admission control of the configured limits: a write waits
// ten times as long as a read for its turn, so reads are shed first. When
// a works jobs too (a.lag set), the limits tighten while its fan-out lags
// more than --max-lag: the API and the workers share the process's cores
// and, on SQLite, the database's writer. An API process whose workers are
// elsewhere does not: shedding would not help them, and a stopped worker
// would take the API down with it.
func (c *config) shed(a *app) *feedhttp.Shed {
	sh := &feedhttp.Shed{
		Reads: c.maxReads, Writes: c.maxWrites,
		ReadWait: c.shedWait, WriteWait: 10 * c.shedWait,
		RetryAfter: time.Second,
	}
	if a.lag != nil && c.maxLag > 0 {
		sh.Lag, sh.MaxLag = a.lag.get, c.maxLag
	}
	return sh
}
