package feed

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the content filters.
const (
	// DefaultReportThreshold is how many distinct users must report a post
	// before it is hidden from everyone but its author.
	DefaultReportThreshold = 3
	// MaxMutedWords bounds one user's muted words.
	MaxMutedWords = 200
	// MaxMutedWordLen bounds a muted word, in characters.
	MaxMutedWordLen = 64
	// MaxReportReason bounds a report's reason, in characters.
	MaxReportReason = 500
	// MaxReportedLimit bounds a page of the admin's list of reported posts.
	MaxReportedLimit = 200
)

// FilterStore persists what hides posts from feeds: each user's muted
// words, reports of posts, and posts hidden by moderation.
// Implementations: sqlite.DB, postgres.DB; feedtest.TestFilterStore is
// the contract.
type FilterStore interface {
	// SetMutedWord adds (mute) or removes word, already normalised by
	// NormalizeWord, from userID's muted words. Idempotent. ECONFLICT when
	// adding a word would exceed MaxMutedWords.
	SetMutedWord(ctx context.Context, userID int64, word string, mute bool, now time.Time) error
	// MutedWords returns userID's muted words, sorted.
	MutedWords(ctx context.Context, userID int64) ([]string, error)
	// Report records reporterID's report of postID (one per reporter: a
	// second report replaces the reason and the time) and, in the same
	// transaction, hides the post when rule.Threshold reports count: those
	// not dismissed by a restore, by reporters whose accounts were at
	// least rule.MinAge old when they reported and who are in no block
	// with the post's author. hidden says whether this report hid it.
	// ENOTFOUND if the post does not exist.
	Report(ctx context.Context, postID, reporterID int64, reason string, now time.Time, rule ReportRule) (hidden bool, err error)
	// SetHidden hides a post (hidden) or restores it; restoring also
	// dismisses its reports, so it takes reports by other users to hide it
	// again (a dismissed report stays dismissed when its reporter reports
	// the post again). Idempotent. ENOTFOUND if the post does not exist.
	SetHidden(ctx context.Context, postID int64, hidden bool, now time.Time) error
	// FeedFilter returns what filters a feed page of viewerID: the
	// viewer's muted words and which of ids are hidden. One round trip.
	FeedFilter(ctx context.Context, viewerID int64, ids []int64) ([]string, map[int64]bool, error)
	// Hidden returns which of ids are hidden. One round trip.
	Hidden(ctx context.Context, ids []int64) (map[int64]bool, error)
	// Reported lists the posts that have reports or are hidden, by post
	// id descending, those with ids below before (0: from the newest), at
	// most limit.
	Reported(ctx context.Context, before int64, limit int) ([]ReportedPost, error)
}

// ReportRule is when reports hide a post or a comment (FilterStore.Report,
// CommentStore.ReportComment).
type ReportRule struct {
	Threshold int           // counted reports that hide it
	MinAge    time.Duration // a reporter's account age at the report for it to count
}

// Hides reports whether counted reports (those that count, by MinAge and
// the block rule) hide what they report.
func (r ReportRule) Hides(counted int) bool { return counted >= r.Threshold }

// DefaultReportLimit is the command's default of Service.ReportLimit, and
// DefaultReportMinAge of Service.ReportMinAge.
var (
	DefaultReportLimit  = Limit{20, 24 * time.Hour}
	DefaultReportMinAge = 24 * time.Hour
)

// ReportedPost is a post in the moderation list.
type ReportedPost struct {
	PostID     int64
	AuthorID   int64
	Title      string
	Reports    int    // distinct reporters since the last restore (counted or not)
	LastReason string // the reason of the latest report ("" if none)
	Hidden     bool
}

// NormalizeWord validates a muted word and returns its folded form, the one
// that is stored and matched. A word is one run of letters, digits and
// combining marks (no spaces or punctuation), at most MaxMutedWordLen
// characters; format characters in it are dropped, as in the texts it is
// matched against (foldString).
func NormalizeWord(word string) (string, error) {
	word = strings.TrimSpace(word)
	switch {
	case word == "":
		return "", Errorf(EINVALID, "word must not be empty")
	case !utf8.ValidString(word):
		return "", Errorf(EINVALID, "word must be valid UTF-8")
	case utf8.RuneCountInString(word) > MaxMutedWordLen:
		return "", Errorf(EINVALID, "word must be at most %d characters", MaxMutedWordLen)
	}
	for _, r := range word {
		if !wordRune(r) && !formatRune(r) {
			return "", Errorf(EINVALID, "word must be letters and digits only (one word, no spaces or punctuation)")
		}
	}
	if word = foldString(word); word == "" {
		return "", Errorf(EINVALID, "word must hold a letter or digit")
	}
	return word, nil
}

// MatchesMutedWord reports whether text contains word (a NormalizeWord
// result) under the muted-word rule: with the text's format characters
// (Unicode category Cf, such as U+200B ZERO WIDTH SPACE or U+00AD SOFT
// HYPHEN) removed, since they show nothing and would split a word only to
// the eye of the matcher; case-insensitive by Unicode simple case folding
// (so "Σ", "σ" and "ς" match each other); and whole-word, where a word is
// a run of letters, digits and combining marks. Scripts
// written without spaces (Han, Hiragana, Katakana) have no word
// boundaries to find, so a word holding any such character matches
// wherever it occurs as a substring, and those characters also end the
// words of other scripts around them ("golang" matches in "我爱golang").
func MatchesMutedWord(text, word string) bool {
	if word == "" {
		return false
	}
	return matchFolded(foldString(text), word)
}

