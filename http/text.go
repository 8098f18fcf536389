package http

import (
	"unicode/utf8"

	feed "github.com/feedd/feedd"
)

// checkText refuses a request body that is not valid UTF-8 or whose JSON
// escapes name a lone surrogate (\ud800 without its pair): both would be
// stored as U+FFFD, silently changing what the client sent.
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		return feed.Errorf(feed.EINVALID, "request body must be valid UTF-8")
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			continue
		}
		i++ // the escaped character
		if body[i] != 'u' {
			continue
		}
		r, ok := hex4(body, i+1)
		if !ok {
			continue // malformed: the JSON decoder refuses it
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return loneSurrogate()
		case r >= 0xd800 && r <= 0xdbff:
			if i+6 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
				return loneSurrogate()
			}
			lo, ok := hex4(body, i+3)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return loneSurrogate()
			}
			i += 6
		}
	}
	return nil
}

func loneSurrogate() error {
	return feed.Errorf(feed.EINVALID, "request body must be valid UTF-8 (a \\u escape names half of a surrogate pair)")
}

// hex4 parses the 4 hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
