package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestRankSnapshotsFlag: --rank-snapshots takes auto, memory, database or
// redis, the last only with a Redis to keep them in.
func TestRankSnapshotsFlag(t *testing.T) {
	for _, v := range []string{"auto", "memory", "database"} {
		if c, err := parseConfig("serve", []string{"--rank-snapshots", v}, env(), io.Discard); err != nil || c.rankSnapshots != v {
			t.Errorf("--rank-snapshots %s: %v", v, err)
		}
	}
	for _, args := range [][]string{{"--rank-snapshots", "disk"}, {"--rank-snapshots", "redis"}} {
		if _, err := parseConfig("serve", args, env(), io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := parseConfig("serve", []string{"--rank-snapshots", "redis", "--redis-url", "redis://127.0.0.1:1/0"}, env(), io.Discard); err != nil {
		t.Errorf("--rank-snapshots redis with --redis-url: %v", err)
	}
}

// TestRankSettingsFlags: the model's settings reach rank.Settings,
// and an unusable one (a negative or infinite weight, a NaN prior, a zero
// half-life) stops feedd before it serves, naming the rank settings.
func TestRankSettingsFlags(t *testing.T) {
	c, err := parseConfig("serve", []string{"--rank-w-liked", "2.5", "--rank-recency-half-life", "6h"}, env(), io.Discard)
	if err != nil || c.rank.WLiked != 2.5 || c.rank.RecencyHalfLife != 6*time.Hour {
		t.Fatalf("valid settings: %v, %+v", err, c)
	}
	for _, args := range [][]string{
		{"--rank-w-liked", "-1"},
		{"--rank-w-recency", "inf"},
		{"--rank-engagement-prior", "NaN"},
		{"--rank-recency-half-life", "0s"},
	} {
		_, err := parseConfig("serve", args, env(), io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "--rank-*: ") {
			t.Errorf("%v: %v, want a --rank-* error", args, err)
		}
	}
}

// TestRankSnapshotsShared runs two API processes on one SQLite database
// with --rank-snapshots database: a ranked scroll begun on one continues
// on the other, repeating nothing. (The embedded default keeps snapshots
// in its own memory, for one process.)
func TestRankSnapshotsShared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startServer(t, "--data", dir, "--rank-snapshots", "database")
	b := startServer(t, "--data", dir, "--rank-snapshots", "database", "--workers", "0")
	ca, cb := newV1Client(t, a), newV1Client(t, b)
	v, author := ca.login("13800000301"), ca.login("13800000302")
	ca.want(204, "PUT", "/v1/following/{id}", v, nil, nil, ca.me(author).ID)
	var last apiPost
	for i := range 6 {
		last = ca.publish(author, fmt.Sprintf("post %d", i))
	}
	ca.waitTimeline(v, last.ID)
	first, _ := ca.rankedPage(v, "", 2, false)
	if len(first.Data) != 2 || first.NextCursor == nil {
		t.Fatalf("first ranked page: %d posts, next %v", len(first.Data), first.NextCursor)
	}
	seen := map[int64]bool{}
	for _, p := range first.Data {
		seen[p.ID] = true
	}
	cursor := *first.NextCursor
	for cursor != "" {
		page, _ := cb.rankedPage(v, cursor, 2, false)
		for _, p := range page.Data {
			if seen[p.ID] {
				t.Fatalf("the other process repeats post %d", p.ID)
			}
			seen[p.ID] = true
		}
		cursor = ""
		if page.NextCursor != nil {
			cursor = *page.NextCursor
		}
	}
	if len(seen) != 6 {
		t.Fatalf("the scroll across two processes showed %d posts, want 6", len(seen))
	}
}
