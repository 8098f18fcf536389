package hmdp

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	feed "github.com/feedd/feedd"
)

// PhaseImages copies the pictures the notes name from the tutorial's
// IMAGE_UPLOAD_DIR (Options.ImagesDir) into feedd's image store, each
// under its own path, so imported notes keep their pictures.
const PhaseImages = "images"

// Reasons an image item of a note is not brought over (the note keeps the
// item as it was).
const (
	SkipImageMissing = "image_missing" // no such file under the directory
	SkipImageRefused = "image_refused" // not an image feedd takes (its type, size or pixels), or one that also reads as a document
	SkipImageShared  = "image_shared"  // the path is another note's picture already: it shows there only
)

// imagesBatch is how many notes a batch of the images phase reads: each
// picture is decoded and re-encoded, so a batch is small.
const imagesBatch = 100

// ImageImporter stores the picture of an imported note (feed.Service).
type ImageImporter interface {
	// ImportMedia stores data as the upload named name of userID, shown
	// by post postID at position: idempotent for the same name and post,
	// ECONFLICT when name is another post's, EINVALID or ETOOLARGE for
	// what is not an image feedd takes.
	ImportMedia(ctx context.Context, userID, postID int64, position int, name string, data []byte) error
	// MaxUploadBytes is the largest image taken.
	MaxUploadBytes() int64
}

// imageItem is one picture of a note: the file name under the images
// directory ("/blogs/..."), as the note's image list names it under /imgs.
type imageItem struct {
	post, author int64
	position     int
	name         string
}

// noteImages returns the pictures of a note of the tutorial that live in
// its image directory: items /imgs/blogs/... that are clean paths.
func noteImages(p srcPost, author int64) []imageItem {
	var c cleaner
	var out []imageItem
	for i, it := range strings.Split(c.images(p.images), ",") {
		name, ok := feed.MediaName(it)
		if !ok || path.Clean(name) != name || strings.Contains(name, "..") {
			continue
		}
		out = append(out, imageItem{post: p.id, author: author, position: i, name: name})
	}
	return out
}

// importImages is the images phase: the notes of tb_blog in key order,
// their pictures copied one by one (a small step of its own: each item is
// imported or skipped with a reason, and the batch's checkpoint saved).
func (r *run) importImages(ctx context.Context) error {
	total, err := r.counted(ctx, "tb_blog")
	if err != nil {
		return err
	}
	return table(ctx, r, PhaseImages, total, imagesBatch, r.src.posts, func(p srcPost) int64 { return p.id },
		func(ctx context.Context, rows []srcPost, b *batch) error {
			b.read = len(rows)
			var items []imageItem
			for _, p := range rows {
				if ref, ok := r.posts[p.id]; ok {
					items = append(items, noteImages(p, ref.author)...)
				}
			}
			for _, it := range items {
				reason, detail, err := r.importImage(ctx, it)
				if err != nil {
					return err
				}
				if reason != "" {
					r.skip(b, reason, it.post, detail)
				} else {
					b.written++
				}
			}
			c := r.commit(b)
			cps := c(nil)
			r.cps[b.phase] = b.cp
			if r.o.Store == nil {
				return nil
			}
			return r.o.Store.SaveImportProgress(ctx, cps...)
		}, nil)
}

// importImage copies one picture, returning the reason it was skipped
// ("" if imported) and a detail for the log; an error (the image store
// out of reach) stops the import, to be resumed.
func (r *run) importImage(ctx context.Context, it imageItem) (reason, detail string, err error) {
	file := filepath.Join(r.o.ImagesDir, filepath.FromSlash(it.name))
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()):
		return SkipImageMissing, file, nil
	case err != nil:
		return SkipImageMissing, err.Error(), nil
	case r.o.Images != nil && fi.Size() > r.o.Images.MaxUploadBytes():
		return SkipImageRefused, "too large: " + file, nil
	case r.o.Store == nil || r.o.Images == nil:
		return "", "", nil // a dry run: the file is there
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return SkipImageMissing, err.Error(), nil
	}
	err = r.o.Images.ImportMedia(ctx, it.author, it.post, it.position, it.name, data)
	switch feed.ErrorCode(err) {
	case "":
		return "", "", nil
	case feed.ECONFLICT:
		return SkipImageShared, it.name, nil
	case feed.EINVALID, feed.ETOOLARGE:
		return SkipImageRefused, feed.ErrorMessage(err), nil
	}
	return "", "", err
}
