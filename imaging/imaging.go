// Package imaging turns an upload into the images feedd stores and serves
// (feed.ImageProcessor): the type sniffed from the bytes, the size checked
// from the header before any pixel is decoded, the EXIF orientation
// applied, and a display and a preview rendition encoded afresh, so no
// metadata of the upload (GPS position, camera, XMP, comments) survives.
// It is computation only: golang.org/x/image for WebP and resampling, a
// blurhash encoder, and the standard library.
package imaging

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/bbrks/go-blurhash"
	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	feed "github.com/feedd/feedd"
)

// JPEGQuality is the quality of the JPEG renditions.
const JPEGQuality = 85

// Processor is feed.ImageProcessor. At most Workers images are decoded at
// once (at least 1): an image's decoded pixels take up to 8 bytes each
// (feed.MediaSettings.MaxPixels bounds them), so Workers bounds the memory
// of decoding whatever arrives.
type Processor struct {
	slots chan struct{}
}

var _ feed.ImageProcessor = (*Processor)(nil)

// New returns a Processor decoding at most workers images at once.
func New(workers int) *Processor {
	return &Processor{slots: make(chan struct{}, max(workers, 1))}
}

// Sniff returns the format of an image from its first bytes (jpeg, png,
// gif or webp), "" for anything else.
func Sniff(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "webp"
	}
	return ""
}

var errNotImage = feed.Errorf(feed.EINVALID, "the upload is not an image feedd takes: send a JPEG, PNG, GIF or WebP")

// Inspect implements feed.ImageProcessor: the type from the magic bytes,
// the dimensions from the header (image.DecodeConfig of that format only).
func (p *Processor) Inspect(head []byte, maxPixels int) (feed.ImageInfo, error) {
	format := Sniff(head)
	if format == "" {
		return feed.ImageInfo{}, errNotImage
	}
	cfg, err := decodeConfig(format, bytes.NewReader(head))
	if err != nil {
		return feed.ImageInfo{}, feed.Errorf(feed.EINVALID, "the %s header is damaged or cut short: %v", format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return feed.ImageInfo{}, feed.Errorf(feed.EINVALID, "the image declares no pixels")
	}
	if int64(cfg.Width)*int64(cfg.Height) > int64(maxPixels) {
		return feed.ImageInfo{}, feed.Errorf(feed.ETOOLARGE, "the image is %dx%d pixels; at most %d pixels are taken", cfg.Width, cfg.Height, maxPixels)
	}
	return feed.ImageInfo{Format: format, Width: cfg.Width, Height: cfg.Height}, nil
}

func decodeConfig(format string, r io.Reader) (image.Config, error) {
	switch format {
	case "jpeg":
		return jpeg.DecodeConfig(r)
	case "png":
		return png.DecodeConfig(r)
	case "gif":
		return gif.DecodeConfig(r)
	case "webp":
		return webp.DecodeConfig(r)
	}
	return image.Config{}, errors.New("unknown format")
}

func decode(format string, r io.Reader) (image.Image, error) {
	switch format {
	case "jpeg":
		return jpeg.Decode(r)
	case "png":
		return png.Decode(r)
	case "gif":
		return gif.Decode(r) // the first frame
	case "webp":
		return webp.Decode(r)
	}
	return nil, errors.New("unknown format")
}

// Process implements feed.ImageProcessor. An upload that also reads as
// markup (Markup) is refused before it is decoded.
func (p *Processor) Process(ctx context.Context, src io.ReaderAt, size int64, info feed.ImageInfo) (*feed.Renditions, error) {
	if m := Markup(io.NewSectionReader(src, 0, size)); m != "" {
		return nil, feed.Errorf(feed.EINVALID, "the upload is an image that also reads as a document (it holds %q): refused", m)
	}
	orient := Orientation(src, size, info.Format)
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, feed.Errorf(feed.EBUSY, "too many images are being processed; retry in a moment")
	}
	defer func() { <-p.slots }()
	img, err := decode(info.Format, io.NewSectionReader(src, 0, size))
	if err != nil {
		return nil, feed.Errorf(feed.EINVALID, "the %s image could not be decoded: %v", info.Format, err)
	}
	if b := img.Bounds(); b.Dx() != info.Width || b.Dy() != info.Height {
		return nil, feed.Errorf(feed.EINVALID, "the %s image is not the size its header declares", info.Format)
	}
	display := Orient(resize(img, feed.DisplaySize, draw.ApproxBiLinear), orient)
	img = nil // the decoded pixels may go before the encoding
	preview := resize(display, feed.PreviewSize, draw.CatmullRom)
	out := &feed.Renditions{Width: display.Bounds().Dx(), Height: display.Bounds().Dy()}
	if out.Display, out.ContentType, err = encode(display); err != nil {
		return nil, err
	}
	if out.Preview, _, err = encode(preview); err != nil {
		return nil, err
	}
	if out.Blurhash, err = blurhash.Encode(4, 3, resize(preview, 32, draw.ApproxBiLinear)); err != nil {
		return nil, err
	}
	return out, nil
}

// fit returns w x h scaled to fit a square of side long (never larger).
func fit(w, h, long int) (int, int) {
	if w <= long && h <= long {
		return w, h
	}
	if w >= h {
		return long, max(1, (h*long+w/2)/w)
	}
	return max(1, (w*long+h/2)/h), long
}

// scale draws img at w x h with k into a new *image.RGBA at the origin.
func scale(img image.Image, w, h int, k draw.Interpolator) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	b := img.Bounds()
	if w == b.Dx() && h == b.Dy() {
		draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
	} else {
		k.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	}
	return dst
}

// resize returns img scaled to fit a square of side long (never larger).
// A large image is halved first, each halving an exact 2x2 average
// (ApproxBiLinear at 2:1), until it is within twice the size, and then
// scaled by at most 2 with k. Kernel scalers over the whole of a large
// image cost 10 to 20 times as much (draw.CatmullRom from 12 to 3
// megapixels: seconds of CPU, against tenths for the halvings).
func resize(img image.Image, long int, k draw.Interpolator) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	for w > 2*long || h > 2*long {
		w, h = max(1, w/2), max(1, h/2)
		img = scale(img, w, h, draw.ApproxBiLinear)
	}
	w, h = fit(w, h, long)
	return scale(img, w, h, k)
}

// encode encodes img as a JPEG, or as a PNG when it has transparent
// pixels; it returns the bytes and their content type.
func encode(img *image.RGBA) ([]byte, string, error) {
	var buf bytes.Buffer
	if img.Opaque() {
		// JPEG has no alpha: an opaque RGBA's channels are the colours.
		err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality})
		return buf.Bytes(), "image/jpeg", err
	}
	// Premultiplied RGBA becomes the PNG's straight alpha (NRGBA).
	n := image.NewNRGBA(img.Bounds())
	draw.Draw(n, n.Bounds(), img, img.Bounds().Min, draw.Src)
	err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, n)
	return buf.Bytes(), "image/png", err
}
