package feed_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	feed "github.com/feedd/feedd"
)

// FuzzDecodeCursor: DecodeCursor never panics, accepts only cursors that
// EncodeCursor gives back unchanged, and every cursor it accepts is in
// range.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(feed.EncodeCursor(feed.Cursor{Score: 1700000000000, PostID: 42}))
	f.Add("")
	f.Add("djE6MTow")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := feed.DecodeCursor(s)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("DecodeCursor(%q) = %v, want EINVALID", s, err)
			}
			return
		}
		if c.Score < 0 || c.PostID <= 0 {
			t.Fatalf("DecodeCursor(%q) = %+v: out of range", s, c)
		}
		again, err := feed.DecodeCursor(feed.EncodeCursor(c))
		if err != nil || again != c {
			t.Fatalf("round trip of %+v = %+v, %v", c, again, err)
		}
	})
}

// FuzzPostInput: Validate never panics, refuses only with EINVALID, and
// what it accepts keeps every rule of a post (docs/API.md, Limits).
func FuzzPostInput(f *testing.F) {
	f.Add("title", "content", "", int64(0))
	f.Add("a < b <3", "c", "/imgs/1.jpg,https://h/a.png", int64(1))
	f.Add("<img src=x onerror=alert(1)>", "c", "javascript:alert(1)", int64(0))
	f.Add("t\u202e", "a\x00", `/a"><img>`, int64(-1))
	f.Fuzz(func(t *testing.T, title, content, images string, shop int64) {
		in := feed.PostInput{Title: title, Content: content, Images: images, ShopID: shop}
		err := in.Validate()
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("Validate(%+v) = %v, want EINVALID", in, err)
			}
			return
		}
		all := title + content + images
		switch {
		case !utf8.ValidString(all):
			t.Fatalf("accepted invalid UTF-8: %+v", in)
		case strings.TrimSpace(title) == "" || strings.TrimSpace(content) == "":
			t.Fatalf("accepted an empty title or content: %+v", in)
		case utf8.RuneCountInString(title) > feed.MaxTitle || utf8.RuneCountInString(content) > feed.MaxContent || utf8.RuneCountInString(images) > feed.MaxImages:
			t.Fatalf("accepted an over-long field: %+v", in)
		case shop < 0:
			t.Fatalf("accepted a negative shop: %+v", in)
		case strings.ContainsRune(content, 0):
			t.Fatalf("accepted NUL in content: %+v", in)
		}
		for i, r := range title {
			if r == '<' && i+1 < len(title) && strings.ContainsAny(title[i+1:i+2], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/!?") {
				t.Fatalf("accepted a title that opens a tag: %q", title)
			}
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("accepted a control character %U in the title: %q", r, title)
			}
		}
		if images != "" {
			items := strings.Split(images, ",")
			if len(items) > feed.MaxImageItems {
				t.Fatalf("accepted %d images", len(items))
			}
			for _, it := range items {
				if !strings.HasPrefix(it, "/") && !strings.HasPrefix(it, "http://") && !strings.HasPrefix(it, "https://") {
					t.Fatalf("accepted image %q", it)
				}
				if strings.ContainsAny(it, "\"'<> \t\r\n\\`") {
					t.Fatalf("accepted image %q", it)
				}
			}
		}
	})
}
