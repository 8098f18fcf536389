package feed

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Upload is the bytes of one upload as they arrived: the HTTP layer keeps
// them (in a temporary file) and hashes them on their way in.
type Upload struct {
	File io.ReaderAt
	Size int64
	// SHA256 is the hex SHA-256 of the bytes.
	SHA256 string
	Alt    string
}

// MediaStoreDown is err, a failure of the BlobStore to answer, as the
// EUNAVAILABLE a client is told (503 with Retry-After).
func MediaStoreDown(err error) error {
	if ErrorCode(err) == EUNAVAILABLE {
		return err
	}
	return fmt.Errorf("%w: %w", &Error{Code: EUNAVAILABLE, Message: "the media store is unavailable; try again in a moment", RetryAfter: 5 * time.Second}, err)
}

// UploadMedia stores an upload of userID and returns it, shown by no post
// yet. The upload's type is sniffed from its bytes and its size and pixels
// checked from its header before anything is decoded (EINVALID: not an
// image feedd takes; ETOOLARGE: over --media-max-bytes or
// --media-max-pixels); the same bytes uploaded before (by anyone) are not
// decoded nor stored again. Over the per-user byte limit: ETOOMANY. While
// the BlobStore is out of reach: EUNAVAILABLE, and nothing is kept.
func (s *Service) UploadMedia(ctx context.Context, userID int64, up Upload) (*Media, error) {
	if !s.mediaOn() {
		return nil, errNoMedia
	}
	switch {
	case up.Size > s.MediaLimits.maxBytes():
		return nil, Errorf(ETOOLARGE, "an image must be at most %d bytes", s.MediaLimits.maxBytes())
	case up.Size == 0:
		return nil, Errorf(EINVALID, "the upload is empty: send an image (JPEG, PNG, GIF or WebP)")
	}
	if err := validAlt(up.Alt); err != nil {
		return nil, err
	}
	if err := s.countUploadBytes(ctx, userID, up.Size); err != nil {
		return nil, err
	}
	m := &Media{UserID: userID, Alt: up.Alt, CreatedAt: s.now().Truncate(time.Millisecond)}
	if err := s.addUpload(ctx, m, up, ""); err != nil {
		return nil, err
	}
	return m, nil
}

