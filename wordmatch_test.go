package feed

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestWordMatcher checks the one-pass matcher of a reader's words against
// the rule applied one word at a time (MatchesMutedWord), on random texts
// and word sets drawn from a small alphabet that mixes spaced and unspaced
// scripts, case variants, combining marks, format characters, punctuation
// and bytes that are not UTF-8, so that words overlap, nest and sit at
// every kind of boundary.
func TestWordMatcher(t *testing.T) {
	alphabet := []rune("abAB σΣς,.é\u0301剧透ネタ1_-\u200b\u00ad\U000e0041")
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func(n int, letters bool) string {
		var b strings.Builder
		for range n {
			if !letters && rnd.IntN(30) == 0 {
				b.WriteString([]string{"\xe5", "\x89", "\xff"}[rnd.IntN(3)]) // not UTF-8
				continue
			}
			r := alphabet[rnd.IntN(len(alphabet))]
			for letters && !wordRune(r) {
				r = alphabet[rnd.IntN(len(alphabet))]
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	matches := 0
	for c := range 3000 {
		var words []string
		for range 1 + rnd.IntN(6) {
			w, err := NormalizeWord(str(1+rnd.IntN(3), true))
			if err != nil {
				t.Fatalf("NormalizeWord: %v", err)
			}
			words = append(words, w)
		}
		if c%2 == 1 {
			// Chains: some suffixes of one word, so that a position ends
			// several words, spaced, unspaced or both.
			long := []rune(words[0] + words[len(words)-1])
			for i := range long {
				if rnd.IntN(2) == 0 {
					words = append(words, string(long[i:]))
				}
			}
		}
		text := str(rnd.IntN(24), false)
		want := false
		for _, w := range words {
			want = want || MatchesMutedWord(text, w)
		}
		m := newWordMatcher(words)
		if got := m.match(text); got != want {
			t.Fatalf("words %q in %q: matcher %v, rule %v", words, text, got, want)
		}
		if got := m.match(foldString(text)); got != want {
			t.Fatalf("words %q in %q folded: matcher %v, rule %v", words, text, got, want)
		}
		if want {
			matches++
		}
	}
	if matches < 300 || matches > 2700 {
		t.Fatalf("%d of 3000 cases match: the cases do not exercise both answers", matches)
	}
	if newWordMatcher(nil).match("anything") || newWordMatcher([]string{""}).match("x") {
		t.Fatal("an empty word list matches")
	}
}

// TestFoldRune checks the tables of folded runes and of word runes against
// the rules they cache, and that folding keeps a word rune a word rune of
// the same kind of script.
func TestFoldRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := foldRune(r), foldSlow(r); got != want {
			t.Fatalf("foldRune(%U) = %U, want %U", r, got, want)
		}
		if wordRune(r) && (!wordRune(foldRune(r)) || unspacedRune(r) != unspacedRune(foldRune(r))) {
			// The matcher checks only the longest word of a spaced script
			// ending at a position: each of its runes must continue a word.
			t.Fatalf("foldRune(%U) = %U leaves its class of word rune", r, foldRune(r))
		}
		if unspacedRune(r) != unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			t.Fatalf("unspacedRune(%U) = %v", r, unspacedRune(r))
		}
		if utf8.ValidRune(r) {
			if got, want := wordRuneAt(string(r), 0); got != (inWord(r) || formatRune(r)) {
				t.Fatalf("wordRuneAt(%U) = %v, want %v", r, got, want)
			}
		}
		if r == 0x20000 {
			r = unicode.MaxRune - 1 // above the table: the same function
		}
	}
}

// chainWords are the adversarial muted words: the runs of 1 to
// MaxMutedWordLen copies of r, each a suffix of all the longer ones, so
// that every position of a run of r ends all of them at once.
func chainWords(r string) []string {
	words := make([]string, MaxMutedWordLen)
	for i := range words {
		words[i] = strings.Repeat(r, i+1)
	}
	return words
}

