package sqlite

import (
	"errors"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err says that the database cannot take a
// statement for the moment rather than that the statement failed: another
// connection (an operator's sqlite3, a backup tool, another process) held
// the write lock past the busy timeout (SQLITE_BUSY), or the disk, or the
// file's page limit, is full (SQLITE_FULL). The same statement may succeed
// once the lock is released or room is made. The HTTP API answers such
// errors 503 unavailable with Retry-After and counts them as refusals, not
// faults, as it does a PostgreSQL restarting (docs/operations.md, "When
// SQLite is busy or full").
func Unavailable(err error) bool {
	var e *sqlitedrv.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_FULL:
		return true
	}
	return false
}
