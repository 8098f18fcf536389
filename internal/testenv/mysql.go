package testenv

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// EnvMySQL is the DSN of a MySQL (MariaDB) server on which tests may
// create databases, set by scripts/test.sh: the tutorial's database for
// feedd import's tests.
const EnvMySQL = "FEED_TEST_MYSQL_DSN"

// MySQLDSN creates a fresh, empty database (utf8mb4) and returns its DSN.
// The database is dropped when the test ends.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(need(t, EnvMySQL))
	if err != nil {
		t.Fatalf("parse %s: %v", EnvMySQL, err)
	}
	cfg.DBName = ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := "feedd_test_" + Unique()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Fatalf("create MySQL database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if db, err := sql.Open("mysql", cfg.FormatDSN()); err == nil {
			db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
			db.Close()
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
