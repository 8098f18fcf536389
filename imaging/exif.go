package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"io"
)

// Orientation returns the EXIF orientation (1 to 8; 1 when there is none
// or it cannot be read) of an image of format in src (size bytes): the
// tag 0x0112 of the TIFF structure's first IFD, found in a JPEG's APP1
// "Exif" segment, a PNG's eXIf chunk or a WebP's EXIF chunk. Only that
// one tag is read, and only from those places: reading one field of a
// bounded structure needs no EXIF library (and its dependencies); the
// renditions carry no metadata at all, so nothing else of the EXIF
// matters.
func Orientation(src io.ReaderAt, size int64, format string) int {
	var tiff []byte
	switch format {
	case "jpeg":
		tiff = jpegExif(src, size)
	case "png":
		tiff = pngExif(src, size)
	case "webp":
		tiff = webpExif(src, size)
	}
	return tiffOrientation(tiff)
}

// maxExif is the most EXIF bytes read: a JPEG segment's limit.
const maxExif = 64 << 10

func readAt(src io.ReaderAt, off int64, n int) []byte {
	b := make([]byte, n)
	if k, _ := src.ReadAt(b, off); k < n {
		return nil
	}
	return b
}

var exifHeader = []byte("Exif\x00\x00")

// jpegExif walks a JPEG's segments up to the start of its scan.
func jpegExif(src io.ReaderAt, size int64) []byte {
	off := int64(2)
	for range 64 {
		h := readAt(src, off, 4)
		if h == nil || h[0] != 0xff {
			return nil
		}
		marker := h[1]
		if marker == 0xda || marker == 0xd9 { // start of scan, end of image
			return nil
		}
		n := int64(binary.BigEndian.Uint16(h[2:]))
		if n < 2 || off+2+n > size {
			return nil
		}
		if marker == 0xe1 && n > int64(len(exifHeader))+2 {
			if body := readAt(src, off+4, int(n-2)); bytes.HasPrefix(body, exifHeader) {
				return body[len(exifHeader):]
			}
		}
		off += 2 + n
	}
	return nil
}

// pngExif walks a PNG's chunks up to its image data.
func pngExif(src io.ReaderAt, size int64) []byte {
	off := int64(8)
	for range 1024 {
		h := readAt(src, off, 8)
		if h == nil {
			return nil
		}
		n := int64(binary.BigEndian.Uint32(h))
		switch string(h[4:8]) {
		case "IDAT", "IEND":
			return nil
		case "eXIf":
			if n > maxExif || off+8+n > size {
				return nil
			}
			return readAt(src, off+8, int(n))
		}
		off += 12 + n
	}
	return nil
}

// webpExif walks a WebP's RIFF chunks; the EXIF chunk comes after the
// image data.
func webpExif(src io.ReaderAt, size int64) []byte {
	off := int64(12)
	for range 1024 {
		h := readAt(src, off, 8)
		if h == nil {
			return nil
		}
		n := int64(binary.LittleEndian.Uint32(h[4:]))
		if string(h[:4]) == "EXIF" {
			if n > maxExif || off+8+n > size {
				return nil
			}
			b := readAt(src, off+8, int(n))
			return bytes.TrimPrefix(b, exifHeader)
		}
		off += 8 + n + n&1
	}
	return nil
}

// tiffOrientation reads tag 0x0112 (a SHORT) of the first IFD of tiff.
func tiffOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(tiff[2:]) != 42 {
		return 1
	}
	ifd := int(bo.Uint32(tiff[4:]))
	if ifd < 8 || ifd+2 > len(tiff) {
		return 1
	}
	n := int(bo.Uint16(tiff[ifd:]))
	for i := range n {
		e := ifd + 2 + 12*i
		if e+12 > len(tiff) {
			return 1
		}
		if bo.Uint16(tiff[e:]) == 0x0112 && bo.Uint16(tiff[e+2:]) == 3 {
			if o := int(bo.Uint16(tiff[e+8:])); o >= 1 && o <= 8 {
				return o
			}
			return 1
		}
	}
	return 1
}

// Orient returns img turned as EXIF orientation o says it must be shown:
// 2 mirrored, 3 turned half a turn, 4 flipped, 5 transposed, 6 turned a
// quarter clockwise, 7 transversed, 8 turned a quarter anticlockwise.
func Orient(img *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return img
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for dy := range dh {
		for dx := range dw {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = w-1-dx, dy
			case 3:
				sx, sy = w-1-dx, h-1-dy
			case 4:
				sx, sy = dx, h-1-dy
			case 5:
				sx, sy = dy, dx
			case 6:
				sx, sy = dy, h-1-dx
			case 7:
				sx, sy = w-1-dy, h-1-dx
			case 8:
				sx, sy = w-1-dy, dx
			}
			s := img.PixOffset(img.Rect.Min.X+sx, img.Rect.Min.Y+sy)
			d := dst.PixOffset(dx, dy)
			copy(dst.Pix[d:d+4], img.Pix[s:s+4])
		}
	}
	return dst
}
