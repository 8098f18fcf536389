package feed

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// TestWordMatcher checks the one-pass matcher of a reader's words against
// the rule applied one word at a time (MatchesMutedWord), on random texts
// and word sets drawn from a small alphabet that mixes spaced and unspaced
// scripts, case variants, combining marks and punctuation, so that words
// overlap, nest and sit at every kind of boundary.
func TestWordMatcher(t *testing.T) {
	alphabet := []rune("abAB σΣς,.é\u0301剧透ネタ1_-")
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func(n int, letters bool) string {
		var b strings.Builder
		for range n {
			r := alphabet[rnd.IntN(len(alphabet))]
			for letters && !wordRune(r) {
				r = alphabet[rnd.IntN(len(alphabet))]
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	matches := 0
	for range 3000 {
		var words []string
		for range 1 + rnd.IntN(6) {
			w, err := NormalizeWord(str(1+rnd.IntN(3), true))
			if err != nil {
				t.Fatalf("NormalizeWord: %v", err)
			}
			words = append(words, w)
		}
		text := str(rnd.IntN(24), false)
		want := false
		for _, w := range words {
			want = want || MatchesMutedWord(text, w)
		}
		m := newWordMatcher(words)
		if got := m.match(foldString(text)); got != want {
			t.Fatalf("words %q in %q: matcher %v, rule %v", words, text, got, want)
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

// TestFoldRune checks the table of folded runes against the rule it caches.
func TestFoldRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := foldRune(r), foldSlow(r); got != want {
			t.Fatalf("foldRune(%U) = %U, want %U", r, got, want)
		}
		if r == 0x20000 {
			r = unicode.MaxRune - 1 // above the table: the same function
		}
	}
}

// mutedPage is a page of 50 posts of MaxContent characters that none of
// 200 muted words matches: the worst case of a reader at MaxMutedWords.
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
		words[i] = "zq" + word(6) // never in the text: no word starts with zq there
	}
	for _, v := range views {
		for _, w := range words {
			if MatchesMutedWord(v.Content, w) {
				b.Fatalf("word %q matches", w)
			}
		}
	}
	return views, words
}

// BenchmarkMutedWords filters a page of 50 posts of 2,048 characters for
// a reader with 200 muted words that never match: one matcher over the
// folded texts (matcher), against the rule applied word by word (perword,
// how feeds matched before) and a reader with no words (none).
func BenchmarkMutedWords(b *testing.B) {
	views, words := mutedPage(b)
	b.Run("none", func(b *testing.B) {
		for b.Loop() {
			m := newWordMatcher(nil)
			for i := range views {
				if m.mutes(&views[i]) {
					b.Fatal("muted")
				}
			}
		}
	})
	b.Run("matcher", func(b *testing.B) {
		for b.Loop() {
			m := newWordMatcher(words)
			for i := range views {
				if m.mutes(&views[i]) {
					b.Fatal("muted")
				}
			}
		}
	})
	b.Run("perword", func(b *testing.B) {
		for b.Loop() {
			for i := range views {
				for _, w := range words {
					if MatchesMutedWord(views[i].Title, w) || MatchesMutedWord(views[i].Content, w) {
						b.Fatal("muted")
					}
				}
			}
		}
	})
}
