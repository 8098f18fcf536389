package http

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	feed "github.com/feedd/feedd"
)

// Uploads and the images served (docs/API.md, "Photos"). An upload's body
// is not held in memory: it streams into a temporary file, hashed on its
// way in, within UploadTimeout, its concurrency slot lent back meanwhile
// as every body's is (body.go). Its size is bounded by the service's
// --media-max-bytes, not MaxBody.

// DefaultUploadTimeout is how long an upload's body may take to arrive
// (Server.UploadTimeout).
const DefaultUploadTimeout = 2 * time.Minute

// uploadSlack is what a multipart body may hold besides the image: its
// boundaries, part headers and small fields.
const uploadSlack = 64 << 10

// imageCSP runs nothing: an image is shown, never a document.
const imageCSP = "default-src 'none'; sandbox"

// isUpload reports whether r is an upload, whose body limits are the
// service's (limitBody and v1LimitBody leave it alone).
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/upload/blog" || r.URL.Path == "/v1/media")
}

// upload is a received upload: its file and what came with it.
type upload struct {
	feed.Upload
	file *os.File
}

func (u *upload) close() {
	if u.file != nil {
		u.file.Close()
		os.Remove(u.file.Name())
	}
}

// receive reads the upload of r into a temporary file: the multipart
// part "file" (and, on /v1, the field "alt"), or a body that is the image
// itself. It answers the refusal and returns nil when the body is too
// large (413), malformed (400), too slow (408), or the request's slot
// could not be taken back (503).
func (s *Server) receive(w http.ResponseWriter, r *http.Request) *upload {
	fail := s.fail
	if isV1(r) {
		fail = s.v1Fail
	}
	max := s.Service.MaxUploadBytes()
	tooLarge := feed.Errorf(feed.ETOOLARGE, "an image must be at most %d bytes", max)
	if r.ContentLength > max+uploadSlack {
		w.Header().Set("Connection", "close")
		fail(w, r, tooLarge)
		return nil
	}
	src := r.Body
	if h, ok := r.Body.(*heldBody); ok {
		src = h.rc
	}
	a, _ := r.Context().Value(admissionKey{}).(*admission)
	a.pause()
	rc := http.NewResponseController(w)
	timeout := cmp.Or(s.UploadTimeout, DefaultUploadTimeout)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	up, err := s.spool(r, io.LimitReader(src, max+uploadSlack+1), max)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(timeout)) // the processing's time, and the answer's
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		up.close()
		s.refuseSlowBody(w, r, timeout)
		return nil
	case errors.Is(err, errUploadTooLarge):
		up.close()
		w.Header().Set("Connection", "close")
		fail(w, r, tooLarge)
		return nil
	case err != nil:
		up.close()
		if feed.ErrorCode(err) == feed.EINTERNAL {
			err = feed.Errorf(feed.EINVALID, "the upload could not be read: %v", err)
		}
		w.Header().Set("Connection", "close")
		fail(w, r, err)
		return nil
	}
	if !a.resume(r) {
		up.close()
		s.refuseBusy(w, r, ErrShed, a.retryAfter())
		return nil
	}
	return up
}

var errUploadTooLarge = errors.New("upload too large")

// spool copies the upload of r's body (read from src) into a temporary
// file, at most max bytes of image.
func (s *Server) spool(r *http.Request, src io.Reader, max int64) (*upload, error) {
	up := &upload{}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var part io.Reader
	switch {
	case mt == "multipart/form-data":
		br := bufio.NewReaderSize(src, 4096)
		mr := multipart.NewReader(br, multipartBoundary(br, params["boundary"]))
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return up, feed.Errorf(feed.EINVALID, "the form has no part named file: send the image as the multipart field file")
			} else if err != nil {
				return up, err
			}
			switch p.FormName() {
			case "file":
				part = p
			case "alt":
				b, err := io.ReadAll(io.LimitReader(p, 4*feed.MaxAlt+1))
				if err != nil {
					return up, err
				}
				up.Alt = string(b)
				continue
			default:
				continue
			}
			break
		}
	case strings.HasPrefix(mt, "image/") || mt == "application/octet-stream" || (mt == "" && !isV1(r)):
		part = src
	default:
		return up, feed.Errorf(feed.EINVALID, "send the image as multipart/form-data (field file) or as the body with its image/* Content-Type")
	}
	f, err := os.CreateTemp(s.UploadDir, "feedd-upload-*")
	if err != nil {
		return up, err
	}
	up.file = f
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(part, max+1))
	if err != nil {
		return up, err
	}
	if n > max {
		return up, errUploadTooLarge
	}
	up.File, up.Size, up.SHA256 = f, n, hex.EncodeToString(h.Sum(nil))
	return up, nil
}

// multipartBoundary is the boundary of a multipart body: the declared
// one, or, when the body's first line is a different delimiter, that
// one. The tutorial's publish page declares a boundary of its own
// ("multipart/form-data;boundary=" + the time) that a browser's FormData
// body may not use.
func multipartBoundary(br *bufio.Reader, declared string) string {
	line, err := br.Peek(min(br.Size(), 200))
	if err != nil && len(line) == 0 {
		return declared
	}
	if i := bytes.IndexByte(line, '\n'); i > 0 {
		line = bytes.TrimRight(line[:i], "\r \t")
		if b, ok := bytes.CutPrefix(line, []byte("--")); ok && len(b) > 0 && string(b) != declared {
			return string(b)
		}
	}
	return declared
}

