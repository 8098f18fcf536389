package main

import (
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/internal/testimg"
)

// TestMediaLifecycle: the periodic sweep, on both engines' job machinery
// and both stores, removes an upload no post shows after
// --media-orphan-ttl, and a deleted post's images after it too, but not
// the bytes another post shows.
func TestMediaLifecycle(t *testing.T) {
	for name, flags := range map[string]func(t *testing.T) []string{
		"sqlite+files": func(t *testing.T) []string {
			return []string{"--data", t.TempDir(), "--media-dir", filepath.Join(t.TempDir(), "media")}
		},
		"postgres+s3": func(t *testing.T) []string {
			b := testenv.S3Bucket(t)
			return []string{"--database-url", testenv.PostgresURL(t), "--data", t.TempDir(),
				"--media-s3", b.URL, "--media-s3-access-key", b.AccessKey, "--media-s3-secret-key-file", writeSecret(t, b.SecretKey)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := flags(t)
			s := startServer(t, append(args, "--media-orphan-ttl", "2s")...)
			c := newV1Client(t, s)
			a, b := c.login("13800000321"), c.login("13800000322")

			orphan := c.mustUpload(a, testimg.JPEG(50, 50))
			kept := c.mustUpload(a, testimg.JPEG(60, 60))
			shown := c.mustUpload(a, testimg.JPEG(70, 70))
			theirs := c.mustUpload(b, testimg.JPEG(70, 70)) // the same bytes as shown
			var p, q apiPost
			c.want(201, "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{kept.ID, shown.ID}}, &p)
			c.want(201, "POST", "/v1/posts", b, map[string]any{"title": "t", "content": "c", "media_ids": []int64{theirs.ID}}, &q)

			// The sweep removes an image's sizes one after the other.
			gone := func(what, url string) {
				t.Helper()
				waitFor(t, what, func() bool {
					resp, _ := fetch(t, s.base, url)
					return resp.StatusCode == 404
				})
			}
			gone("the unused upload's removal", orphan.URL)
			gone("the unused upload's preview's removal", orphan.PreviewURL)
			wantImage(t, s.base, kept.URL, "image/jpeg") // a post shows it

			c.want(204, "DELETE", "/v1/posts/{id}", a, nil, nil, p.ID)
			wantImage(t, s.base, kept.URL, "image/jpeg") // within the grace
			gone("the deleted post's images' removal", kept.URL)
			gone("the deleted post's images' removal", shown.URL)
			gone("the deleted post's previews' removal", kept.PreviewURL)
			// The bytes of shown are also theirs, which a post still shows.
			wantImage(t, s.base, theirs.URL, "image/jpeg")
			wantImage(t, s.base, theirs.PreviewURL, "image/jpeg")

			if dir := flagValue(args, "--media-dir"); dir != "" {
				waitFor(t, "the removed images' files", func() bool { return len(filesUnder(t, dir)) == 2 })
			}
		})
	}
}

func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// filesUnder lists the files under dir.
func filesUnder(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestMediaAnyProcess: two API processes on one PostgreSQL and one
// bucket: an image uploaded through one is served by the other, and a
// post published through one shows its media through the other.
func TestMediaAnyProcess(t *testing.T) {
	t.Parallel()
	db, bucket := testenv.PostgresURL(t), testenv.S3Bucket(t)
	args := []string{"--database-url", db, "--media-s3", bucket.URL, "--media-s3-access-key", bucket.AccessKey, "--media-s3-secret-key-file", writeSecret(t, bucket.SecretKey)}
	s1 := startServer(t, append(args, "--data", t.TempDir())...)
	s2 := startServer(t, append(args, "--data", t.TempDir(), "--workers", "0")...)
	c1, c2 := newV1Client(t, s1), newV1Client(t, s2)
	a := c1.login("13800000331")
	m := c1.mustUpload(a, testimg.Photo(400, 300, 8))
	if m.Width != 300 || m.Height != 400 {
		t.Fatalf("orientation 8 not applied: %+v", m)
	}
	wantImage(t, s2.base, m.URL, "image/jpeg")
	wantImage(t, s2.base, m.PreviewURL, "image/jpeg")
	var p apiPost
	c2.want(201, "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m.ID}}, &p)
	c1.want(200, "GET", "/v1/posts/{id}", a, nil, &p, p.ID)
	if len(p.Media) != 1 || p.Media[0].URL != m.URL {
		t.Fatalf("the post through the other process: %+v", p.Media)
	}
}

// TestMediaStoreDown: while the image store is out of reach an upload is
// answered 503 with Retry-After and nothing of it is kept; reads of the
// images answer 503 too; once the store is back, uploads work.
func TestMediaStoreDown(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		t.Parallel()
		data, dir := t.TempDir(), filepath.Join(t.TempDir(), "media")
		s := startServer(t, "--data", data, "--media-dir", dir)
		c := newV1Client(t, s)
		a := c.login("13800000341")
		m := c.mustUpload(a, testimg.JPEG(40, 40))
		// The directory becomes a file: nothing can be written under it.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
		wantDown(t, c, a)
		if resp, _ := fetch(t, s.base, m.URL); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("GET of an image while the store is down: %d %v", resp.StatusCode, resp.Header)
		}
		wantNothingKept(t, filepath.Join(data, "feedd.db"), 1)
		os.Remove(dir)
		os.Mkdir(dir, 0o755)
		c.mustUpload(a, testimg.JPEG(50, 50))
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		bucket, stop := testenv.S3Server(t)
		data := t.TempDir()
		s := startServer(t, "--data", data, "--media-s3", bucket.URL, "--media-s3-access-key", bucket.AccessKey, "--media-s3-secret-key-file", writeSecret(t, bucket.SecretKey))
		c := newV1Client(t, s)
		a := c.login("13800000342")
		m := c.mustUpload(a, testimg.JPEG(40, 40))
		stop()
		wantDown(t, c, a)
		if resp, _ := fetch(t, s.base, m.URL); resp.StatusCode != 503 {
			t.Fatalf("GET of an image while the store is down: %d", resp.StatusCode)
		}
		wantNothingKept(t, filepath.Join(data, "feedd.db"), 1)
	})
}