// addUpload stores up as m (of m.UserID, shown by m.PostID if set), named
// name or, if name is empty, a new name: the blob of the same bytes if
// there is one, else a new one (storeBlob).
func (s *Service) addUpload(ctx context.Context, m *Media, up Upload, name string) error {
	for range 2 { // a second time when the blob found was removed meanwhile
		b, err := s.Media.SourceBlob(ctx, up.SHA256)
		if ErrorCode(err) == ENOTFOUND {
			if b, err = s.storeBlob(ctx, up); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		m.Blob = *b
		m.Name = cmp.Or(name, mediaName(b.Ext()))
		err = s.Media.AddMedia(ctx, m)
		if ErrorCode(err) == ENOTFOUND {
			continue
		}
		return err
	}
	return Errorf(EUNAVAILABLE, "the upload raced the removal of its image; try again")
}

// ImportMedia stores data, a picture of an imported post postID of
// userID, at position, under the name it had (feedd import hmdp --images:
// its path under MediaPrefix stays the post's image). Idempotent: the
// same name already shown by postID is success; ECONFLICT when the name
// is another's; EINVALID or ETOOLARGE as UploadMedia.
func (s *Service) ImportMedia(ctx context.Context, userID, postID int64, position int, name string, data []byte) error {
	if !s.mediaOn() {
		return errNoMedia
	}
	if m, err := s.Media.MediaNamed(ctx, name); err == nil {
		if m.PostID == postID && m.UserID == userID {
			return nil
		}
		return Errorf(ECONFLICT, "an image named %s exists", name)
	} else if ErrorCode(err) != ENOTFOUND {
		return err
	}
	if int64(len(data)) > s.MediaLimits.maxBytes() {
		return Errorf(ETOOLARGE, "an image must be at most %d bytes", s.MediaLimits.maxBytes())
	}
	sum := sha256.Sum256(data)
	up := Upload{File: bytes.NewReader(data), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	m := &Media{UserID: userID, PostID: postID, Position: position, CreatedAt: s.now().Truncate(time.Millisecond)}
	return s.addUpload(ctx, m, up, name)
}

// countUploadBytes counts size bytes of userID's uploads against
// WriteLimits.MediaBytes, refusing (without counting) an upload that would
// go over it.
func (s *Service) countUploadBytes(ctx context.Context, userID, size int64) error {
	l := s.WriteLimits.MediaBytes
	if l.Off() || s.Rates == nil {
		return nil
	}
	key := "mediabytes:user:" + strconv.FormatInt(userID, 10)
	now := s.now()
	n, ends, err := s.Rates.Count(ctx, key, l.Window, now, 0)
	if err != nil {
		return err
	}
	if int64(n)+size > int64(l.N) {
		if ends.IsZero() || !ends.After(now) {
			ends = now.Add(l.Window) // no live window: the upload alone is over the limit
		}
		return TooMany(ends.Sub(now), "bytes of uploads")
	}
	_, _, err = s.Rates.Count(ctx, key, l.Window, now, int(size))
	return err
}

// storeBlob inspects, processes and stores the renditions of an upload
// none was made from before, and returns their blob (pending: AddMedia
// makes it ready).
func (s *Service) storeBlob(ctx context.Context, up Upload) (*Blob, error) {
	head := make([]byte, min(up.Size, InspectBytes))
	if _, err := up.File.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	info, err := s.Images.Inspect(head, s.MediaLimits.maxPixels())
	if err != nil {
		return nil, err
	}
	r, err := s.Images.Process(ctx, up.File, up.Size, info)
	if err != nil {
		return nil, err
	}
	b := &Blob{Key: randomHex(16), ContentType: r.ContentType, Width: r.Width, Height: r.Height, Bytes: int64(len(r.Display)), Blurhash: r.Blurhash}
	if err := s.Media.BeginBlob(ctx, b, up.SHA256, s.now()); err != nil {
		return nil, err
	}
	err = s.Blobs.Put(ctx, b.DisplayObject(), b.ContentType, r.Display)
	if err == nil {
		err = s.Blobs.Put(ctx, b.PreviewObject(), b.ContentType, r.Preview)
	}
	if err != nil {
		// Nothing half written stays: the objects go (or, if the store
		// cannot take even that, the trash keeps them for the sweep).
		dctx := context.WithoutCancel(ctx)
		if derr := s.Media.DropBlob(dctx, b.ID); derr != nil {
			s.log().Warn("drop a blob whose upload failed; the sweep removes it", "blob_id", b.ID, "error", derr)
		} else {
			s.emptyTrash(dctx)
		}
		return nil, MediaStoreDown(err)
	}
	return b, nil
}

// mediaName returns a new name of the tutorial's form,
// /blogs/<a>/<b>/<uuid><ext>, a and b from 0 to 15.
func mediaName(ext string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // a version 4 UUID, as the tutorial names its files
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return fmt.Sprintf("/blogs/%d/%d/%s-%s-%s-%s-%s%s", u[15]&0xf, u[15]>>4, h[:8], h[8:12], h[12:16], h[16:20], h[20:], ext)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SetMediaAlt sets the alt text of userID's upload id and returns it.
// ENOTFOUND when userID has no upload id; EINVALID for a bad text.
func (s *Service) SetMediaAlt(ctx context.Context, userID, id int64, alt string) (*Media, error) {
	if !s.mediaOn() {
		return nil, errNoMedia
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	if err := validAlt(alt); err != nil {
		return nil, err
	}
	if err := s.Media.SetMediaAlt(ctx, id, userID, alt); err != nil {
		return nil, err
	}
	ms, err := s.Media.Media(ctx, []int64{id})
	if err != nil {
		return nil, err
	} else if ms[id] == nil {
		return nil, ErrNotFound("media")
	}
	return ms[id], nil
}

// OwnMedia returns userID's upload id; ENOTFOUND for anyone else's.
func (s *Service) OwnMedia(ctx context.Context, userID, id int64) (*Media, error) {
	if !s.mediaOn() {
		return nil, errNoMedia
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	ms, err := s.Media.Media(ctx, []int64{id})
	if err != nil {
		return nil, err
	} else if m := ms[id]; m == nil || m.UserID != userID {
		return nil, ErrNotFound("media")
	}
	return ms[id], nil
}

// DeleteUpload deletes userID's upload named by url (its path under
// MediaPrefix, as the compatible API names it) while no post shows it.
// ENOTFOUND when there is none, EFORBIDDEN for another user's, ECONFLICT
// for one a post shows.
func (s *Service) DeleteUpload(ctx context.Context, userID int64, url string) error {
	if !s.mediaOn() {
		return errNoMedia
	}
	name, ok := MediaName(url)
	if !ok {
		return Errorf(EINVALID, "name must be the path of an upload, %s/blogs/...", MediaPrefix)
	}
	m, err := s.Media.MediaNamed(ctx, name)
	if err != nil {
		return err
	}
	return s.DeleteMedia(ctx, userID, m.ID)
}

// DeleteMedia deletes userID's upload id while no post shows it, as
// DeleteUpload.
func (s *Service) DeleteMedia(ctx context.Context, userID, id int64) error {
	if !s.mediaOn() {
		return errNoMedia
	}
	if err := s.Media.DeleteUnusedMedia(ctx, id, userID); err != nil {
		return err
	}
	s.emptyTrash(ctx)
	return nil
}

// DeleteUserMedia deletes every upload of userID, those their posts show
// too, and their objects no other upload shares: the media part of an
// account's erasure. Idempotent; it returns once all are gone.
func (s *Service) DeleteUserMedia(ctx context.Context, userID int64) error {
	if !s.mediaOn() {
		return nil
	}
	for {
		n, err := s.Media.DeleteUserMedia(ctx, userID, mediaBatch)
		if err != nil {
			return err
		}
		if err := s.emptyTrashAll(ctx); err != nil {
			return err
		}
		if n < mediaBatch {
			return nil
		}
	}
}

// mediaBatch is how many rows one transaction of the media's lifecycle
// deletes.
const mediaBatch = 500

// SweepMedia is the media's periodic job: it deletes the uploads no post
// has shown for MediaSettings.OrphanTTL, the blobs of uploads that died
// while writing, and the objects of the blobs removed. It returns how many
// rows and objects it deleted; more reports that it stopped at a batch's
// end with work left.
func (s *Service) SweepMedia(ctx context.Context) (n int, more bool, err error) {
	if !s.mediaOn() {
		return 0, false, nil
	}
	now := s.now()
	rows, err := s.Media.ExpireMedia(ctx, now.Add(-s.MediaLimits.orphanTTL()), now.Add(-AbandonedBlobAfter), mediaBatch)
	if err != nil {
		return 0, false, err
	}
	keys, err := s.Media.Trash(ctx, mediaBatch)
	if err != nil {
		return rows, false, err
	}
	if len(keys) > 0 {
		if err := s.Blobs.Delete(ctx, keys...); err != nil {
			return rows, false, err
		}
		if err := s.Media.ForgetTrash(ctx, keys); err != nil {
			return rows, false, err
		}
	}
	return rows + len(keys), rows >= mediaBatch || len(keys) >= mediaBatch, nil
}

// emptyTrash deletes the objects of removed blobs now, best effort: what
// it cannot delete the sweep deletes later.
func (s *Service) emptyTrash(ctx context.Context) {
	if err := s.emptyTrashAll(ctx); err != nil {
		s.log().Warn("delete objects of removed images; the sweep retries", "error", err)
	}
}

func (s *Service) emptyTrashAll(ctx context.Context) error {
	for {
		keys, err := s.Media.Trash(ctx, mediaBatch)
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := s.Blobs.Delete(ctx, keys...); err != nil {
			return err
		}
		if err := s.Media.ForgetTrash(ctx, keys); err != nil {
			return err
		}
		if len(keys) < mediaBatch {
			return nil
		}
	}
}

// objectKey matches the object keys MediaObject serves: the previews
// (Blob.PreviewObject).
var objectKey = regexp.MustCompile(`^p/[0-9a-f]{2}/[0-9a-f]{32}\.(jpg|png)$`)

// MediaFile is an image to serve.
type MediaFile struct {
	Object
	ContentType string
	// ETag is a strong validator of the bytes (they never change).
	ETag string
}

// OpenMedia opens the image served at path (under MediaPrefix): an
// upload's display rendition by its name, or a preview by its object key.
// ENOTFOUND when there is none.
func (s *Service) OpenMedia(ctx context.Context, path string) (*MediaFile, error) {
	if !s.mediaOn() {
		return nil, errNoMedia
	}
	rest, ok := strings.CutPrefix(path, MediaPrefix+"/")
	if !ok {
		return nil, ErrNotFound("image")
	}
	var key, ctype string
	if name, ok := MediaName(path); ok {
		m, err := s.Media.MediaNamed(ctx, name)
		if err != nil {
			return nil, err
		}
		key, ctype = m.Blob.DisplayObject(), m.Blob.ContentType
	} else if objectKey.MatchString(rest) {
		key, ctype = rest, "image/jpeg"
		if strings.HasSuffix(rest, ".png") {
			ctype = "image/png"
		}
	} else {
		return nil, ErrNotFound("image")
	}
	o, err := s.Blobs.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	// The key names the bytes, which never change: it is their validator.
	return &MediaFile{Object: o, ContentType: ctype, ETag: `"` + strings.ReplaceAll(key, "/", "-") + `"`}, nil
}

// attachMedia sets the media of views: one store call whatever the page
// size. Every post view is made by Hydrate or hydrateEntries, which both
// end here, so every route and event that shows a post shows its media.
func (s *Service) attachMedia(ctx context.Context, views []PostView) error {
	if s.Media == nil || len(views) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(views))
	for _, v := range views {
		ids = append(ids, v.ID)
	}
	media, err := s.Media.MediaOfPosts(ctx, ids)
	if err != nil {
		return err
	}
	for i := range views {
		views[i].Media = media[views[i].ID]
	}
	return nil
}

// postMedia resolves the media a post of userID will show: the uploads
// its image items name (MediaName) followed by mediaIDs, each userID's
// own and shown by no post. It returns their ids in order and the image
// list with every upload's URL in it (uploads named first keep their
// place; mediaIDs' URLs follow the items). ENOTFOUND for an id or a name
// that is no upload of userID; ECONFLICT for one a post shows.
func (s *Service) postMedia(ctx context.Context, userID int64, images string, mediaIDs []int64) ([]int64, string, error) {
	var items []string
	if images != "" {
		items = strings.Split(images, ",")
	}
	if !s.mediaOn() {
		if len(mediaIDs) > 0 {
			return nil, "", errNoMedia
		}
		return nil, images, nil
	}
	if len(items)+len(mediaIDs) > MaxImageItems {
		return nil, "", Errorf(EINVALID, "a post may show at most %d images", MaxImageItems)
	}
	var ids []int64
	for _, it := range items {
		name, ok := MediaName(it)
		if !ok {
			if strings.HasPrefix(it, "/") {
				return nil, "", Errorf(EINVALID, "images must be uploads to this server (%s/blogs/...) or http(s):// URLs", MediaPrefix)
			}
			continue
		}
		m, err := s.Media.MediaNamed(ctx, name)
		if ErrorCode(err) == ENOTFOUND || (err == nil && m.UserID != userID) {
			return nil, "", Errorf(ENOTFOUND, "image %s is not one of your uploads", it)
		} else if err != nil {
			return nil, "", err
		}
		ids = append(ids, m.ID)
	}
	if len(mediaIDs) > 0 {
		ms, err := s.Media.Media(ctx, mediaIDs)
		if err != nil {
			return nil, "", err
		}
		for _, id := range mediaIDs {
			m := ms[id]
			if m == nil || m.UserID != userID {
				return nil, "", Errorf(ENOTFOUND, "media %d is not one of your uploads", id)
			}
			ids = append(ids, id)
			items = append(items, m.URL())
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		return nil, "", Errorf(EINVALID, "a post shows each upload once")
	}
	return ids, strings.Join(items, ","), nil
}
