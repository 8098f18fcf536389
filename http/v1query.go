package http

import (
	"net/http"
	"strconv"

	feed "github.com/feedd/feedd"
)

// The /v1 API's query parameters, parsed and checked (a bad one is a 400
// naming it).

// queryOne returns the single value of query parameter name, and whether
// it was sent. A parameter sent twice or empty is refused: clients build
// these from our cursors, and an empty one is a bug, not "start over".
func queryOne(r *http.Request, name string) (string, bool, error) {
	vs, ok := r.URL.Query()[name]
	switch {
	case !ok:
		return "", false, nil
	case len(vs) != 1:
		return "", true, feed.Errorf(feed.EINVALID, "%s must be given at most once", name)
	case vs[0] == "":
		return "", true, feed.Errorf(feed.EINVALID, "%s must not be empty", name)
	}
	return vs[0], true, nil
}

// queryLimit parses the limit parameter: absent is 0 (the service's
// default), otherwise an integer from 1 to max.
func queryLimit(r *http.Request, max int) (int, error) {
	v, ok, err := queryOne(r, "limit")
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, feed.Errorf(feed.EINVALID, "limit must be an integer from 1 to %d", max)
	}
	return n, nil
}

// queryAfter parses a user list cursor: the id of the last user returned.
func queryAfter(r *http.Request) (int64, error) {
	v, ok, err := queryOne(r, "cursor")
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, feed.Errorf(feed.EINVALID, "cursor is not one this server returned")
	}
	return n, nil
}

// queryCursor parses an optional native feed cursor (nil when absent).
func queryCursor(r *http.Request) (*feed.Cursor, error) {
	v, ok, err := queryOne(r, "cursor")
	if err != nil || !ok {
		return nil, err
	}
	c, err := feed.DecodeCursor(v)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// ---- output
