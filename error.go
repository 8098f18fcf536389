package feed

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Every error a service returns either carries one of these
// codes (a *Error) or is an unexpected fault, which callers treat as EINTERNAL.
const (
	ECONFLICT     = "conflict"
	EINTERNAL     = "internal"
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	ETOOLARGE     = "too_large"
	// ETOOMANY: over an abuse limit; Error.RetryAfter says when to retry.
	ETOOMANY = "rate_limited"
	// EUNAVAILABLE: a dependency (the code sender, the database) failed or
	// is out of reach; try again.
	EUNAVAILABLE = "unavailable"
	// EBUSY: the server is too busy to serve the request now (load
	// shedding); the client retries after a moment.
	EBUSY = "busy"
)

// Error is a failure a client can act on: Message is shown to the client as is.
type Error struct {
	Code    string
	Message string
	// RetryAfter, for ETOOMANY, EUNAVAILABLE and the ECONFLICT of a code
	// asked for too soon (ResendTooSoon), is how long to wait before trying
	// again (0: not said).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("feed error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, "" for nil
// and EINTERNAL for any other error.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-facing message of err. Internal errors get a
// generic message: their detail belongs in the log only.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrNotFound is a convenience for stores that found no row.
func ErrNotFound(what string) *Error { return Errorf(ENOTFOUND, "%s not found", what) }

// RetryAfter returns the wait of the first *Error in err's chain (0 if none
// or not said).
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
