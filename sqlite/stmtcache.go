package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// Prepared statements: SQLite spends most of a small statement's time
// parsing and planning its text, and the driver parses it again at every
// call made through database/sql's Exec and Query. On the one writer
// connection that parsing is on every write's critical path: under
// concurrent small writes (logins, likes, follows, and River's job
// inserts, fetches and completions on the same connection) it was a large
// share of the process's CPU (BENCHMARKS.md, "Small writes (group
// commit)").
//
// So each connection keeps the statements it prepared, by their text, and
// hands them out again: a connection that offers no ExecContext or
// QueryContext of its own makes database/sql prepare every statement,
// execute it and close it, and closing a statement puts it back. A
// statement is used by one caller at a time (a second caller of the same
// text while the first still reads its rows prepares one of its own), and
// the driver resets it after each use. Every query feedd and River send
// is a constant text, so the cache stays small; past maxCached statements
// a connection stops keeping new ones.

// maxCached is the most statements one connection keeps.
const maxCached = 256

// openCached opens a pool of dsn's connections that keep their prepared
// statements.
func openCached(dsn string) (*sql.DB, error) {
	probe, err := sql.Open("sqlite", dsn) // only to get the driver
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close()
	return sql.OpenDB(&cachingConnector{dsn: dsn, drv: drv}), nil
}

type cachingConnector struct {
	dsn string
	drv driver.Driver
}

func (c *cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &cachingConn{conn: conn, free: map[string][]*cachedStmt{}}, nil
}

func (c *cachingConnector) Driver() driver.Driver { return c.drv }

// cachingConn is a driver connection whose statements are kept for reuse.
// database/sql calls a connection from one goroutine at a time; mu is for
// a statement closed while another call is under way.
type cachingConn struct {
	conn driver.Conn

	mu   sync.Mutex
	free map[string][]*cachedStmt // text -> statements not in use
	kept int                      // statements kept, in use or free
}

// The interfaces the driver's connection implements, other than
// ExecerContext and QueryerContext (see Prepared statements above).
var (
	_ driver.ConnPrepareContext = (*cachingConn)(nil)
	_ driver.ConnBeginTx        = (*cachingConn)(nil)
	_ driver.Pinger             = (*cachingConn)(nil)
	_ driver.SessionResetter    = (*cachingConn)(nil)
	_ driver.Validator          = (*cachingConn)(nil)
)

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.mu.Lock()
	if fs := c.free[query]; len(fs) > 0 {
		s := fs[len(fs)-1]
		c.free[query] = fs[:len(fs)-1]
		c.mu.Unlock()
		s.inUse = true
		return s, nil
	}
	keep := c.kept < maxCached
	if keep {
		c.kept++
	}
	c.mu.Unlock()
	ds, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		if keep {
			c.mu.Lock()
			c.kept--
			c.mu.Unlock()
		}
		return nil, err
	}
	if !keep {
		return ds, nil
	}
	return &cachedStmt{Stmt: ds, conn: c, query: query, inUse: true}, nil
}

// Close closes the connection's statements, then the connection.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	var errs []error
	for _, fs := range c.free {
		for _, s := range fs {
			errs = append(errs, s.Stmt.Close())
		}
	}
	c.free, c.kept = nil, 0
	c.mu.Unlock()
	return errors.Join(append(errs, c.conn.Close())...)
}

func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error {
	return c.conn.(driver.Pinger).Ping(ctx)
}

func (c *cachingConn) ResetSession(ctx context.Context) error {
	return c.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool { return c.conn.(driver.Validator).IsValid() }

// cachedStmt is a statement of a cachingConn: closing it puts it back.
type cachedStmt struct {
	driver.Stmt
	conn  *cachingConn
	query string
	inUse bool
}

// The driver's statements run with a context.
var (
	_ driver.StmtExecContext  = (*cachedStmt)(nil)
	_ driver.StmtQueryContext = (*cachedStmt)(nil)
)

func (s *cachedStmt) Close() error {
	if !s.inUse {
		return nil
	}
	s.inUse = false
	c := s.conn
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.free == nil { // the connection is closed
		return s.Stmt.Close()
	}
	c.free[s.query] = append(c.free[s.query], s)
	return nil
}

func (s *cachedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *cachedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