// handleUpload is the compatible POST /upload/blog: the name of the new
// upload, which the page prefixes with /imgs.
func (s *Server) handleUpload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := s.receive(w, r)
		if up == nil {
			return
		}
		defer up.close()
		m, err := s.Service.UploadMedia(r.Context(), userID(r), up.Upload)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, m.Name)
	})
}

// handleDeleteUpload is the compatible GET /upload/blog/delete?name=/imgs/...
func (s *Server) handleDeleteUpload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			s.fail(w, r, feed.Errorf(feed.EINVALID, "name must be the path of an upload, %s/blogs/...", feed.MediaPrefix))
			return
		}
		if err := s.Service.DeleteUpload(r.Context(), userID(r), name); err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

// handleImage serves GET /imgs/...: an upload's display rendition by its
// name, a preview by its object key. The bytes never change under a URL,
// so a client or a proxy keeps them a year; they are only ever served as
// the JPEG or PNG feedd encoded, and run nothing.
func (s *Server) handleImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := s.Service.OpenMedia(r.Context(), r.URL.Path)
		if err == nil {
			defer f.Close()
			var whole bool
			if whole, err = writeWhole(w, r, f); whole {
				return
			}
		}
		if err != nil {
			err = s.outage(r, err)
			code := feed.ErrorCode(err)
			status, ok := v1Status[code]
			if !ok || code == feed.EINTERNAL {
				s.fail(w, r, err)
				return
			}
			noteCode(r, code)
			retryAfter(w, err)
			s.encode(w, status, envelope{ErrorMsg: feed.ErrorMessage(err)})
			return
		}
		setImageHeaders(w.Header(), f)
		// The object itself, not f: a file reaches the connection as
		// a file (statusWriter.ReadFrom), sent by the kernel.
		http.ServeContent(w, r, "", f.Modified, f.ReadSeekCloser)
	})
}

// setImageHeaders sets the headers of every image answer: its type, a
// year of caching, its validator, and a policy that runs nothing.
func setImageHeaders(h http.Header, f *feed.MediaFile) {
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", f.ETag)
	h.Set("Content-Security-Policy", imageCSP)
	h.Set("Cross-Origin-Resource-Policy", "same-site")
}

// wholeImage is the size up to which an image asked for whole and
// unconditionally (a preview, typically) is read into memory and written
// with its headers at once: fewer system calls than http.ServeContent's
// seeks, sniffing read and sendfile, which serves every other request.
const wholeImage = 64 << 10

var wholeBuffers = sync.Pool{New: func() any { return new([wholeImage]byte) }}

// writeWhole answers a plain GET of f, at most wholeImage bytes, with the
// headers of the image and those http.ServeContent would send
// (Last-Modified, Accept-Ranges, Content-Length), and reports whether it
// did; a read error is returned unanswered. A request with a Range or a
// condition is left to http.ServeContent.
func writeWhole(w http.ResponseWriter, r *http.Request, f *feed.MediaFile) (bool, error) {
	if r.Method != http.MethodGet || f.Size <= 0 || f.Size > wholeImage {
		return false, nil
	}
	for _, k := range []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		if _, ok := r.Header[k]; ok {
			return false, nil
		}
	}
	buf := wholeBuffers.Get().(*[wholeImage]byte)
	defer wholeBuffers.Put(buf)
	b := buf[:f.Size]
	if _, err := io.ReadFull(f, b); err != nil {
		return false, feed.MediaStoreDown(err)
	}
	h := w.Header()
	setImageHeaders(h, f)
	if !f.Modified.IsZero() {
		h.Set("Last-Modified", f.Modified.UTC().Format(http.TimeFormat))
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true, nil
}

// V1Media is an upload as /v1 shows it (the OpenAPI schema V1Media).
type V1Media struct {
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

func newV1Media(m *feed.Media) V1Media {
	return V1Media{ID: m.ID, URL: m.URL(), PreviewURL: m.Blob.PreviewURL(), Width: m.Blob.Width, Height: m.Blob.Height,
		ContentType: m.Blob.ContentType, Bytes: m.Blob.Bytes, Blurhash: m.Blob.Blurhash, Alt: m.Alt}
}

func v1MediaList(ms []feed.Media) []V1Media {
	out := make([]V1Media, len(ms))
	for i := range ms {
		out[i] = newV1Media(&ms[i])
	}
	return out
}

// v1Upload is POST /v1/media.
func (s *Server) v1Upload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := s.receive(w, r)
		if up == nil {
			return
		}
		defer up.close()
		m, err := s.Service.UploadMedia(r.Context(), userID(r), up.Upload)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.Header().Set("Location", fmt.Sprintf("/v1/media/%d", m.ID))
		s.v1JSON(w, http.StatusCreated, newV1Media(m))
	})
}

// v1Media is GET /v1/media/{id}: one of the caller's uploads.
func (s *Server) v1Media() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var m *feed.Media
		if err == nil {
			m, err = s.Service.OwnMedia(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, newV1Media(m))
	})
}

// v1PatchMedia is PATCH /v1/media/{id}: the alt text.
func (s *Server) v1PatchMedia() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var in struct {
			Alt *string `json:"alt"`
		}
		if err == nil {
			err = v1Decode(r, &in)
		}
		if err == nil && in.Alt == nil {
			err = feed.Errorf(feed.EINVALID, "nothing to change: send alt")
		}
		var m *feed.Media
		if err == nil {
			m, err = s.Service.SetMediaAlt(r.Context(), userID(r), id, *in.Alt)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, newV1Media(m))
	})
}

// v1DeleteMedia is DELETE /v1/media/{id}: an upload no post shows.
func (s *Server) v1DeleteMedia() http.Handler { return s.v1Action(s.Service.DeleteMedia) }
