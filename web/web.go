// Package web is feedd's own web page: one HTML document, one stylesheet and
// a few JavaScript modules, embedded in the binary and served as they are
// (no build step, nothing fetched from elsewhere). The page is a client of
// the native API (/v1) like any other: it keeps its bearer token in the
// browser's localStorage.
//
// Handler serves the document at exactly / and the files of static/assets
// under /assets/; the caller mounts it on those two patterns only, so every
// other path keeps the API's own 404.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"time"
)

//go:embed static
var static embed.FS

// Prefix is the path under which the page's assets are served.
const Prefix = "/assets/"

// csp allows the page its own origin only: scripts, styles and API calls
// (fetch) to the server that served it, no inline script, no framing;
// images of its own origin, and blob: for the pictures a composer picked
// before they are uploaded.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	body []byte
	etag string
}

// Handler returns the handler of the page and its assets; a path that names
// no file is answered by notFound (the API's own 404). Files are read once;
// each answer carries a strong ETag so a reload costs a 304.
func Handler(notFound http.Handler) http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files[p[len("static"):]] = file{body: b, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: embedded files: " + err.Error()) // the embed is checked at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path
		if name == "/" {
			name = "/index.html"
		}
		f, ok := files[name]
		if !ok || (name != "/index.html" && path.Dir(name)+"/" != Prefix) {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // revalidate: the ETag makes that a 304
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}
