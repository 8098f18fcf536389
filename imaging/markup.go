package imaging

import (
	"bufio"
	"bytes"
	"io"
)

// markers are what a document a browser would run carries: HTML, SVG,
// XML and script. Each is long enough that compressed pixel data, which
// looks random, holds one by chance about once in a million uploads of
// 20 MB (the shortest, "<html>" and kin, are 6 bytes with 4 letters of
// either case: 2^4/2^48 a byte).
var markers = [][]byte{
	[]byte("<script"), []byte("<iframe"), []byte("<object"), []byte("<embed"),
	[]byte("<!doctype"), []byte("<?xml version"), []byte("<html>"), []byte("<html "),
	[]byte("<body>"), []byte("<body "), []byte("<svg>"), []byte("<svg "), []byte("www.w3.org/2000/svg"),
	[]byte("javascript:"),
}

// maxMarker is the longest marker.
const maxMarker = len("www.w3.org/2000/svg")

// Markup returns the first marker of a document (HTML, SVG, XML, script)
// that r holds anywhere, in any case, "" if none: an image that is also
// such a document (a polyglot) is refused, whatever a re-encoding would
// make of it.
func Markup(r io.Reader) string {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 64<<10+maxMarker)
	for {
		// Keep the last maxMarker-1 bytes so a marker across two reads is seen.
		keep := max(0, len(buf)-(maxMarker-1))
		buf = append(buf[:0], buf[keep:]...)
		n, err := io.ReadFull(br, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if m := findMarker(buf); m != "" {
			return m
		}
		if err != nil {
			return ""
		}
	}
}

func findMarker(b []byte) string {
	for i := 0; i < len(b); {
		j := bytes.IndexAny(b[i:], "<jJwW")
		if j < 0 {
			return ""
		}
		i += j
		for _, m := range markers {
			if len(b)-i >= len(m) && bytes.EqualFold(b[i:i+len(m)], m) {
				return string(m)
			}
		}
		i++
	}
	return ""
}