// matchFolded is MatchesMutedWord of a text already folded: the rule, one
// word at a time. Feeds match all of a reader's words at once (wordMatcher).
func matchFolded(text, word string) bool {
	if strings.IndexFunc(word, unspacedRune) >= 0 {
		return strings.Contains(text, word)
	}
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || !inWord(before)) && (end == len(text) || !inWord(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		i = start + size
	}
	return false
}

// formatRune reports whether r is a format character (Unicode category
// Cf), which the muted-word rule ignores.
func formatRune(r rune) bool { return r >= 0xAD && unicode.Is(unicode.Cf, r) }

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

// unspacedRune reports whether r belongs to a script written without
// spaces between words. None is below U+2E80, where the Han radicals
// begin.
func unspacedRune(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// inWord reports whether r continues a word of a spaced script.
func inWord(r rune) bool { return r != utf8.RuneError && wordRune(r) && !unspacedRune(r) }

// filterViews drops from views the posts See does not show viewerID in
// full: hidden by moderation, or matching one of the viewer's muted words
// (a feed leaves out what is Folded). The viewer's own posts are never
// filtered. The authors' other relations to the viewer are the feed's
// membership (SocialStore.Visible, FeedViewer): a muted or blocked author
// is not in it. One store call.
func (s *Service) filterViews(ctx context.Context, viewerID int64, views []PostView) ([]PostView, error) {
	if len(views) == 0 {
		return views, nil
	}
	ids := make([]int64, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	words, hidden, err := s.Filters.FeedFilter(ctx, viewerID, ids)
	if err != nil {
		return nil, err
	}
	m := newWordMatcher(words)
	return slices.DeleteFunc(views, func(v PostView) bool {
		muted := v.UserID != viewerID && !hidden[v.ID] && m.mutes(&v) // the viewer's own are never matched
		return See(Viewer{ID: viewerID}, Scene{Post: v.Post, PostHidden: hidden[v.ID], MutedWord: muted}).Sight != Shown
	}), nil
}

// MutedWords returns userID's muted words.
func (s *Service) MutedWords(ctx context.Context, userID int64) ([]string, error) {
	return s.Filters.MutedWords(ctx, userID)
}

// SetMutedWord mutes (mute) or unmutes word for userID and returns the
// stored (folded) form. Idempotent.
func (s *Service) SetMutedWord(ctx context.Context, userID int64, word string, mute bool) (string, error) {
	w, err := NormalizeWord(word)
	if err != nil {
		return "", err
	}
	return w, s.Filters.SetMutedWord(ctx, userID, w, mute, s.now())
}

// reportRule is the rule of reports of posts and of comments alike.
func (s *Service) reportRule() ReportRule {
	return ReportRule{Threshold: cmp.Or(s.ReportThreshold, DefaultReportThreshold), MinAge: s.ReportMinAge}
}

// Report records userID's report of post id. When ReportThreshold
// distinct users whose reports count (ReportRule: accounts at least
// ReportMinAge old, in no block with the author, not dismissed by an
// earlier restore) have reported it, the post is hidden from everyone but
// its author until an admin restores it. ENOTFOUND for a post userID is not
// shown (shown: its author blocks userID, or it is hidden already);
// EINVALID for your own post; ETOOMANY over ReportLimit.
func (s *Service) Report(ctx context.Context, userID, id int64, reason string) error {
	reason, err := validReason(reason)
	if err != nil {
		return err
	}
	p, err := s.shownPost(ctx, userID, id)
	if err != nil {
		return err
	}
	if p.UserID == userID {
		return Errorf(EINVALID, "you cannot report your own post")
	}
	if err := s.hit(ctx, "report:user:"+strconv.FormatInt(userID, 10), s.ReportLimit, 1, "reports"); err != nil {
		return err
	}
	hidden, err := s.Filters.Report(ctx, id, userID, reason, s.now(), s.reportRule())
	if err != nil {
		return err
	}
	if hidden {
		s.moderated(ctx, id, true, "reports")
	}
	return nil
}

// Moderate hides (hide) or restores post id. It is an admin's action: the
// caller has checked who is asking (the admin listener).
func (s *Service) Moderate(ctx context.Context, id int64, hide bool) error {
	if err := validID("id", id); err != nil {
		return err
	}
	if err := s.Filters.SetHidden(ctx, id, hide, s.now()); err != nil {
		return err
	}
	s.moderated(ctx, id, hide, "admin")
	return nil
}

// moderated is the one place told that post id was hidden (hidden) or
// restored, and by what ("reports" or "admin"), after it happened.
func (s *Service) moderated(ctx context.Context, id int64, hidden bool, by string) {
	if hidden {
		s.log().Info("post hidden", "post_id", id, "by", by)
	} else {
		s.log().Info("post restored", "post_id", id, "by", by)
	}
}

// Reported returns a page of the posts with reports or hidden, newest
// first, below post id before (0: from the newest), and the cursor of the
// next page (0 at the end).
func (s *Service) Reported(ctx context.Context, before int64, limit int) ([]ReportedPost, int64, error) {
	if before < 0 {
		return nil, 0, Errorf(EINVALID, "cursor is not one this server returned")
	}
	if limit == 0 {
		limit = DefaultTimelineLimit
	}
	if limit < 1 || limit > MaxReportedLimit {
		return nil, 0, Errorf(EINVALID, "limit must be an integer from 1 to %d", MaxReportedLimit)
	}
	ps, err := s.Filters.Reported(ctx, before, limit+1)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(ps) > limit {
		ps = ps[:limit]
		next = ps[limit-1].PostID
	}
	return ps, next, nil
}