func wantDown(t *testing.T, c *v1Client, token string) {
	t.Helper()
	body, ct := multipartBody(testimg.JPEG(80, 80))
	r := c.upload(token, body, ct)
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Raw), "unavailable") {
		t.Fatalf("upload while the image store is down: %d %v %s", r.Status, r.Header, r.Raw)
	}
}

// wantNothingKept checks the embedded database holds uploads media and
// no blob but the ready ones of those.
func wantNothingKept(t *testing.T, path string, uploads int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var media, blobs, pending int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM media), (SELECT count(*) FROM media_blobs), (SELECT count(*) FROM media_blobs WHERE ready = 0)`).Scan(&media, &blobs, &pending); err != nil {
		t.Fatal(err)
	}
	if media != uploads || blobs != uploads || pending != 0 {
		t.Fatalf("after a failed upload: %d media, %d blobs (%d pending), want %d, %d, 0", media, blobs, pending, uploads, uploads)
	}
}

// TestMediaLimits: the per-user limits of uploads, in count and in bytes,
// refuse with 429 and Retry-After.
func TestMediaLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--media-limit-user", "3/1h", "--media-bytes-limit-user", "40KiB/1h")
	c := newV1Client(t, s)
	a, b := c.login("13800000351"), c.login("13800000352")
	c.mustUpload(a, testimg.JPEG(20, 20))
	c.mustUpload(a, testimg.JPEG(21, 21))
	c.mustUpload(a, testimg.JPEG(22, 22))
	r := c.upload(a, testimg.JPEG(23, 23), "image/jpeg")
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a fourth upload within the hour: %d %s", r.Status, r.Raw)
	}
	noise := testimg.Noise(200, 200, 1) // about 29 KB
	c.mustUpload(b, noise)
	if r := c.upload(b, testimg.Noise(201, 200, 2), "image/jpeg"); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("uploads over 40KiB within the hour: %d %s", r.Status, r.Raw)
	}
}
