package feed

import (
	"context"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Photos on posts (docs/API.md, "Photos"): an upload is sniffed, bounded by
// its header, re-encoded without its metadata into a display and a preview
// rendition (ImageProcessor), stored once per content (a Blob in the
// BlobStore, its rows in the MediaStore) and named by a path of the
// tutorial's form, /blogs/<a>/<b>/<uuid>.<ext>, served under /imgs. A post
// shows at most MaxImageItems of its author's uploads, in order.

// Limits and defaults of media.
const (
	// MaxAlt is the longest alt text, in characters (Mastodon's).
	MaxAlt = 1500
	// DefaultMediaMaxBytes is the largest upload (--media-max-bytes).
	DefaultMediaMaxBytes = 20 << 20
	// DefaultMediaMaxPixels is the most pixels an upload may declare
	// (--media-max-pixels): a 50-megapixel camera's full frame.
	DefaultMediaMaxPixels = 50_000_000
	// DefaultMediaOrphanTTL is how long an upload that no post uses is
	// kept (--media-orphan-ttl): from its upload, or from the deletion of
	// the post that used it.
	DefaultMediaOrphanTTL = 24 * time.Hour
	// DisplaySize and PreviewSize are the long sides, in pixels, of the
	// two renditions (never larger than the upload).
	DisplaySize = 2048
	PreviewSize = 640
	// MediaPrefix is the path under which media are served.
	MediaPrefix = "/imgs"
	// AbandonedBlobAfter: a blob still being written this long after it
	// was begun belongs to an upload that died; the sweep removes it.
	AbandonedBlobAfter = time.Hour
)

// Blob is the stored renditions of one image. Identical uploads (the same
// bytes, by their SHA-256) share one blob.
type Blob struct {
	ID int64
	// Key names the blob's objects (DisplayObject, PreviewObject): 32
	// random hex digits, never reused.
	Key string
	// ContentType of both renditions: image/jpeg or image/png.
	ContentType string
	// Width, Height and Bytes are the display rendition's.
	Width, Height int
	Bytes         int64
	// Blurhash is a placeholder to show while the image loads.
	Blurhash string
}

// Ext is the file extension of the blob's renditions, with its dot.
func (b *Blob) Ext() string {
	if b.ContentType == "image/png" {
		return ".png"
	}
	return ".jpg"
}

// DisplayObject is the object key of the display rendition.
func (b *Blob) DisplayObject() string { return "d/" + b.Key[:2] + "/" + b.Key + b.Ext() }

// PreviewObject is the object key of the preview rendition.
func (b *Blob) PreviewObject() string { return "p/" + b.Key[:2] + "/" + b.Key + b.Ext() }

// Objects are the blob's object keys.
func (b *Blob) Objects() []string { return []string{b.DisplayObject(), b.PreviewObject()} }

// PreviewURL is the path the preview is served at: its object key under
// MediaPrefix, so a reverse proxy may serve --media-dir itself.
func (b *Blob) PreviewURL() string { return MediaPrefix + "/" + b.PreviewObject() }

// Media is one upload of one user: a blob, its name and alt text, and the
// post that shows it.
type Media struct {
	ID     int64
	UserID int64
	// Name is the tutorial's path of the upload, "/blogs/<a>/<b>/<uuid>.<ext>",
	// served at MediaPrefix + Name (URL).
	Name string
	Alt  string
	// PostID is the post that shows it (0: none); Position its place there.
	PostID    int64
	Position  int
	CreatedAt time.Time
	Blob      Blob
}

// URL is the path the display rendition is served at.
func (m *Media) URL() string { return MediaPrefix + m.Name }

// MediaStore keeps the rows of media and blobs (sqlite, postgres);
// feedtest.TestMedia is its contract. Every call that deletes media also
// deletes, in its transaction, the blobs no media uses any more and moves
// their objects to the trash (Trash), so the objects outlive their rows
// only until the sweep deletes them.
type MediaStore interface {
	// SourceBlob returns the ready blob made from an upload whose bytes
	// have the SHA-256 sourceHash (hex); ENOTFOUND when there is none.
	SourceBlob(ctx context.Context, sourceHash string) (*Blob, error)
	// BeginBlob records b, whose objects are about to be written, as
	// pending, and sets b.ID. A pending blob is never returned by
	// SourceBlob; one still pending after AbandonedBlobAfter is removed by
	// ExpireMedia.
	BeginBlob(ctx context.Context, b *Blob, sourceHash string, now time.Time) error
	// DropBlob removes a pending blob whose objects could not all be
	// written, its objects to the trash. Idempotent.
	DropBlob(ctx context.Context, id int64) error
	// AddMedia records m (setting m.ID), of m.UserID, on the blob m.Blob.ID,
	// shown by post m.PostID at m.Position when PostID is not 0, and makes
	// the blob ready, in one transaction. ENOTFOUND when the blob no longer
	// exists (removed meanwhile); ECONFLICT when m.Name is taken.
	AddMedia(ctx context.Context, m *Media) error
	// Media returns the media among ids that exist, by id.
	Media(ctx context.Context, ids []int64) (map[int64]*Media, error)
	// MediaNamed returns the media named name; ENOTFOUND if none.
	MediaNamed(ctx context.Context, name string) (*Media, error)
	// MediaOfPosts returns the media of the posts among postIDs that
	// have any, each post's in their order.
	MediaOfPosts(ctx context.Context, postIDs []int64) (map[int64][]Media, error)
	// SetMediaAlt sets the alt text of media id of userID. ENOTFOUND when
	// userID has no media id.
	SetMediaAlt(ctx context.Context, id, userID int64, alt string) error
	// DeleteUnusedMedia deletes media id of userID while no post shows it.
	// ENOTFOUND if there is none, EFORBIDDEN if it is another user's,
	// ECONFLICT if a post shows it.
	DeleteUnusedMedia(ctx context.Context, id, userID int64) error
	// DeleteUserMedia deletes at most limit media of userID, shown or not,
	// and returns how many it deleted (fewer than limit: none is left).
	DeleteUserMedia(ctx context.Context, userID int64, limit int) (int, error)
	// ExpireMedia deletes at most limit media that no post has shown since
	// before unusedBefore (their upload, or the deletion of their post),
	// and at most limit blobs still pending since before abandonedBefore,
	// and returns how many rows it deleted.
	ExpireMedia(ctx context.Context, unusedBefore, abandonedBefore time.Time, limit int) (int, error)
	// Trash returns at most limit object keys of removed blobs, still to
	// delete from the BlobStore.
	Trash(ctx context.Context, limit int) ([]string, error)
	// ForgetTrash forgets object keys deleted from the BlobStore.
	ForgetTrash(ctx context.Context, keys []string) error
}

// BlobStore keeps the objects of blobs: files under --media-dir
// (files.Store) or an S3 bucket (s3.Store). Any process of a deployment
// reads what any other wrote. A store out of reach answers EUNAVAILABLE
// (MediaStoreDown).
type BlobStore interface {
	// Put writes the object key. Idempotent.
	Put(ctx context.Context, key, contentType string, body []byte) error
	// Open returns the object key for reading with its size and the time
	// it was written; ENOTFOUND if there is none. The caller closes it.
	Open(ctx context.Context, key string) (Object, error)
	// Delete removes the objects keys; absent ones are not an error.
	Delete(ctx context.Context, keys ...string) error
}

// Object is an object of a BlobStore open for reading.
type Object struct {
	io.ReadSeekCloser
	Size     int64
	Modified time.Time
}

// ImageProcessor turns an upload into the renditions feedd stores
// (imaging.Processor). Implementations bound how many images they decode
// at once.
type ImageProcessor interface {
	// Inspect reads the start of an upload (its first InspectBytes) and
	// returns its type and size as the header declares them, without
	// decoding pixels: EINVALID for a type that is not JPEG, PNG, GIF or
	// WebP (whatever it is called), ETOOLARGE for more pixels than
	// maxPixels.
	Inspect(head []byte, maxPixels int) (ImageInfo, error)
	// Process decodes src (size bytes, which Inspect found to be info),
	// applies its EXIF orientation and encodes the display and preview
	// renditions without any metadata. EINVALID for an upload that is not
	// what its header says, or that also reads as markup (a polyglot). It
	// waits for a decoding slot, at most until ctx ends (then EBUSY).
	Process(ctx context.Context, src io.ReaderAt, size int64, info ImageInfo) (*Renditions, error)
}

// InspectBytes is how much of an upload ImageProcessor.Inspect is given.
const InspectBytes = 64 << 10

// ImageInfo is what an upload's header declares.
type ImageInfo struct {
	Format        string // jpeg, png, gif or webp
	Width, Height int
}

// Renditions are an upload re-encoded.
type Renditions struct {
	ContentType   string
	Display       []byte
	Width, Height int
	Preview       []byte
	Blurhash      string
}

// MediaSettings are the limits of uploads; the zero value of a field is
// its default.
type MediaSettings struct {
	MaxBytes  int64         // DefaultMediaMaxBytes
	MaxPixels int           // DefaultMediaMaxPixels
	OrphanTTL time.Duration // DefaultMediaOrphanTTL
}

func (m MediaSettings) maxBytes() int64 {
	if m.MaxBytes > 0 {
		return m.MaxBytes
	}
	return DefaultMediaMaxBytes
}

func (m MediaSettings) maxPixels() int {
	if m.MaxPixels > 0 {
		return m.MaxPixels
	}
	return DefaultMediaMaxPixels
}

func (m MediaSettings) orphanTTL() time.Duration {
	if m.OrphanTTL > 0 {
		return m.OrphanTTL
	}
	return DefaultMediaOrphanTTL
}

// MaxUploadBytes is the largest upload the service accepts.
func (s *Service) MaxUploadBytes() int64 { return s.MediaLimits.maxBytes() }

// mediaOn reports whether the service stores media.
func (s *Service) mediaOn() bool { return s.Media != nil && s.Blobs != nil && s.Images != nil }

// errNoMedia refuses media routes of a service without media.
var errNoMedia = Errorf(ENOTFOUND, "this server stores no media")

// MediaName returns the name of the upload a post's image item names
// (its path under MediaPrefix), and whether it names one: a path of the
// form /imgs/blogs/...; anything else is an outside URL or another path.
func MediaName(item string) (string, bool) {
	name, ok := strings.CutPrefix(item, MediaPrefix+"/blogs/")
	if !ok {
		return "", false
	}
	return "/blogs/" + name, true
}

// validAlt returns EINVALID when alt is not an alt text.
func validAlt(alt string) error {
	switch {
	case !utf8.ValidString(alt):
		return Errorf(EINVALID, "alt must be valid UTF-8")
	case utf8.RuneCountInString(alt) > MaxAlt:
		return Errorf(EINVALID, "alt must be at most %d characters", MaxAlt)
	case strings.ContainsRune(alt, 0):
		return Errorf(EINVALID, "alt must not contain NUL characters")
	}
	return nil
}
