package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/internal/testimg"
)

// apiMedia is an upload as /v1 shows it.
type apiMedia struct {
	ID          int64  `json:"id"`
	URL         string `json:"url"`
	PreviewURL  string `json:"preview_url"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	Blurhash    string `json:"blurhash"`
	Alt         string `json:"alt"`
}

// multipartBody is a form with the field file holding b, as a browser's
// FormData sends it, and its Content-Type.
func multipartBody(b []byte, fields ...string) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		mw.WriteField(fields[i], fields[i+1])
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="photo.jpg"`)
	h.Set("Content-Type", "image/jpeg") // what the client claims: never trusted
	w, _ := mw.CreatePart(h)
	w.Write(b)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// uploadCompat is POST /upload/blog as the tutorial's publish page sends
// it: a FormData body under a Content-Type that names a boundary of its
// own ("multipart/form-data;boundary=" + the time), which the body does
// not use.
func (s *server) uploadCompat(token string, b []byte) reply {
	s.t.Helper()
	body, _ := multipartBody(b)
	req, _ := http.NewRequest("POST", s.base+"/upload/blog", bytes.NewReader(body))
	req.Header.Set("Content-Type", fmt.Sprintf("multipart/form-data;boundary=%d", time.Now().UnixMilli()))
	req.Header.Set("authorization", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Raw: string(raw)}
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("POST /upload/blog: not the envelope: %q", raw)
	}
	return r
}

// mustUploadCompat uploads b and returns the path the page keeps:
// "/imgs" + the answer.
func (s *server) mustUploadCompat(token string, b []byte) string {
	s.t.Helper()
	r := s.uploadCompat(token, b)
	var name string
	if r.Status != 200 || !r.Success || json.Unmarshal(r.Data, &name) != nil || !strings.HasPrefix(name, "/blogs/") {
		s.t.Fatalf("POST /upload/blog: %d %s", r.Status, r.Raw)
	}
	return "/imgs" + name
}

// upload is POST /v1/media with body sent as contentType, checked against
// the OpenAPI document.
func (c *v1Client) upload(token string, body []byte, contentType string) *v1Reply {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.s.base+"/v1/media", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := &v1Reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if err := c.api.checkResponse("POST", "/v1/media", r.Status, r.Header, raw); err != nil {
		c.t.Fatalf("POST /v1/media: %v", err)
	}
	return r
}

// mustUpload uploads b as a form and returns the new upload.
func (c *v1Client) mustUpload(token string, b []byte, fields ...string) apiMedia {
	c.t.Helper()
	body, ct := multipartBody(b, fields...)
	r := c.upload(token, body, ct)
	var m apiMedia
	if r.Status != 201 || json.Unmarshal(r.Raw, &m) != nil || m.ID == 0 {
		c.t.Fatalf("POST /v1/media: %d %s", r.Status, r.Raw)
	}
	if loc := r.Header.Get("Location"); loc != fmt.Sprintf("/v1/media/%d", m.ID) {
		c.t.Fatalf("Location %q", loc)
	}
	return m
}

