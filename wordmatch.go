package feed

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A reader's muted words are matched against every post of a page all at
// once: each text is read once for the words of spaced scripts (a run of
// ASCII word runes is lowered only when it may be one of them, any other
// run folded as it is read) and, if the reader has any others, folded
// (foldString) and read once more by an Aho-Corasick automaton over their
// bytes, so the cost of a page grows with the length of its texts, not
// with the number or the shape of the words. The rule it applies is
// MatchesMutedWord's.

// wordMatcher finds whether a folded text holds any of a set of muted
// words under the muted-word rule.
//
// A word of a spaced script is a run of word runes (NormalizeWord) that
// must stand alone, so it matches exactly where it is a whole run of the
// text's word runes, however many other words end inside that run: each
// run is looked up once, in a set. Words of unspaced scripts match
// anywhere, found by an automaton that reads each byte of the text once
// and follows at most one failure link per byte, amortised.
type wordMatcher struct {
	whole    map[string]bool // words of spaced scripts
	sketch   [64]uint64      // the runKey of each of them, a bit each
	anywhere trie            // words of unspaced scripts, with failure links
}

// runKey is a 12-bit hash of a folded run's first and last bytes and its
// length (Fibonacci hashing). A run whose bit is clear in the sketch is not
// a muted word: most runs of a text are ruled out without being hashed.
func runKey(run string) uint32 { return keyOf(run[0], run[len(run)-1], len(run)) }

func keyOf(first, last byte, n int) uint32 {
	return (uint32(first) | uint32(last)<<8 | uint32(n)<<16) * 0x9E3779B9 >> 20
}

// inSketch reports whether a word of the matcher may have key k.
func (m *wordMatcher) inSketch(k uint32) bool { return m.sketch[k/64]&(1<<(k%64)) != 0 }

// lowerASCII is the folded form of an ASCII byte (foldRune).
func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// newWordMatcher builds the matcher of words (NormalizeWord results).
func newWordMatcher(words []string) *wordMatcher {
	m := &wordMatcher{whole: make(map[string]bool, len(words))}
	var anywhere []string
	for _, w := range words {
		switch {
		case w == "":
		case strings.IndexFunc(w, unspacedRune) >= 0:
			anywhere = append(anywhere, w)
		default:
			m.whole[w] = true
			k := runKey(w)
			m.sketch[k/64] |= 1 << (k % 64)
		}
	}
	m.anywhere = newTrie(anywhere)
	m.anywhere.link()
	return m
}

// match reports whether text holds one of the words, folded as words are:
// a word of a spaced script where neither neighbour continues a word, any
// other anywhere (MatchesMutedWord).
func (m *wordMatcher) match(text string) bool {
	found, _ := m.scan(text)
	return found
}

// scan is match, and the number of steps it took: a rune classified, a
// byte of a run hashed for its lookup, a byte read by the automaton, a
// failure link followed. Each kind is at most one per byte of text,
// whatever the words. (Folding, not counted, is one more pass at most over
// the runs of spaced scripts that are not ASCII, and over the text when
// there are words of unspaced scripts.)
func (m *wordMatcher) scan(text string) (found bool, steps int) {
	if len(m.whole) > 0 {
		var lower []byte        // an ASCII run in its folded form, for its lookup
		start, ascii := 0, true // where the run of word runes being read began; whether it is all ASCII
		for i := 0; i <= len(text); {
			in, size := false, 1
			if i < len(text) {
				steps++
				if b := text[i]; b < utf8.RuneSelf {
					in = asciiInWord[b] // wordRuneAt, inline for most bytes
				} else if in, size = wordRuneAt(text, i); in {
					ascii = false
				}
			}
			if !in {
				if start < i {
					run := text[start:i]
					if ascii {
						// Folding an ASCII run keeps its length: its key
						// is known before it is folded.
						if m.inSketch(keyOf(lowerASCII(run[0]), lowerASCII(run[len(run)-1]), len(run))) {
							steps += len(run)
							lower = lower[:0]
							for j := range len(run) {
								lower = append(lower, lowerASCII(run[j]))
							}
							if m.whole[string(lower)] {
								return true, steps
							}
						}
					} else if run = foldString(run); run != "" && m.inSketch(runKey(run)) {
						steps += len(run)
						if m.whole[run] {
							return true, steps
						}
					}
				}
				start, ascii = i+size, true
			}
			i += size
		}
	}
	if m.anywhere.words > 0 {
		ok, read := m.anywhere.contains(foldString(text))
		return ok, steps + read
	}
	return false, steps
}

// wordRuneAt reports whether the rune at byte i of text continues a run
// of word runes (inWord, or a format character, which folding drops), and
// its size.
func wordRuneAt(text string, i int) (bool, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return asciiInWord[b], 1
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	if r < 0x10000 {
		return inWordBits()[r/64]&(1<<(r%64)) != 0, size
	}
	return inWord(r) || formatRune(r), size
}

