package main

import (
	"bytes"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// env is a getenv over a fixed set of variables.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	c, err := parseConfig("serve", nil, env("FEED_WORKERS", "7", "FEED_JOB_TIMEOUT", "3s", "FEED_RESCUE_AFTER", "1m", "FEED_ADDR", "127.0.0.1:9"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.workers != 7 || c.jobTimeout != 3*time.Second || c.rescueAfter != time.Minute || c.addr != "127.0.0.1:9" {
		t.Fatalf("workers %d, job timeout %v, rescue after %v, addr %q", c.workers, c.jobTimeout, c.rescueAfter, c.addr)
	}
	// The command line overrides the environment.
	c, err = parseConfig("serve", []string{"--workers", "2"}, env("FEED_WORKERS", "7"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.workers != 2 {
		t.Fatalf("--workers 2 over FEED_WORKERS=7: %d", c.workers)
	}
}

// TestConfigBadEnv: a malformed FEED_* value is a start-up error that names
// the variable, not a silent fall-back to the default.
func TestConfigBadEnv(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"FEED_WORKERS", "abc"},
		{"FEED_WORKERS", "4.5"},
		{"FEED_PAGE_SIZE", "ten"},
		{"FEED_INBOX_CAP", "99999999999999999999"},
		{"FEED_JOB_TIMEOUT", "5"}, // a duration needs a unit
		{"FEED_POLL_INTERVAL", "fast"},
		{"FEED_RESCUE_AFTER", "-"},
	} {
		for _, cmd := range [][]string{{"serve"}, {"worker"}, {"migrate"}, {"bench", "fanout"}} {
			var out bytes.Buffer
			err := run(t.Context(), cmd, env(c.name, c.value), &out, &out)
			if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.value) {
				t.Errorf("feedd %s with %s=%s: error %v, want one naming the variable and its value", cmd[0], c.name, c.value, err)
			}
		}
	}
	// Every malformed variable is named at once.
	_, err := parseConfig("serve", nil, env("FEED_WORKERS", "abc", "FEED_JOB_TIMEOUT", "5"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "FEED_WORKERS") || !strings.Contains(err.Error(), "FEED_JOB_TIMEOUT") {
		t.Errorf("two malformed variables: %v", err)
	}
	// Help still shows.
	var out bytes.Buffer
	if err := run(t.Context(), []string{"help"}, env("FEED_WORKERS", "abc"), &out, io.Discard); err != nil || !strings.Contains(out.String(), "FEED_WORKERS") {
		t.Errorf("feedd help with FEED_WORKERS=abc: %v\n%s", err, out.String())
	}
}

// TestEnvDefaultBool: the environment fallback parses a value as its flag
// does, so a bool flag refuses a malformed value too.
func TestEnvDefaultBool(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var b bool
	fs.BoolVar(&b, "verbose", false, "")
	if err := envDefault(fs, "verbose", "FEED_VERBOSE", env("FEED_VERBOSE", "yes")); err == nil || !strings.Contains(err.Error(), "FEED_VERBOSE") {
		t.Errorf("FEED_VERBOSE=yes: %v, want an error naming FEED_VERBOSE", err)
	}
	if err := envDefault(fs, "verbose", "FEED_VERBOSE", env("FEED_VERBOSE", "true")); err != nil || !b || fs.Lookup("verbose").DefValue != "true" {
		t.Errorf("FEED_VERBOSE=true: %v, value %v, default %q", err, b, fs.Lookup("verbose").DefValue)
	}
	if err := envDefault(fs, "verbose", "FEED_VERBOSE", env()); err != nil || !b {
		t.Errorf("FEED_VERBOSE unset: %v, value %v", err, b)
	}
}

func TestConfigBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workers", "abc"},
		{"--job-timeout", "5"},
		{"--job-timeout", "0s"},
		{"--page-size", "0"},
		{"--page-size", strconv.Itoa(feed.MaxPageSize + 1)},
		{"--nosuch"},
		{"extra"},
		{"--inbox-layout", "list"},
	} {
		if _, err := parseConfig("serve", args, env(), io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := parseConfig("serve", []string{"--page-size", strconv.Itoa(feed.MaxPageSize)}, env(), io.Discard); err != nil {
		t.Errorf("--page-size %d: %v", feed.MaxPageSize, err)
	}
	for _, l := range []string{"zset", "packed"} {
		if c, err := parseConfig("serve", []string{"--inbox-layout", l}, env(), io.Discard); err != nil || c.inboxLayout != l {
			t.Errorf("--inbox-layout %s: %v", l, err)
		}
	}
}

// TestConfigRedisURL: --redis-url is parsed once, with the configuration;
// a bad one is an error, never a panic when feedd connects.
func TestConfigRedisURL(t *testing.T) {
	c, err := parseConfig("serve", []string{"--redis-url", "redis://127.0.0.1:6390/2"}, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.redisNode == nil || c.redisNode.Addr != "127.0.0.1:6390" || c.redisNode.DB != 2 || c.redisFailover != nil {
		t.Fatalf("node %+v, failover %+v", c.redisNode, c.redisFailover)
	}
	c, err = parseConfig("serve", nil, env("FEED_REDIS_URL", "redis://127.0.0.1:26379?master_name=m&addr=127.0.0.1:26380"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f := c.redisFailover; f == nil || c.redisNode != nil || f.MasterName != "m" || len(f.SentinelAddrs) != 2 {
		t.Fatalf("node %+v, failover %+v", c.redisNode, c.redisFailover)
	}

	for _, u := range []string{
		"127.0.0.1:6379", // no scheme
		"http://127.0.0.1:6379",
		"redis://127.0.0.1:6379/x",
		"redis://127.0.0.1:6379/0?nosuch=1",
		"redis://127.0.0.1:6379/0?master_name=m&nosuch=1",
		"redis://%zz",
		"redis://[::1",
	} {
		for _, cmd := range [][]string{{"serve"}, {"worker"}, {"bench", "fanout"}} {
			var out bytes.Buffer
			args := append(append([]string{}, cmd...), "--redis-url", u)
			if err := run(t.Context(), args, env(), &out, &out); err == nil || !strings.Contains(err.Error(), "--redis-url") {
				t.Errorf("feedd %s --redis-url %q: error %v, want one naming --redis-url", cmd[0], u, err)
			}
			if err := run(t.Context(), cmd, env("FEED_REDIS_URL", u), &out, &out); err == nil || !strings.Contains(err.Error(), "--redis-url") {
				t.Errorf("feedd %s with FEED_REDIS_URL=%q: error %v, want one naming --redis-url", cmd[0], u, err)
			}
		}
	}
	// A configuration that skipped parsing is an error too, not a panic.
	if rdb, err := redisClient(&config{redisURL: "redis://127.0.0.1:6379"}); err == nil || rdb != nil {
		t.Errorf("unparsed --redis-url: client %v, error %v", rdb, err)
	}
}