// TestWordMatcherSteps checks that the matcher's work is linear in the
// text for any word set within the limits: it counts the matcher's steps
// (a byte read, a fall back along the failure links, a word boundary
// checked) rather than timing it. The chains of words that end at every
// position of a long word that none matches are the worst case: each
// position ends MaxMutedWordLen words.
func TestWordMatcherSteps(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	random := func(n int, letters string) string {
		rs := []rune(letters)
		var b strings.Builder
		for range n {
			b.WriteRune(rs[rnd.IntN(len(rs))])
		}
		return b.String()
	}
	var mixed []string // whole words, unspaced words, and chains of both
	for range MaxMutedWords - 2*MaxMutedWordLen {
		w, err := NormalizeWord(random(1+rnd.IntN(MaxMutedWordLen), "abcdeЖж剧"))
		if err != nil {
			t.Fatal(err)
		}
		mixed = append(mixed, w)
	}
	mixed = append(append(mixed, chainWords("b")...), chainWords("ж")...)
	var unspacedChain []string // 剧, 透剧, 透透剧 ...: a run of 透 is a prefix of all
	for _, w := range chainWords("透") {
		unspacedChain = append(unspacedChain, w[len("透"):]+"剧")
	}
	var near []string // axb, bxb, ...: the text's runs ayb share their first and last letters and length
	for i := range MaxMutedWords {
		near = append(near, string(rune('a'+i%26))+"x"+string(rune('a'+i/26)))
	}
	var prose strings.Builder
	for prose.Len() < MaxContent {
		prose.WriteString(random(1+rnd.IntN(9), "abcdefghijklmnopqrstuvwxyz"))
		prose.WriteByte(' ')
	}
	for _, c := range []struct {
		name  string
		words []string
		text  string
	}{
		{"chain a", chainWords("a"), strings.Repeat("a", MaxContent)},
		{"chain a, then other letters", chainWords("a"), strings.Repeat(strings.Repeat("a", 100)+"b", MaxContent/101)},
		{"chain ж", chainWords("ж"), strings.Repeat("ж", MaxContent)},
		{"unspaced chain", unspacedChain, strings.Repeat("透", MaxContent)},
		{"two chains of a and b", append(chainWords("a"), chainWords("b")...), strings.Repeat("ab", MaxContent/2)},
		{"chains and random words", mixed, strings.Repeat("bжb", MaxContent/3)},
		{"runs like the words", near, strings.Repeat("ayb ", MaxContent/4)},
		{"format characters inside the runs", mixed, strings.Repeat("b\u200bж\u00adb\u2060 ", MaxContent/6)},
		{"format characters only", mixed, strings.Repeat("\u200b", MaxContent)},
		{"random words in prose", mixed[:MaxMutedWords-2*MaxMutedWordLen], prose.String()},
	} {
		if len(c.words) > MaxMutedWords {
			t.Fatalf("%s: %d words, more than a reader may have", c.name, len(c.words))
		}
		m := newWordMatcher(c.words)
		found, steps := m.scan(c.text)
		want, folded := false, foldString(c.text)
		for _, w := range c.words {
			want = want || matchFolded(folded, w)
		}
		if found != want {
			t.Fatalf("%s: matcher %v, rule %v", c.name, found, want)
		}
		// Per byte at most: a rune classified, a byte walked in the trie
		// of whole words, a byte read by the automaton, a failure link.
		if limit := 4 * len(c.text); steps > limit {
			t.Errorf("%s: %d steps for %d bytes of text, want at most %d", c.name, steps, len(c.text), limit)
		}
	}
}

// mutedPage is a page of 50 posts of MaxContent characters that none of
// 200 random muted words matches: a reader at MaxMutedWords.
func mutedPage(b *testing.B) ([]PostView, []string) {
	rnd := rand.New(rand.NewPCG(3, 4))
	letters := "abcdefghijklmnopqrstuvwxyz"
	word := func(n int) string {
		var s strings.Builder
		for range n {
			s.WriteByte(letters[rnd.IntN(len(letters))])
		}
		return s.String()
	}
	views := make([]PostView, 50)
	for i := range views {
		var c strings.Builder
		for c.Len() < MaxContent {
			c.WriteString(word(1 + rnd.IntN(9)))
			c.WriteByte(' ')
		}
		views[i] = PostView{Post: &Post{Title: "A title of a post", Content: c.String()[:MaxContent]}}
	}
	words := make([]string, MaxMutedWords)
	for i := range words {
		words[i] = word(6 + rnd.IntN(5))
	}
	checkUnmuted(b, views, words)
	return views, words
}

