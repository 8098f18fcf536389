package hmdp

import (
	"crypto/rand"
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	feed "github.com/feedd/feedd"
)

// Why a row is skipped or cleaned (docs/operations.md, "Moving from hmdp",
// lists them). The store adds its own skips: feed.SkipIDTaken,
// feed.SkipDuplicatePhone and feed.SkipDuplicate.
const (
	SkipMissingUser   = "missing_user"    // a follow, like or comment of a user not imported
	SkipMissingAuthor = "missing_author"  // a post by a user not imported
	SkipMissingPost   = "missing_post"    // a like, feed entry or comment of a post not imported
	SkipSelfFollow    = "self_follow"     // a user following themselves
	SkipMalformed     = "malformed"       // a Redis member that is no id, or a score that is no time
	SkipMissingThread = "missing_thread"  // a reply whose parent_id is no imported top-level comment of its post
	SkipEmptyText     = "empty_text"      // a comment with no text left once cleaned
	SkipIDOutOfRange  = "id_out_of_range" // a user, post or comment whose id is above feed.MaxImportID

	CleanInvalidUTF8 = "invalid_utf8"  // bytes that are not UTF-8, replaced by U+FFFD
	CleanMarkup      = "markup"        // HTML tags and entities, turned into the text they showed
	CleanTooLong     = "too_long"      // text over feedd's limits, cut; images past 9, dropped
	CleanControl     = "control_chars" // control and bidirectional override characters, removed
	CleanBadImage    = "bad_image"     // an image or icon that is not a /path or http(s) URL, dropped
	CleanBadAnswer   = "bad_answer"    // an answer_id that is no comment of the thread: the reply answers the thread's top-level comment
	CleanBadStatus   = "bad_status"    // a comment status other than 0, 1 or 2: the comment is hidden
)

// cleaner cleans the text of one row and notes why.
type cleaner struct{ kinds []string }

func (c *cleaner) mark(kind string) {
	if !slices.Contains(c.kinds, kind) {
		c.kinds = append(c.kinds, kind)
	}
}

// utf8 replaces what is not UTF-8.
func (c *cleaner) utf8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	c.mark(CleanInvalidUTF8)
	return strings.ToValidUTF8(s, "\uFFFD")
}

var (
	// tag is an HTML tag (or comment, or doctype): "<" and what opens one,
	// up to the next ">".
	tag = regexp.MustCompile(`<[a-zA-Z/!?][^<>]*>`)
	// lineTag is a tag that shows as a line break.
	lineTag = regexp.MustCompile(`(?i)^<\s*(br|/p|/div|/li|/h[1-6])\b`)
	// entity is an HTML character reference.
	entity = regexp.MustCompile(`&(#[0-9]+|#[xX][0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);`)
)

// text turns markup into the text the tutorial's page showed: its web
// client renders what it stores as HTML, feedd shows what it stores as
// text. Tags go (those that break lines become a newline), entities become
// their characters.
func (c *cleaner) text(s string) string {
	if !tag.MatchString(s) && !entity.MatchString(s) {
		return s
	}
	c.mark(CleanMarkup)
	s = tag.ReplaceAllStringFunc(s, func(t string) string {
		if lineTag.MatchString(t) {
			return "\n"
		}
		return ""
	})
	return html.UnescapeString(s)
}

// title cleans a post's title to what feedd takes (feed.PostInput.Validate):
// a line, at most feed.MaxTitle characters.
func (c *cleaner) title(s string) string { return c.cut(c.line(s), feed.MaxTitle) }

// line cleans a text that the tutorial's pages show as HTML (a title, a
// user's names) to what a title may hold: valid UTF-8, no markup (a "<"
// left that could open a tag gets a space after it), no control
// characters.
func (c *cleaner) line(s string) string {
	s = c.text(c.utf8(s))
	s = c.drop(s, feed.RefusedInTitle)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '<' && i+1 < len(s) && feed.OpensTag(s[i+1]) {
			c.mark(CleanMarkup)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// nick cleans a nickname as a line; one that had text and has none left
// (it was all markup) gets the kind of name signup gives (feed.NewNickName).
func (c *cleaner) nick(s string) string {
	n := c.line(s)
	if strings.TrimSpace(n) == "" && strings.TrimSpace(s) != "" {
		if name, err := feed.NewNickName(rand.Reader); err == nil {
			return name
		}
	}
	return n
}

// content cleans a post's content: valid UTF-8, no markup, no NUL, at most
// feed.MaxContent characters.
func (c *cleaner) content(s string) string { return c.body(s, feed.MaxContent) }

// comment cleans a comment's text by the rules of a post's content
// (feed.CommentInput.Validate), within feed.MaxCommentText characters.
func (c *cleaner) comment(s string) string { return c.body(s, feed.MaxCommentText) }

// body cleans a text of many lines: valid UTF-8, no markup, no NUL, at
// most max characters.
func (c *cleaner) body(s string, max int) string {
	s = c.text(c.utf8(s))
	s = c.drop(s, func(r rune) bool { return r == 0 })
	return c.cut(s, max)
}

// drop removes the runes refused.
func (c *cleaner) drop(s string, refused func(rune) bool) string {
	if !strings.ContainsFunc(s, refused) {
		return s
	}
	c.mark(CleanControl)
	return strings.Map(func(r rune) rune {
		if refused(r) {
			return -1
		}
		return r
	}, s)
}

// cut keeps the first max characters of s.
func (c *cleaner) cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	c.mark(CleanTooLong)
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

// images keeps the items of a comma-separated image list that feedd takes
// (feed.ValidImage), at most feed.MaxImageItems of them within
// feed.MaxImages characters. Spaces around an item are trimmed, and empty
// items (a trailing comma) dropped, without counting.
func (c *cleaner) images(s string) string {
	s = c.utf8(s)
	var keep []string
	n := 0
	for _, it := range strings.Split(s, ",") {
		it = strings.TrimSpace(it)
		switch {
		case it == "":
		case !feed.ValidImage(it):
			c.mark(CleanBadImage)
		case len(keep) == feed.MaxImageItems || n+utf8.RuneCountInString(it)+len(keep) > feed.MaxImages:
			c.mark(CleanTooLong)
		default:
			keep = append(keep, it)
			n += utf8.RuneCountInString(it)
		}
	}
	return strings.Join(keep, ",")
}

// icon keeps an avatar that feedd can show (feed.ValidImage), or none.
func (c *cleaner) icon(s string) string {
	s = strings.TrimSpace(c.utf8(s))
	if s == "" || feed.ValidImage(s) {
		return s
	}
	c.mark(CleanBadImage)
	return ""
}