// fetch GETs path from s with headers (name, value pairs).
func fetch(t testing.TB, base, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// wantImage checks that path serves an image of contentType, as every
// image is served: cached for a year, validated, ranged, and never run.
func wantImage(t testing.TB, base, path, contentType string) []byte {
	t.Helper()
	resp, b := fetch(t, base, path)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != contentType {
		t.Fatalf("GET %s: %d %s %.100s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	h := resp.Header
	if h.Get("Cache-Control") != "public, max-age=31536000, immutable" || h.Get("ETag") == "" || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET %s: headers %v", path, h)
	}
	if r, part := fetch(t, base, path, "Range", "bytes=2-9"); r.StatusCode != 206 || !bytes.Equal(part, b[2:10]) {
		t.Fatalf("GET %s with a Range: %d %x", path, r.StatusCode, part)
	}
	if r, _ := fetch(t, base, path, "If-None-Match", h.Get("ETag")); r.StatusCode != 304 {
		t.Fatalf("GET %s with If-None-Match: %d", path, r.StatusCode)
	}
	for _, leak := range [][]byte{[]byte(testimg.Secret), testimg.GPSLatitude(), []byte("Exif")} {
		if bytes.Contains(b, leak) {
			t.Fatalf("GET %s: the image holds %q", path, leak)
		}
	}
	return b
}

func wantGone(t testing.TB, base, path string) {
	t.Helper()
	if resp, b := fetch(t, base, path); resp.StatusCode != 404 {
		t.Fatalf("GET %s: %d %.100s, want 404", path, resp.StatusCode, b)
	}
}

// mediaStores are the two ways to store images, each with the flags of a
// server that uses it.
func mediaStores(t *testing.T) map[string]func(t *testing.T) []string {
	return map[string]func(t *testing.T) []string{
		"files": func(t *testing.T) []string { return []string{"--data", t.TempDir()} },
		"s3": func(t *testing.T) []string {
			b := testenv.S3Bucket(t)
			return []string{"--data", t.TempDir(), "--media-s3", b.URL, "--media-s3-access-key", b.AccessKey, "--media-s3-secret-key-file", writeSecret(t, b.SecretKey)}
		},
	}
}

func writeSecret(t *testing.T, secret string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMediaCompatible is the tutorial's publish page against feedd, on
// both image stores: upload (under the page's own boundary), the path
// served under /imgs without its metadata, publish with it, the note in a
// follower's feed, the delete of an upload refused while a post shows it
// or for anyone but its uploader, and the refusals of what is no image.
func TestMediaCompatible(t *testing.T) {
	for name, flags := range mediaStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, flags(t)...)
			author, reader := s.login("13800000301"), s.login("13800000302")
			s.must("PUT", fmt.Sprintf("/follow/%d/true", s.me(author)), reader, nil, nil)

			photo := s.mustUploadCompat(author, testimg.Photo(600, 400, 6))
			img := wantImage(t, s.base, photo, "image/jpeg")
			if !strings.HasPrefix(photo, "/imgs/blogs/") || !strings.HasSuffix(photo, ".jpg") || len(img) == 0 {
				t.Fatalf("upload path %s", photo)
			}
			second := s.mustUploadCompat(author, testimg.PNG(30, 30, true))
			wantImage(t, s.base, second, "image/png")

			// The same bytes again: stored once, a name of their own.
			again := s.mustUploadCompat(reader, testimg.Photo(600, 400, 6))
			if again == photo {
				t.Fatal("a second upload of the same bytes got the first one's name")
			}
			if b := wantImage(t, s.base, again, "image/jpeg"); !bytes.Equal(b, img) {
				t.Fatal("the same bytes uploaded twice serve different images")
			}

			// Refused while no post shows it for anyone but its uploader;
			// gone once its uploader deletes it.
			if r := s.do("GET", "/upload/blog/delete?name="+again, author, nil); r.Success || r.ErrorMsg == "" {
				t.Fatalf("delete of another user's upload: %s", r.Raw)
			}
			s.must("GET", "/upload/blog/delete?name="+again, reader, nil, nil)
			wantGone(t, s.base, again)
			wantImage(t, s.base, photo, "image/jpeg") // the shared bytes stay for the other upload

			var id int64
			s.must("POST", "/blog", author, map[string]any{"title": "a photo", "content": "look", "images": photo + "," + second + ",https://example.com/x.png"}, &id)
			var b blog
			s.must("GET", fmt.Sprintf("/blog/%d", id), reader, nil, &b)
			if b.Images == nil || *b.Images != photo+","+second+",https://example.com/x.png" {
				t.Fatalf("images of the note: %v", b.Images)
			}
			waitFor(t, "the note in the follower's feed", func() bool {
				feed := s.scrollAll(reader, 10)
				return len(feed) == 1 && feed[0].Images != nil && *feed[0].Images == *b.Images
			})
			if r := s.do("GET", "/upload/blog/delete?name="+photo, author, nil); r.Success || !strings.Contains(r.ErrorMsg, "post") {
				t.Fatalf("delete of an upload a post shows: %s", r.Raw)
			}
			wantImage(t, s.base, photo, "image/jpeg")

			// A note may name only uploads of its author, unshown, or URLs.
			mine := s.mustUploadCompat(reader, testimg.JPEG(40, 40))
			for _, images := range []string{"/imgs/blogs/1/2/nothing.jpg", "/a.png", mine, photo} {
				if r := s.do("POST", "/blog", author, map[string]any{"title": "t", "content": "c", "images": images}); r.Success {
					t.Errorf("a note naming %s was published", images)
				}
			}

			// What is no image is refused, whatever it claims to be.
			for what, body := range map[string][]byte{"html": testimg.HTML, "svg": testimg.SVG, "polyglot": testimg.Polyglot(),
				"bomb": testimg.PNGBomb(100_000, 100_000), "empty": {}} {
				if r := s.uploadCompat(author, body); r.Success || r.ErrorMsg == "" {
					t.Errorf("upload of %s: %s", what, r.Raw)
				}
			}
			wantGone(t, s.base, "/imgs/blogs/1/2/nothing.jpg")
			wantGone(t, s.base, "/imgs/p/00/0123.jpg")
		})
	}
}

