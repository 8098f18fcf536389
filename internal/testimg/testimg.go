// Package testimg makes the images the tests upload: photos with EXIF
// (an orientation, a GPS position, a camera), decompression bombs and
// polyglots, all built in memory.
package testimg

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
)

// Secret is the camera's name written into the EXIF of Photo: no
// rendition may hold it.
const Secret = "FeeddSecretCamera"

// Picture is a w x h image with a distinct colour in each quadrant (top
// left red, top right green, bottom left blue, bottom right white), so
// that a turn or a flip shows.
func Picture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			var c color.RGBA
			switch {
			case x < w/2 && y < h/2:
				c = color.RGBA{255, 0, 0, 255}
			case y < h/2:
				c = color.RGBA{0, 255, 0, 255}
			case x < w/2:
				c = color.RGBA{0, 0, 255, 255}
			default:
				c = color.RGBA{255, 255, 255, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// JPEG encodes Picture(w, h).
func JPEG(w, h int) []byte {
	var b bytes.Buffer
	jpeg.Encode(&b, Picture(w, h), &jpeg.Options{Quality: 90})
	return b.Bytes()
}

// Noise is a w x h JPEG of random-looking pixels from seed: a photo's
// size on disk, for the benchmarks.
func Noise(w, h int, seed uint32) []byte {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	x := seed | 1
	for i := range img.Y {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Y[i] = byte(x)
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = byte(i), byte(i>>8)
	}
	var b bytes.Buffer
	jpeg.Encode(&b, img, &jpeg.Options{Quality: 85})
	return b.Bytes()
}

// GIF encodes a w x h two-colour GIF.
func GIF(w, h int) []byte {
	var b bytes.Buffer
	pal := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	for i := range pal.Pix {
		pal.Pix[i] = byte(i % 2)
	}
	gif.Encode(&b, pal, nil)
	return b.Bytes()
}

// Scene is a JPEG of about pixels pixels (4:3) from seed that compresses
// as a photo does (a few bits a pixel): smooth shapes under a grain.
func Scene(pixels int, seed uint32) []byte {
	w := int(math.Sqrt(float64(pixels) * 4 / 3))
	h := max(1, pixels/max(w, 1))
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	x := seed*2654435761 | 1
	fs := float64(seed)
	for py := range h {
		for px := range w {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			v := 128 + 70*math.Sin(float64(px)/97+fs)*math.Cos(float64(py)/73) + float64(x%16) - 8
			img.Y[py*img.YStride+px] = byte(max(0, min(255, v)))
		}
	}
	for py := range h / 2 {
		for px := range w / 2 {
			i := py*img.CStride + px
			img.Cb[i] = byte(128 + 40*math.Sin(float64(px)/211))
			img.Cr[i] = byte(128 + 40*math.Cos(float64(py)/157+fs))
		}
	}
	var b bytes.Buffer
	jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	return b.Bytes()
}

// PNG encodes Picture(w, h), with a transparent top left pixel when alpha.
func PNG(w, h int, alpha bool) []byte {
	img := Picture(w, h)
	if alpha {
		img.SetRGBA(0, 0, color.RGBA{})
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// Exif is the TIFF structure of an EXIF block: IFD0 with the orientation,
// the camera's make (Secret) and a pointer to a GPS IFD holding a latitude.
func Exif(orientation int) []byte {
	le := binary.LittleEndian
	var t []byte
	t = append(t, 'I', 'I', 42, 0, 8, 0, 0, 0)
	// IFD0 at 8: 3 entries.
	const n0 = 3
	ifd0End := 8 + 2 + 12*n0 + 4
	makeOff := ifd0End
	gpsOff := makeOff + len(Secret) + 1
	entry := func(tag, typ uint16, count, value uint32) {
		t = le.AppendUint16(t, tag)
		t = le.AppendUint16(t, typ)
		t = le.AppendUint32(t, count)
		t = le.AppendUint32(t, value)
	}
	t = le.AppendUint16(t, n0)
	entry(0x010f, 2, uint32(len(Secret)+1), uint32(makeOff)) // Make
	entry(0x0112, 3, 1, uint32(orientation))                 // Orientation (SHORT, left-justified)
	entry(0x8825, 4, 1, uint32(gpsOff))                      // GPSInfo
	t = le.AppendUint32(t, 0)
	t = append(t, Secret...)
	t = append(t, 0)
	// GPS IFD: latitude ref N and latitude 48/1 51/1 24/1.
	ratOff := gpsOff + 2 + 12*2 + 4
	t = le.AppendUint16(t, 2)
	entry(0x0001, 2, 2, uint32('N'))
	entry(0x0002, 5, 3, uint32(ratOff))
	t = le.AppendUint32(t, 0)
	for _, v := range []uint32{48, 1, 51, 1, 24, 1} {
		t = le.AppendUint32(t, v)
	}
	return t
}

// GPSLatitude is the bytes of Exif's latitude rationals: no rendition may
// hold them.
func GPSLatitude() []byte {
	var b []byte
	for _, v := range []uint32{48, 1, 51, 1, 24, 1} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// Photo is a w x h JPEG whose APP1 segment holds Exif(orientation): as a
// phone takes it, lying on its side when orientation is 6.
func Photo(w, h, orientation int) []byte {
	j := JPEG(w, h)
	app1 := append([]byte("Exif\x00\x00"), Exif(orientation)...)
	seg := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(app1)+2))
	seg = append(seg, app1...)
	// A comment segment too, which a re-encoding drops as well.
	com := []byte{0xff, 0xfe, 0, 0}
	binary.BigEndian.PutUint16(com[2:], uint16(len(Secret)+2))
	com = append(com, Secret...)
	out := append([]byte{}, j[:2]...)
	out = append(out, seg...)
	out = append(out, com...)
	return append(out, j[2:]...)
}

// PNGBomb is a PNG of a few hundred bytes whose header declares w x h
// pixels (its data is a few zero bytes: decoding it would allocate
// w*h*4 bytes first).
func PNGBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		b.Write(c)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8 bits, RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// JPEGBomb is a small JPEG whose frame header declares w x h pixels.
func JPEGBomb(w, h uint16) []byte {
	j := JPEG(16, 16)
	// Rewrite the SOF0 segment's height and width.
	for i := 2; i+9 < len(j); {
		if j[i] != 0xff {
			break
		}
		n := int(binary.BigEndian.Uint16(j[i+2:]))
		if j[i+1] == 0xc0 {
			binary.BigEndian.PutUint16(j[i+5:], h)
			binary.BigEndian.PutUint16(j[i+7:], w)
			break
		}
		i += 2 + n
	}
	return j
}

// HTML is a page with a script.
var HTML = []byte("<!doctype html><html><body><script>alert(document.cookie)</script></body></html>")

// SVG is an image that runs a script.
var SVG = []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="10" height="10"/></svg>`)

// Polyglot is a valid GIF that is also an HTML page: its comment
// extension holds a script a browser would run if it took the bytes for
// HTML.
func Polyglot() []byte {
	var b bytes.Buffer
	pal := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White})
	gif.Encode(&b, pal, nil)
	g := b.Bytes()
	// A comment extension right after the logical screen and colour table
	// (header 6 + screen 7 + table 2*3 bytes = 19).
	comment := []byte("<html><script>alert(1)</script></html>")
	ext := []byte{0x21, 0xfe, byte(len(comment))}
	ext = append(ext, comment...)
	ext = append(ext, 0)
	out := append([]byte{}, g[:19]...)
	out = append(out, ext...)
	return append(out, g[19:]...)
}
