// Package testenv gives tests the real services they run against: a fresh
// PostgreSQL database, a Redis URL, a Redis Cluster and a fresh MySQL
// (MariaDB) database for the import's source, from the environment
// that the test script (scripts/test.sh) sets up. When a service is not
// configured the test is skipped, except under CI=true, where it fails.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables read by this package, set by scripts/test.sh.
const (
	EnvPostgres     = "FEED_TEST_DATABASE_URL" // admin URL of a PostgreSQL server
	EnvRedis        = "FEED_TEST_REDIS_URL"    // redis:// URL of a single node
	EnvRedisCluster = "FEED_TEST_REDIS_CLUSTER"
)

func need(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; under CI=true no test skips for a missing service (run scripts/test.sh)", env)
		}
		t.Skipf("%s is not set; run the tests with scripts/test.sh", env)
	}
	return v
}

// Unique returns a short random string for names that must not collide
// between concurrently running tests.
func Unique() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// PostgresURL creates a fresh, empty database and returns its URL. The
// database is dropped when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := need(t, EnvPostgres)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	name := "feedd_test_" + Unique()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgres, err)
	}
	u.Path = "/" + name
	return u.String()
}

// RedisURL returns the URL of the test Redis and a key prefix unique to this
// test: tests share one server and never flush it, so every key a test
// writes must start with the prefix.
func RedisURL(t testing.TB) (redisURL, prefix string) {
	t.Helper()
	return need(t, EnvRedis), "t" + Unique() + ":"
}

// RedisCluster returns the seed addresses of the test Redis Cluster and a
// key prefix unique to this test.
func RedisCluster(t testing.TB) (addrs []string, prefix string) {
	t.Helper()
	v := need(t, EnvRedisCluster)
	return strings.Split(v, ","), "t" + Unique() + ":"
}

// String describes the configured services, for test logs.
func String() string {
	return fmt.Sprintf("postgres=%t redis=%t cluster=%t mysql=%t", os.Getenv(EnvPostgres) != "", os.Getenv(EnvRedis) != "", os.Getenv(EnvRedisCluster) != "", os.Getenv(EnvMySQL) != "")
}
