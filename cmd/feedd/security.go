package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
	feedhttp "github.com/feedd/feedd/http"
)

// The flags of the HTTP guards, the per-user write limits, the admin
// listener's token and the secrets given by file (docs/operations.md,
// "Secrets" and "The admin listener"; docs/API.md, "Limits").

// secretFlags are the flags whose values are secrets: the admin listener's
// /debug/pprof/cmdline shows them redacted, and each has a -file twin.
var secretFlags = []string{"secret", "code-webhook-secret", "admin-token", "auth-jwt-secret", "oidc-client-secret", "media-s3-secret-key"}

// redactedFlags are the flags whose values may hold credentials (URLs with
// passwords): shown redacted too.
var redactedFlags = []string{"database-url", "redis-url", "redis-cluster", "code-webhook-url"}

// declareSecurityFlags declares this file's flags with their FEED_*
// fallbacks.
func declareSecurityFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, "", help(usage, env))
		fromEnv(name, env)
	}
	str(&c.allowedOrigins, "allowed-origins", "FEED_ALLOWED_ORIGINS", "comma-separated origins (scheme://host[:port]) whose pages may send writes to feedd across origins, such as the web client's behind its own reverse proxy; other cross-origin writes from browsers get 403")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", feedhttp.DefaultBodyTimeout, help("longest a request body may take to arrive (answered 408 after); a request lends its --max-writes slot back while its body arrives", "FEED_BODY_TIMEOUT"))
	fromEnv("body-timeout", "FEED_BODY_TIMEOUT")
	c.bodyMemory = feedhttp.DefaultBodyMemory
	fs.Var(&c.bodyMemory, "body-memory", help("most memory the request bodies being read or held take at once, in bytes (KiB, MiB, GiB allowed; at least 1MiB), and those of one client (an address, or an IPv6 /64) at most a sixteenth of it (at least 1MiB); past either, 503 with Retry-After", "FEED_BODY_MEMORY"))
	fromEnv("body-memory", "FEED_BODY_MEMORY")
	str(&c.adminToken, "admin-token", "FEED_ADMIN_TOKEN", "bearer token every admin listener route requires; required to bind --admin-addr to a non-loopback address (give it by file or environment, never on a command line)")
	str(&c.adminTokenFile, "admin-token-file", "FEED_ADMIN_TOKEN_FILE", "file holding --admin-token")
	str(&c.secretFile, "secret-file", "FEED_SECRET_FILE", "file holding --secret")
	str(&c.webhookSecretFile, "code-webhook-secret-file", "FEED_CODE_WEBHOOK_SECRET_FILE", "file holding --code-webhook-secret")
	c.writeLimits = feed.DefaultWriteLimits
	limit := func(p *feed.Limit, name, env, usage string) {
		fs.Var(p, name, help(usage+", written N/DURATION (0: off)", env))
		fromEnv(name, env)
	}
	limit(&c.writeLimits.Posts, "post-limit-user", "FEED_POST_LIMIT_USER", "posts one user may publish")
	limit(&c.writeLimits.Follows, "follow-limit-user", "FEED_FOLLOW_LIMIT_USER", "follow and unfollow requests one user may make")
	limit(&c.writeLimits.Likes, "like-limit-user", "FEED_LIKE_LIMIT_USER", "like and unlike requests one user may make")
	limit(&c.writeLimits.Comments, "comment-limit-user", "FEED_COMMENT_LIMIT_USER", "comments and replies one user may add")
	limit(&c.writeLimits.Reposts, "repost-limit-user", "FEED_REPOST_LIMIT_USER", "reposts one user may make or undo")
	limit(&c.writeLimits.Streams, "stream-open-limit-user", "FEED_STREAM_OPEN_LIMIT_USER", "live timeline streams one user may open (reconnects included)")
	limit(&c.writeLimits.Deletes, "delete-limit-user", "FEED_DELETE_LIMIT_USER", "posts (either API) and comments one user may delete, hides of comments included")
	limit(&c.writeLimits.Blocks, "block-limit-user", "FEED_BLOCK_LIMIT_USER", "block and unblock requests one user may make")
	limit(&c.writeLimits.Mutes, "mute-limit-user", "FEED_MUTE_LIMIT_USER", "mute and unmute requests one user may make")
	limit(&c.writeLimits.MutedWords, "muted-word-limit-user", "FEED_MUTED_WORD_LIMIT_USER", "muted words one user may add or remove")
	limit(&c.writeLimits.Edits, "edit-limit-user", "FEED_EDIT_LIMIT_USER", "changes to their posts (PATCH /v1/posts/{id}) one user may make")
	limit(&c.writeLimits.Notifications, "notification-limit-user", "FEED_NOTIFICATION_LIMIT_USER", "notification changes (mark read, dismiss, markers moved, push subscriptions changed) one user may make")
}

// checkSecurity reads the secrets given by file and checks this file's
// flags. It runs before checkAbuse, which needs the secrets.
func (c *config) checkSecurity() error {
	for _, f := range []struct {
		value *string
		file  string
		name  string
	}{
		{&c.secret, c.secretFile, "secret"},
		{&c.webhookSecret, c.webhookSecretFile, "code-webhook-secret"},
		{&c.adminToken, c.adminTokenFile, "admin-token"},
	} {
		if f.file == "" {
			continue
		}
		if *f.value != "" {
			return fmt.Errorf("set --%s or --%s-file, not both", f.name, f.name)
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			return fmt.Errorf("--%s-file: %w", f.name, err)
		}
		if *f.value = string(bytes.TrimSpace(b)); *f.value == "" {
			return fmt.Errorf("--%s-file: %s is empty", f.name, f.file)
		}
	}
	c.origins = nil
	for _, o := range strings.Split(c.allowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.origins = append(c.origins, o)
		}
	}
	if _, err := feedhttp.NewCrossOrigin(c.origins); err != nil {
		return fmt.Errorf("--allowed-origins: %w", err)
	}
	if c.bodyTimeout <= 0 || c.bodyTimeout > time.Minute {
		return fmt.Errorf("--body-timeout must be positive and at most 1m")
	}
	if c.bodyMemory < feedhttp.MinBodyMemory {
		return fmt.Errorf("--body-memory must be at least 1MiB, so that a body of the largest size fits")
	}
	return nil
}

// byteSize is a flag of a number of bytes, written with a unit (KiB, MiB,
// GiB) or without.
type byteSize int64

var byteUnits = []struct {
	suffix string
	n      int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Set and the String method make *byteSize a flag.Value.
func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	unit := int64(1)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, unit = strings.TrimSpace(num), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/unit {
		return fmt.Errorf("must be a number of bytes, such as 67108864 or 64MiB")
	}
	*b = byteSize(n * unit)
	return nil
}

// String writes b in the largest unit that divides it.
func (b *byteSize) String() string {
	for _, u := range byteUnits {
		if n := int64(*b); n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(*b), 10)
}

// redactArgs returns the command line as the admin listener's
// /debug/pprof/cmdline shows it: the values of secretFlags and
// redactedFlags replaced, in any of the flag package's forms (-f v, -f=v,
// --f v, --f=v).
func redactArgs(args []string) []string {
	hidden := map[string]bool{}
	for _, f := range append(secretFlags, redactedFlags...) {
		hidden[f] = true
	}
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hidden[name] {
			continue
		}
		if hasValue {
			out[i] = a[:strings.Index(a, "=")+1] + "REDACTED"
		} else if i+1 < len(out) {
			out[i+1] = "REDACTED"
			i++
		}
	}
	return out
}
