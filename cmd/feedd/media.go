package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/files"
	feedhttp "github.com/feedd/feedd/http"
	"github.com/feedd/feedd/imaging"
	"github.com/feedd/feedd/s3"
)

// mediaConfig is where images live and the limits of uploads
// (docs/configuration.md, "Photos").
type mediaConfig struct {
	dir             string
	s3URL           string
	s3AccessKey     string
	s3SecretKey     string
	s3SecretKeyFile string
	maxBytes        byteSize
	cacheBytes      byteSize
	maxPixels       int
	workers         int
	orphanTTL       time.Duration
	uploadTimeout   time.Duration
	bytesLimit      byteLimit
}

func declareMediaFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	m := &c.media
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, "", help(usage, env))
		fromEnv(name, env)
	}
	str(&m.dir, "media-dir", "FEED_MEDIA_DIR", "directory of the uploaded images when they are not in S3 (empty: media in --data); with --database-url, every process must see the same directory")
	str(&m.s3URL, "media-s3", "FEED_MEDIA_S3", "S3-compatible bucket of the uploaded images, http(s)://HOST[:PORT]/BUCKET[/PREFIX][?region=R] (created if missing; empty: files in --media-dir)")
	str(&m.s3AccessKey, "media-s3-access-key", "FEED_MEDIA_S3_ACCESS_KEY", "access key of --media-s3")
	str(&m.s3SecretKey, "media-s3-secret-key", "FEED_MEDIA_S3_SECRET_KEY", "secret key of --media-s3; give it by environment or --media-s3-secret-key-file, never on a command line")
	str(&m.s3SecretKeyFile, "media-s3-secret-key-file", "FEED_MEDIA_S3_SECRET_KEY_FILE", "file holding --media-s3-secret-key")
	m.maxBytes = feed.DefaultMediaMaxBytes
	fs.Var(&m.maxBytes, "media-max-bytes", help("largest image upload, in bytes (KiB, MiB, GiB allowed); larger ones get 413 before they are read", "FEED_MEDIA_MAX_BYTES"))
	fromEnv("media-max-bytes", "FEED_MEDIA_MAX_BYTES")
	m.cacheBytes = feed.DefaultBlobCacheBytes
	fs.Var(&m.cacheBytes, "media-cache", help("memory this process keeps images of at most 64KiB in (previews, mostly), in bytes (KiB, MiB, GiB allowed; 0: none): they are served without a file or S3 read, and one deleted by another process is served for a minute at most", "FEED_MEDIA_CACHE"))
	fromEnv("media-cache", "FEED_MEDIA_CACHE")
	fs.IntVar(&m.maxPixels, "media-max-pixels", feed.DefaultMediaMaxPixels, help("most pixels an uploaded image may declare (width x height), checked from its header before it is decoded", "FEED_MEDIA_MAX_PIXELS"))
	fromEnv("media-max-pixels", "FEED_MEDIA_MAX_PIXELS")
	fs.IntVar(&m.workers, "media-workers", 2, help("images this process decodes at once (each takes up to 8 bytes a pixel while it is decoded); more uploads wait their turn", "FEED_MEDIA_WORKERS"))
	fromEnv("media-workers", "FEED_MEDIA_WORKERS")
	fs.DurationVar(&m.orphanTTL, "media-orphan-ttl", feed.DefaultMediaOrphanTTL, help("how long an upload no post shows is kept: from its upload, or from the deletion of its post", "FEED_MEDIA_ORPHAN_TTL"))
	fromEnv("media-orphan-ttl", "FEED_MEDIA_ORPHAN_TTL")
	fs.DurationVar(&m.uploadTimeout, "media-upload-timeout", feedhttp.DefaultUploadTimeout, help("longest an upload's body may take to arrive (answered 408 after)", "FEED_MEDIA_UPLOAD_TIMEOUT"))
	fromEnv("media-upload-timeout", "FEED_MEDIA_UPLOAD_TIMEOUT")
	fs.Var(&c.writeLimits.Media, "media-limit-user", help("image uploads, alt text changes and upload deletes one user may make, written N/DURATION (0: off)", "FEED_MEDIA_LIMIT_USER"))
	fromEnv("media-limit-user", "FEED_MEDIA_LIMIT_USER")
	m.bytesLimit = byteLimit(feed.DefaultWriteLimits.MediaBytes)
	fs.Var(&m.bytesLimit, "media-bytes-limit-user", help("bytes of image uploads one user may send, written SIZE/DURATION (SIZE in bytes, KiB, MiB or GiB; 0: off)", "FEED_MEDIA_BYTES_LIMIT_USER"))
	fromEnv("media-bytes-limit-user", "FEED_MEDIA_BYTES_LIMIT_USER")
}

