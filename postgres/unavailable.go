package postgres

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that the database is out of reach
// for the moment rather than that a statement failed: no connection could
// be made, a connection was cut, or the server is shutting down, starting
// up or recovering (pg_ctl restart, a failover). The HTTP API answers such
// errors 503 unavailable with Retry-After instead of 500
// (docs/operations.md, "When PostgreSQL restarts").
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception and its subclasses
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true // the server closed the connection mid-statement
	}
	return pgconn.SafeToRetry(err)
}
