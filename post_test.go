package feed_test

import (
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

func TestPostInputValidate(t *testing.T) {
	ok := feed.PostInput{Title: "t", Content: "c"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	long := feed.PostInput{Title: strings.Repeat("题", feed.MaxTitle), Content: strings.Repeat("文", feed.MaxContent), Images: "/" + strings.Repeat("i", feed.MaxImages-1)}
	if err := long.Validate(); err != nil {
		t.Fatalf("a post at every limit (counted in characters): %v", err)
	}
	for name, in := range map[string]feed.PostInput{
		"empty title":       {Content: "c"},
		"blank title":       {Title: " \t\n", Content: "c"},
		"empty content":     {Title: "t"},
		"blank content":     {Title: "t", Content: "  "},
		"title too long":    {Title: strings.Repeat("a", feed.MaxTitle+1), Content: "c"},
		"content too long":  {Title: "t", Content: strings.Repeat("a", feed.MaxContent+1)},
		"images too long":   {Title: "t", Content: "c", Images: strings.Repeat("a", feed.MaxImages+1)},
		"negative shop":     {Title: "t", Content: "c", ShopID: -1},
		"invalid UTF-8":     {Title: "t\xff", Content: "c"},
		"tag in title":      {Title: "<img src=x onerror=alert(1)>", Content: "c"},
		"closing tag":       {Title: "a</b", Content: "c"},
		"comment":           {Title: "<!-- x", Content: "c"},
		"processing":        {Title: "<?xml", Content: "c"},
		"NUL in title":      {Title: "a\x00b", Content: "c"},
		"CR in title":       {Title: "a\rb", Content: "c"},
		"DEL in title":      {Title: "a\x7fb", Content: "c"},
		"RLO in title":      {Title: "abc\u202Etxt.exe", Content: "c"},
		"LRE in title":      {Title: "\u202Aabc", Content: "c"},
		"isolate in title":  {Title: "\u2066abc\u2069", Content: "c"},
		"NUL in content":    {Title: "t", Content: "a\x00b"},
		"javascript image":  {Title: "t", Content: "c", Images: "javascript:alert(1)"},
		"quote in image":    {Title: "t", Content: "c", Images: `/a.png"><img src=x>`},
		"angle in image":    {Title: "t", Content: "c", Images: "/a<b.png"},
		"space in image":    {Title: "t", Content: "c", Images: "/a b.png"},
		"relative image":    {Title: "t", Content: "c", Images: "a.png"},
		"protocol-relative": {Title: "t", Content: "c", Images: "//evil.example/a.png"},
		"empty image item":  {Title: "t", Content: "c", Images: "/a.png,"},
		"bare scheme":       {Title: "t", Content: "c", Images: "https://"},
		"ten images":        {Title: "t", Content: "c", Images: strings.TrimSuffix(strings.Repeat("/a.png,", 10), ",")},
	} {
		if err := in.Validate(); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("%s: Validate() = %v, want EINVALID", name, err)
		}
	}
}

func TestPostInputAccepts(t *testing.T) {
	for _, in := range []feed.PostInput{
		{Title: "a < b", Content: "c"},
		{Title: "I <3 Go", Content: "c"},
		{Title: "x<", Content: "c"},
		{Title: "line\nbreak\tand tab", Content: "c"},
		{Title: "t", Content: "<b>content is escaped when rendered</b>"},
		{Title: "t", Content: "c", Images: "/imgs/blogs/1.jpg,https://cdn.example/a.png?x=1&y=2,http://h/b.gif"},
		{Title: "t", Content: "c", Images: strings.TrimSuffix(strings.Repeat("/a.png,", 9), ",")},
		{Title: "مرحبا 你好", Content: "c"},
	} {
		if err := in.Validate(); err != nil {
			t.Errorf("%+v: %v", in, err)
		}
	}
}

func TestValidPhone(t *testing.T) {
	for _, p := range []string{"13800000000", "19912345678"} {
		if !feed.ValidPhone(p) {
			t.Errorf("ValidPhone(%q) = false", p)
		}
	}
	for _, p := range []string{"", "12800000000", "1380000000", "138000000000", "1380000000a", " 13800000000", "+8613800000000"} {
		if feed.ValidPhone(p) {
			t.Errorf("ValidPhone(%q) = true", p)
		}
	}
}

func TestErrorCode(t *testing.T) {
	err := feed.Errorf(feed.ENOTFOUND, "post %d not found", 7)
	if feed.ErrorCode(err) != feed.ENOTFOUND || feed.ErrorMessage(err) != "post 7 not found" {
		t.Fatalf("got %q %q", feed.ErrorCode(err), feed.ErrorMessage(err))
	}
	wrapped := &wrapErr{err}
	if feed.ErrorCode(wrapped) != feed.ENOTFOUND {
		t.Fatalf("a wrapped *Error lost its code")
	}
	plain := &wrapErr{nil}
	if feed.ErrorCode(plain) != feed.EINTERNAL || feed.ErrorMessage(plain) != "internal error" {
		t.Fatalf("an unexpected error must be internal with a generic message")
	}
	if feed.ErrorCode(nil) != "" {
		t.Fatalf("nil has no code")
	}
}

type wrapErr struct{ err error }

func (w *wrapErr) Error() string { return "wrapped secret detail" }
func (w *wrapErr) Unwrap() error { return w.err }
