package hmdp

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
)

func TestCleanPost(t *testing.T) {
	for _, c := range []struct {
		title, content, images string
		wantT, wantC, wantI    string
		kinds                  []string
	}{
		{"Hello", "plain", "/a.jpg,/b.jpg", "Hello", "plain", "/a.jpg,/b.jpg", nil},
		{"<b>Bold</b> move", "one<br>two<br/>three</p>four &amp; five &lt;3", "", "Bold move", "one\ntwo\nthree\nfour & five <3", "", []string{CleanMarkup}},
		{"a <script", "x", "", "a < script", "x", "", []string{CleanMarkup}},
		{"a < b <3", "x", "", "a < b <3", "x", "", nil},
		{"bell\a and \u202egnirts", "nul\x00here", "", "bell and gnirts", "nulhere", "", []string{CleanControl}},
		{"caf\xe9", "\xff", "", "caf\uFFFD", "\uFFFD", "", []string{CleanInvalidUTF8}},
		{"t", "c", "/a.jpg, javascript:alert(1),//evil,/b c.jpg,https://x.y/z.png,", "t", "c", "/a.jpg,https://x.y/z.png", []string{CleanBadImage}},
		{"t", "c", strings.TrimSuffix(strings.Repeat("/p.jpg,", 12), ","), "t", "c", strings.TrimSuffix(strings.Repeat("/p.jpg,", 9), ","), []string{CleanTooLong}},
		{strings.Repeat("é", 300), strings.Repeat("x", 3000), "", strings.Repeat("é", feed.MaxTitle), strings.Repeat("x", feed.MaxContent), "", []string{CleanTooLong}},
	} {
		var cl cleaner
		gotT, gotC, gotI := cl.title(c.title), cl.content(c.content), cl.images(c.images)
		slices.Sort(cl.kinds)
		slices.Sort(c.kinds)
		if gotT != c.wantT || gotC != c.wantC || gotI != c.wantI || !slices.Equal(cl.kinds, c.kinds) {
			t.Errorf("clean(%q, %q, %q) = %q, %q, %q %v; want %q, %q, %q %v",
				c.title, c.content, c.images, gotT, gotC, gotI, cl.kinds, c.wantT, c.wantC, c.wantI, c.kinds)
		}
	}
}

// TestCleanPostValidates: whatever the tutorial stored, a cleaned post is
// one feedd would take from a client (but for an empty title or content,
// which the import keeps).
func TestCleanPostValidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"<", ">", "<b>", "</p>", "&amp;", "&#x41;", "&bogus", "\x00", "\a", "\u202e", "\xff", "\xe9", "é", "🍷",
		",", "/a.jpg", "http://", "https://x/y", "javascript:", " ", "\n", "a", "Z", "3", "?", "!", "/", strings.Repeat("x", 700)}
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 20000 {
		var cl cleaner
		in := feed.PostInput{Title: cl.title(gen()), Content: cl.content(gen()), Images: cl.images(gen())}
		if strings.TrimSpace(in.Title) == "" {
			in.Title = "t"
		}
		if strings.TrimSpace(in.Content) == "" {
			in.Content = "c"
		}
		if err := in.Validate(); err != nil {
			t.Fatalf("cleaned post refused: %v: %+v", err, in)
		}
	}
}

func TestCleanUser(t *testing.T) {
	var cl cleaner
	if got := cl.line("Dave\u202e\a"); got != "Dave" {
		t.Errorf("line: %q", got)
	}
	// Nicknames: the compatible pages render them as HTML.
	for in, want := range map[string]string{
		"Alice":             "Alice",
		"<b>Bo</b>":         "Bo",
		"&lt;img src=x&gt;": "< img src=x>",
		"a<b":               "a< b",
		"":                  "",
		"<3 cats":           "<3 cats",
		"Dave\u202e":        "Dave",
	} {
		var cl cleaner
		if got := cl.nick(in); got != want {
			t.Errorf("nick(%q) = %q, want %q", in, got, want)
		}
	}
	var nc cleaner
	if got := nc.nick("<img src=x onerror=alert(1)>"); !regexp.MustCompile(`^user_[a-zA-Z0-9]{10}$`).MatchString(got) || !slices.Equal(nc.kinds, []string{CleanMarkup}) {
		t.Errorf("a nickname of markup only: %q, cleaned %v; want a name as signup gives, counted as markup", got, nc.kinds)
	}
	for icon, want := range map[string]string{"": "", "/imgs/i.jpg": "/imgs/i.jpg", " https://x/y.png ": "https://x/y.png", "javascript:alert(1)": "", "x\" onerror=\"y": ""} {
		if got := cl.icon(icon); got != want {
			t.Errorf("icon(%q) = %q, want %q", icon, got, want)
		}
	}
}

// TestCleanComment: a comment's text is cleaned as a post's content,
// within the comment limit, and is then one feedd would take from a
// client (but for an empty one, which the import skips).
func TestCleanComment(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"<b>nice</b> &amp; <br>true": "nice & \ntrue",
		"caf\xe9\x00":                "caf\uFFFD",
		strings.Repeat("é", 1200):    strings.Repeat("é", feed.MaxCommentText),
		"<p></p>":                    "\n", // empty once trimmed: skipped
	} {
		var cl cleaner
		if got := cl.comment(in); got != want {
			t.Errorf("comment(%q) = %q, want %q", in, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"<", ">", "<b>", "</p>", "&amp;", "&#x41;", "\x00", "\a", "\xff", "é", "🍷", " ", "\n", "a", strings.Repeat("x", 400)}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		var cl cleaner
		in := feed.CommentInput{Text: cl.comment(b.String())}
		if strings.TrimSpace(in.Text) == "" {
			continue
		}
		if err := in.Validate(); err != nil {
			t.Fatalf("cleaned comment refused: %v: %q", err, in.Text)
		}
	}
}