// chainPage is a page of 50 posts, each one word of a's (MaxTitle and
// MaxContent long), and the muted words a, aa, ... up to MaxMutedWordLen
// (chainWords), none of which matches.
func chainPage(b *testing.B) ([]PostView, []string) {
	views := make([]PostView, 50)
	for i := range views {
		views[i] = PostView{Post: &Post{Title: strings.Repeat("a", MaxTitle), Content: strings.Repeat("a", MaxContent)}}
	}
	words := chainWords("a")
	checkUnmuted(b, views, words)
	return views, words
}

// nearPage is a page of 50 posts of MaxContent characters made of the
// shortest runs that look like one of 200 muted words without being one:
// the words are the letter pairs (f, l) written fxl, the runs fyl.
func nearPage(b *testing.B) ([]PostView, []string) {
	rnd := rand.New(rand.NewPCG(5, 6))
	var words, runs []string
	for i := range MaxMutedWords {
		f, l := string(rune('a'+i%26)), string(rune('a'+i/26))
		words, runs = append(words, f+"x"+l), append(runs, f+"y"+l)
	}
	views := make([]PostView, 50)
	for i := range views {
		var c strings.Builder
		for c.Len() < MaxContent {
			c.WriteString(runs[rnd.IntN(len(runs))] + " ")
		}
		views[i] = PostView{Post: &Post{Title: "A title of a post", Content: c.String()[:MaxContent]}}
	}
	checkUnmuted(b, views, words)
	return views, words
}

func checkUnmuted(b *testing.B, views []PostView, words []string) {
	for _, v := range views {
		for _, w := range words {
			if MatchesMutedWord(v.Title, w) || MatchesMutedWord(v.Content, w) {
				b.Fatalf("word %q matches", w)
			}
		}
	}
}

// BenchmarkMutedWords filters a page of 50 posts for a reader whose muted
// words never match, through one matcher over the folded texts: none (no
// words, the baseline), random (200 random words, posts of 2,048
// characters of short words), chain (the 64 words a, aa, ... against posts
// of one long word of a's, every position of which ends all of them), near
// (200 words against runs that each look like one of them: nearPage),
// format (the random page with a U+200B inside every word: each run is
// folded); and perword, the rule applied word by word to the random page.
func BenchmarkMutedWords(b *testing.B) {
	randomViews, randomWords := mutedPage(b)
	formatViews := make([]PostView, len(randomViews))
	for i, v := range randomViews {
		p := *v.Post
		var c strings.Builder
		for _, w := range strings.Fields(p.Content) {
			c.WriteString(w[:len(w)/2] + "\u200b" + w[len(w)/2:] + " ")
		}
		p.Content = c.String()
		formatViews[i] = PostView{Post: &p}
	}
	chainViews, chainWords := chainPage(b)
	nearViews, nearWords := nearPage(b)
	page := func(views []PostView, words []string) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				m := newWordMatcher(words)
				for i := range views {
					if m.mutes(&views[i]) {
						b.Fatal("muted")
					}
				}
			}
		}
	}
	b.Run("none", page(randomViews, nil))
	b.Run("random", page(randomViews, randomWords))
	b.Run("chain", page(chainViews, chainWords))
	b.Run("near", page(nearViews, nearWords))
	b.Run("format", page(formatViews, randomWords))
	b.Run("perword", func(b *testing.B) {
		for b.Loop() {
			for i := range randomViews {
				for _, w := range randomWords {
					if MatchesMutedWord(randomViews[i].Title, w) || MatchesMutedWord(randomViews[i].Content, w) {
						b.Fatal("muted")
					}
				}
			}
		}
	})
}