// TestMediaV1 is the native media API on both stores: uploads as a form
// and as a raw body, alt text, a post with media_ids showing them in
// order in every view of it, and the refusals.
func TestMediaV1(t *testing.T) {
	for name, flags := range mediaStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, append(flags(t), "--media-max-bytes", "2MiB")...)
			c := newV1Client(t, s)
			a, b := c.login("13800000311"), c.login("13800000312")
			c.want(204, "PUT", "/v1/following/{id}", b, nil, nil, c.me(a).ID)

			m1 := c.mustUpload(a, testimg.Photo(2500, 800, 1), "alt", "a wide view")
			if m1.Width != 2048 || m1.Height != 655 || m1.ContentType != "image/jpeg" || m1.Alt != "a wide view" || m1.Blurhash == "" ||
				!strings.HasPrefix(m1.URL, "/imgs/blogs/") || !strings.HasPrefix(m1.PreviewURL, "/imgs/p/") {
				t.Fatalf("upload: %+v", m1)
			}
			disp := wantImage(t, s.base, m1.URL, "image/jpeg")
			if int64(len(disp)) != m1.Bytes {
				t.Fatalf("display of %d bytes, media says %d", len(disp), m1.Bytes)
			}
			wantImage(t, s.base, m1.PreviewURL, "image/jpeg")
			r := c.upload(a, testimg.PNG(64, 32, true), "image/png")
			var m2 apiMedia
			if r.Status != 201 || json.Unmarshal(r.Raw, &m2) != nil || m2.ContentType != "image/png" || m2.Width != 64 {
				t.Fatalf("raw upload: %d %s", r.Status, r.Raw)
			}
			c.want(200, "PATCH", "/v1/media/{id}", a, map[string]any{"alt": "a small mark"}, &m2, m2.ID)
			if m2.Alt != "a small mark" {
				t.Fatalf("alt after PATCH: %+v", m2)
			}
			c.refused(404, "not_found", "PATCH", "/v1/media/{id}", b, map[string]any{"alt": "mine"}, m2.ID)
			c.refused(400, "invalid", "PATCH", "/v1/media/{id}", a, map[string]any{"alt": strings.Repeat("a", 1501)}, m2.ID)
			c.refused(404, "not_found", "GET", "/v1/media/{id}", b, nil, m2.ID)
			c.want(200, "GET", "/v1/media/{id}", a, nil, nil, m2.ID)

			stream := c.openStream(b, "", "127.0.0.1")
			defer stream.close()
			var p apiPost
			c.want(201, "POST", "/v1/posts", a, map[string]any{"title": "two", "content": "c", "media_ids": []int64{m2.ID, m1.ID}}, &p)
			wantMedia := func(what string, p apiPost) {
				t.Helper()
				if len(p.Media) != 2 || p.Media[0].ID != m2.ID || p.Media[1].ID != m1.ID || p.Media[0].Alt != "a small mark" ||
					!slices.Equal(p.Images, []string{m2.URL, m1.URL}) {
					t.Fatalf("%s: media %+v images %v", what, p.Media, p.Images)
				}
			}
			wantMedia("the new post", p)
			c.want(200, "GET", "/v1/posts/{id}", b, nil, &p, p.ID)
			wantMedia("GET /v1/posts/{id}", p)
			c.waitTimeline(b, p.ID)
			wantMedia("the timeline", c.timeline(b, 10)[0])
			ranked, _ := c.rankedPage(b, "", 10, false)
			wantMedia("the ranked timeline", ranked.Data[0].apiPost)
			var page apiPage[apiPost]
			c.want(200, "GET", "/v1/users/{id}/posts", b, nil, &page, c.me(a).ID)
			wantMedia("the author's posts", page.Data[0])
			for {
				ev := stream.next(t)
				var sp apiPost
				if ev.Kind == "post" && json.Unmarshal([]byte(ev.Data), &sp) == nil && sp.ID == p.ID {
					wantMedia("the stream's event", sp)
					break
				}
			}
			c.want(204, "PUT", "/v1/posts/{id}/like", b, nil, nil, p.ID)
			waitFor(t, "the like's notification", func() bool {
				for _, n := range c.notifications(a) {
					if n.Post != nil && n.Post.ID == p.ID {
						wantMedia("the notification's post", *n.Post)
						return true
					}
				}
				return false
			})

			// Refusals: another's upload, one a post shows, too many, a
			// second use of one, deleting one a post shows.
			m3 := c.mustUpload(b, testimg.JPEG(20, 20))
			c.refused(404, "not_found", "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m3.ID}})
			c.refused(409, "conflict", "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m1.ID}})
			c.refused(400, "invalid", "POST", "/v1/posts", b, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m3.ID, m3.ID}})
			c.refused(400, "invalid", "POST", "/v1/posts", b, map[string]any{"title": "t", "content": "c", "media_ids": []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}})
			c.refused(409, "conflict", "DELETE", "/v1/media/{id}", a, nil, m1.ID)
			c.refused(403, "forbidden", "DELETE", "/v1/media/{id}", a, nil, m3.ID)
			c.want(204, "DELETE", "/v1/media/{id}", b, nil, nil, m3.ID)
			wantGone(t, s.base, m3.URL)
			wantGone(t, s.base, m3.PreviewURL)

			// Uploads that are no image, or too large.
			for what, body := range map[string][]byte{"html": testimg.HTML, "svg": testimg.SVG, "polyglot": testimg.Polyglot(), "bomb": testimg.PNGBomb(100_000, 100_000)} {
				form, ct := multipartBody(body)
				if r := c.upload(a, form, ct); r.Status != 400 && !(what == "bomb" && r.Status == 413) {
					t.Errorf("upload of %s: %d %s", what, r.Status, r.Raw)
				}
			}
			if r := c.upload(a, testimg.SVG, "image/svg+xml"); r.Status != 400 {
				t.Errorf("raw SVG: %d %s", r.Status, r.Raw)
			}
			if r := c.upload(a, []byte(`{"file":1}`), "application/json"); r.Status != 400 {
				t.Errorf("JSON body: %d %s", r.Status, r.Raw)
			}
			big := testimg.Noise(2000, 1500, 3) // over 2 MiB
			if len(big) <= 2<<20 {
				t.Fatalf("the noise photo is only %d bytes", len(big))
			}
			if r := c.upload(a, big, "image/jpeg"); r.Status != 413 {
				t.Errorf("an upload over --media-max-bytes: %d %s", r.Status, r.Raw)
			}
		})
	}
}

