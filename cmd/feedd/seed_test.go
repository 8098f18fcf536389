package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestSeed runs a small feedd seed on a fresh SQLite data directory, then
// serves it and logs in as the user it names: their timeline is there,
// with as many posts as it said, and the stream opens on it.
func TestSeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, logs bytes.Buffer
	args := []string{"seed", "--data", dir, "--users", "12", "--follows", "4", "--posts", "3", "--poll-interval", "20ms", "--log-format", "json"}
	if err := run(context.Background(), args, func(string) string { return "" }, &out, &logs); err != nil {
		t.Fatalf("feedd seed: %v\n%s\n%s", err, out.String(), logs.String())
	}
	m := regexp.MustCompile(`phone (\d{11}); the login code is written to the server's log`).FindStringSubmatch(out.String())
	n := regexp.MustCompile(`timeline holds (\d+) posts`).FindStringSubmatch(out.String())
	if m == nil || n == nil || !bytes.Contains(out.Bytes(), []byte("12 users, 48 follows, 36 posts")) {
		t.Fatalf("feedd seed said:\n%s", out.String())
	}
	want, _ := strconv.Atoi(n[1])
	if want == 0 {
		t.Fatalf("the demo user's timeline is empty:\n%s", out.String())
	}

	s := startServer(t, "--data", dir)
	c := newV1Client(t, s)
	token := c.login(m[1])
	if got := c.timeline(token, 7); len(got) != want {
		t.Fatalf("timeline of %s holds %d posts, feedd seed said %d", m[1], len(got), want)
	}
}

// TestSeedRefusesBadInput: a bad size is refused before anything is made.
func TestSeedRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{{"--users", "1"}, {"--users", "5", "--follows", "5"}, {"--posts", "-1"}} {
		dir := filepath.Join(t.TempDir(), "data")
		err := run(context.Background(), append([]string{"seed", "--data", dir}, args...), func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil {
			t.Errorf("feedd seed %v: no error", args)
		}
		if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
			t.Errorf("feedd seed %v made %s", args, dir)
		}
	}
}
