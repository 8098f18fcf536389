package http

import (
	"net/http"
	"strconv"
	"time"

	feed "github.com/feedd/feedd"
)

// outageRetry is the Retry-After of a request refused because a dependency
// is out of reach: a restarting PostgreSQL is back within seconds.
const outageRetry = time.Second

// outage turns an error without a code that Server.Unavailable recognises
// (the database unreachable, restarting, locked or full) into EUNAVAILABLE: a 503 with
// Retry-After in both APIs, counted as a refusal, rather than a 500 logged
// as a fault. Other errors are returned as they are.
func (s *Server) outage(r *http.Request, err error) error {
	if s.Unavailable == nil || feed.ErrorCode(err) != feed.EINTERNAL || !s.Unavailable(err) {
		return err
	}
	s.Log.Debug("request refused: a dependency is unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
	return &feed.Error{Code: feed.EUNAVAILABLE, Message: "the service is unavailable for a moment; try again", RetryAfter: outageRetry}
}

// retryAfter sets the Retry-After of an error that has one (whole seconds,
// rounded up).
func retryAfter(w http.ResponseWriter, err error) {
	if d := feed.RetryAfter(err); d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
}