// asciiInWord and inWordBits hold wordRuneAt's answer for ASCII and for
// the Basic Multilingual Plane, the latter a bit a rune, built once on
// first use: the matcher asks for every rune of a text. (No format
// character is ASCII.)
var (
	asciiInWord = func() (t [utf8.RuneSelf]bool) {
		for r := range rune(len(t)) {
			t[r] = inWord(r)
		}
		return t
	}()
	inWordBits = sync.OnceValue(func() []uint64 {
		t := make([]uint64, 0x10000/64)
		for r := range rune(0x10000) {
			if inWord(r) || formatRune(r) {
				t[r/64] |= 1 << (r % 64)
			}
		}
		return t
	})
)

// trie holds a set of words by their bytes. Node 0 is the root.
type trie struct {
	root  [256]int32 // the root's transitions (0: none)
	first []int32    // other nodes' first transition in edges (0: none)
	edges []trieEdge // edges[0] is unused
	word  []bool     // a word ends at the node (after link: or at a suffix of it)
	fail  []int32    // after link: the longest proper suffix of the node that is a node
	words int
}

type trieEdge struct {
	b       byte
	node    int32
	sibling int32 // the next transition of the same node (0: none)
}

// newTrie builds the trie of words, in arrays sized once.
func newTrie(words []string) trie {
	size := 1
	for _, w := range words {
		size += len(w)
	}
	t := trie{first: make([]int32, 1, size), edges: make([]trieEdge, 1, size), word: make([]bool, 1, size)}
	for _, w := range words {
		n := int32(0)
		for i := 0; i < len(w); i++ {
			c := t.child(n, w[i])
			if c == 0 {
				c = int32(len(t.word))
				t.first = append(t.first, 0)
				t.word = append(t.word, false)
				if n == 0 {
					t.root[w[i]] = c
				} else {
					t.edges = append(t.edges, trieEdge{w[i], c, t.first[n]})
					t.first[n] = int32(len(t.edges) - 1)
				}
			}
			n = c
		}
		if !t.word[n] {
			t.word[n] = true
			t.words++
		}
	}
	return t
}

// child is the node that byte b leads to from node n (0: none).
func (t *trie) child(n int32, b byte) int32 {
	if n == 0 {
		return t.root[b]
	}
	for e := t.first[n]; e != 0; e = t.edges[e].sibling {
		if t.edges[e].b == b {
			return t.edges[e].node
		}
	}
	return 0
}

// link makes the trie an Aho-Corasick automaton for contains: the failure
// links, and word marking every node that a word ends at or on its chain
// of failure links. Breadth first: a node's link is found from its
// parent's, and its link's marks are final before the node is reached.
func (t *trie) link() {
	t.fail = make([]int32, len(t.word))
	queue := make([]int32, 0, len(t.word))
	for b := range 256 {
		if c := t.root[b]; c != 0 {
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for e := t.first[n]; e != 0; e = t.edges[e].sibling {
			b, c := t.edges[e].b, t.edges[e].node
			f := t.fail[n]
			for f != 0 && t.child(f, b) == 0 {
				f = t.fail[f]
			}
			if fc := t.child(f, b); fc != c {
				t.fail[c] = fc
			}
			t.word[c] = t.word[c] || t.word[t.fail[c]]
			queue = append(queue, c)
		}
	}
}

// contains reports whether one of the words of a linked trie occurs in
// text, and the steps taken: a byte read, a failure link followed (each
// shortens the match the bytes read have built, so at most one per byte).
func (t *trie) contains(text string) (bool, int) {
	steps := 0
	n := int32(0)
	for i := 0; i < len(text); i++ {
		steps++
		b := text[i]
		for n != 0 {
			if c := t.child(n, b); c != 0 {
				n = c
				break
			}
			n = t.fail[n]
			steps++
		}
		if n == 0 {
			n = t.root[b] // most bytes of a text that matches nothing
			if n == 0 {
				continue
			}
		}
		if t.word[n] {
			return true, steps
		}
	}
	return false, steps
}

// mutes reports whether the post v is hidden by one of the matcher's words.
func (m *wordMatcher) mutes(v *PostView) bool {
	return (len(m.whole) > 0 || m.anywhere.words > 0) && (m.match(v.Title) || m.match(v.Content))
}

// foldTable maps every rune of the Basic Multilingual Plane to its folded
// form (foldRune, -1 for a format character); built once, on first use.
var foldTable = sync.OnceValue(func() []rune {
	t := make([]rune, 0x10000)
	for r := range rune(len(t)) {
		t[r] = foldSlow(r)
	}
	return t
})

// foldString maps every rune to one canonical form of all its case
// variants: the lower case of the smallest rune of its simple case folding
// orbit (so "Σ", "σ" and "ς" all become "σ", and the folded form reads as
// lower case), and drops the format characters (Unicode category Cf:
// U+00AD, U+200B, U+200D, U+2060, U+FEFF ...), which show nothing, so that
// "spoi\u200bler" folds as "spoiler". Text that is already folded ASCII is
// returned as is.
func foldString(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, i, len(s)+8)
	copy(b, s[:i])
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if f := foldRune(r); f >= 0 {
			b = utf8.AppendRune(b, f)
		}
		i += size
	}
	return string(b)
}

// foldRune is the folded form of r (foldString), -1 for a format
// character.
func foldRune(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	case r < 0x10000:
		return foldTable()[r]
	}
	return foldSlow(r)
}

func foldSlow(r rune) rune {
	if formatRune(r) {
		return -1
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return unicode.ToLower(m)
}