// checkMedia checks the media flags and reads the secret file.
func (c *config) checkMedia() error {
	m := &c.media
	if m.s3SecretKeyFile != "" {
		if m.s3SecretKey != "" {
			return fmt.Errorf("set --media-s3-secret-key or --media-s3-secret-key-file, not both")
		}
		b, err := os.ReadFile(m.s3SecretKeyFile)
		if err != nil {
			return fmt.Errorf("--media-s3-secret-key-file: %w", err)
		}
		if m.s3SecretKey = string(bytes.TrimSpace(b)); m.s3SecretKey == "" {
			return fmt.Errorf("--media-s3-secret-key-file: %s is empty", m.s3SecretKeyFile)
		}
	}
	switch {
	case m.maxBytes < 1024:
		return fmt.Errorf("--media-max-bytes must be at least 1KiB")
	case m.cacheBytes < 0:
		return fmt.Errorf("--media-cache must not be negative")
	case m.maxPixels < 1:
		return fmt.Errorf("--media-max-pixels must be at least 1")
	case m.workers < 1:
		return fmt.Errorf("--media-workers must be at least 1")
	case m.orphanTTL <= 0:
		return fmt.Errorf("--media-orphan-ttl must be positive")
	case m.uploadTimeout <= 0:
		return fmt.Errorf("--media-upload-timeout must be positive")
	case m.s3URL != "" && m.dir != "":
		return fmt.Errorf("set --media-s3 or --media-dir, not both")
	}
	if m.s3URL != "" {
		if _, _, _, _, _, err := s3.ParseURL(m.s3URL); err != nil {
			return fmt.Errorf("--media-s3: %w", err)
		}
	}
	c.writeLimits.MediaBytes = feed.Limit(m.bytesLimit)
	return nil
}

// mediaDir is where the embedded store keeps images.
func (c *config) mediaDir() string {
	if c.media.dir != "" {
		return c.media.dir
	}
	return filepath.Join(c.dataDir, "media")
}

// openMedia opens the image store c names (the bucket of --media-s3, or
// files in --media-dir) and the image processor, and gives a their ready
// check.
func openMedia(ctx context.Context, c *config, a *app) (feed.BlobStore, *imaging.Processor, error) {
	st, proc, err := openBlobs(ctx, c, a)
	if err != nil || c.media.cacheBytes == 0 {
		return st, proc, err
	}
	return feed.NewBlobCache(st, int64(c.media.cacheBytes), nil), proc, nil
}

// openBlobs is openMedia without the cache.
func openBlobs(ctx context.Context, c *config, a *app) (feed.BlobStore, *imaging.Processor, error) {
	proc := imaging.New(c.media.workers)
	if c.media.s3URL == "" {
		if c.databaseURL != "" && c.media.dir == "" {
			a.log.Warn("images are kept in this process's --data directory: other processes will not serve them; use --media-s3 (or a --media-dir every process shares)")
		}
		st, err := files.Open(c.mediaDir())
		if err != nil {
			return nil, nil, fmt.Errorf("media directory: %w", err)
		}
		return st, proc, nil
	}
	st, err := s3.Open(ctx, s3.Config{URL: c.media.s3URL, AccessKey: c.media.s3AccessKey, SecretKey: c.media.s3SecretKey})
	if err != nil {
		return nil, nil, fmt.Errorf("--media-s3: %w", err)
	}
	a.ready = append(a.ready, feedhttp.ReadyCheck{Name: "media store", Check: st.Ready})
	return st, proc, nil
}

// mediaSettings are the service's limits of uploads.
func (c *config) mediaSettings() feed.MediaSettings {
	return feed.MediaSettings{MaxBytes: int64(c.media.maxBytes), MaxPixels: c.media.maxPixels, OrphanTTL: c.media.orphanTTL}
}

// mediaSweepEvery is how often the media_sweep job runs: a quarter of
// --media-orphan-ttl, at most every 5 minutes and at least every second.
func (c *config) mediaSweepEvery() time.Duration {
	return min(max(c.media.orphanTTL/4, time.Second), 5*time.Minute)
}

// sweeper is the service's media sweep, for the job workers made before
// the service.
type sweeper struct{ a *app }

func (s sweeper) SweepMedia(ctx context.Context) (int, bool, error) {
	return s.a.service.SweepMedia(ctx)
}

// byteLimit is a feed.Limit of bytes, written SIZE/DURATION.
type byteLimit feed.Limit

func (l *byteLimit) Set(s string) error {
	if strings.TrimSpace(s) == "0" {
		*l = byteLimit{}
		return nil
	}
	size, window, ok := strings.Cut(s, "/")
	var b byteSize
	if !ok || b.Set(size) != nil {
		return fmt.Errorf("must be SIZE/DURATION, such as 1GiB/24h, or 0")
	}
	d, err := time.ParseDuration(strings.TrimSpace(window))
	if err != nil || d <= 0 || b <= 0 {
		return fmt.Errorf("must be SIZE/DURATION, such as 1GiB/24h, or 0")
	}
	*l = byteLimit{N: int(b), Window: d}
	return nil
}

func (l *byteLimit) String() string {
	if feed.Limit(*l).Off() {
		return "0"
	}
	b := byteSize(l.N)
	w := feed.Limit{N: 1, Window: l.Window}.String() // "1/DURATION"
	return b.String() + w[strings.IndexByte(w, '/'):]
}