// v1MediaExchanges sends every documented answer of the media routes (for
// TestV1API's count): a and b are two users.
func v1MediaExchanges(t *testing.T, c *v1Client, a, b string) {
	t.Helper()
	m := c.mustUpload(a, testimg.JPEG(30, 30))
	mine := c.mustUpload(b, testimg.JPEG(31, 31))
	if r := c.upload(a, testimg.HTML, "image/jpeg"); r.Status != 400 {
		t.Errorf("upload of HTML: %d", r.Status)
	}
	if r := c.upload("", testimg.JPEG(10, 10), "image/jpeg"); r.Status != 401 {
		t.Errorf("upload without a token: %d", r.Status)
	}
	if r := c.upload(a, make([]byte, feedMaxUpload+1), "image/jpeg"); r.Status != 413 {
		t.Errorf("upload over the limit: %d", r.Status)
	}
	c.want(200, "GET", "/v1/media/{id}", a, nil, nil, m.ID)
	c.refused(400, "invalid", "GET", "/v1/media/{id}", a, nil, "x")
	c.refused(401, "unauthorized", "GET", "/v1/media/{id}", "", nil, m.ID)
	c.refused(404, "not_found", "GET", "/v1/media/{id}", b, nil, m.ID)
	c.want(200, "PATCH", "/v1/media/{id}", a, map[string]any{"alt": "grey"}, nil, m.ID)
	c.refused(400, "invalid", "PATCH", "/v1/media/{id}", a, map[string]any{"alt": 3}, m.ID)
	c.refused(401, "unauthorized", "PATCH", "/v1/media/{id}", "", map[string]any{"alt": "x"}, m.ID)
	c.refused(404, "not_found", "PATCH", "/v1/media/{id}", b, map[string]any{"alt": "x"}, m.ID)
	c.refused(413, "too_large", "PATCH", "/v1/media/{id}", a, `{"alt":"`+strings.Repeat("x", 1<<20)+`"}`, m.ID)
	c.refused(400, "invalid", "DELETE", "/v1/media/{id}", a, nil, 0)
	c.refused(401, "unauthorized", "DELETE", "/v1/media/{id}", "", nil, m.ID)
	c.refused(403, "forbidden", "DELETE", "/v1/media/{id}", a, nil, mine.ID)
	c.refused(404, "not_found", "DELETE", "/v1/media/{id}", a, nil, 999999999)
	c.refused(404, "not_found", "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{mine.ID}})
	c.want(201, "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m.ID}}, nil)
	c.refused(409, "conflict", "POST", "/v1/posts", a, map[string]any{"title": "t", "content": "c", "media_ids": []int64{m.ID}})
	c.refused(409, "conflict", "DELETE", "/v1/media/{id}", a, nil, m.ID)
	c.want(204, "DELETE", "/v1/media/{id}", b, nil, nil, mine.ID)
}

// feedMaxUpload is the default --media-max-bytes.
const feedMaxUpload = 20 << 20
