package feed

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A reader's muted words are matched against every post of a page in one
// pass per text: the text is folded once (foldString) and scanned by an
// Aho-Corasick automaton over the bytes of all the folded words, so the
// cost of a page grows with the length of its texts, not with the number
// of words times that length. The rule it applies is MatchesMutedWord's.

// wordMatcher finds whether a folded text holds any of a set of muted
// words under the muted-word rule. Node 0 is the root of the trie.
type wordMatcher struct {
	root  [256]int32 // the root's transitions (0: stay at the root)
	edges [][]acEdge // other nodes' transitions, sorted by byte
	fail  []int32    // the longest proper suffix of a node that is a node
	word  []int32    // the word ending at a node (-1: none)
	dict  []int32    // the nearest node on the fail chain that ends a word (0: none)
	whole []bool     // per word: matched as a whole word (a spaced script)
	size  []int      // per word: length in bytes
	empty bool       // no words: nothing matches
}

type acEdge struct {
	b    byte
	node int32
}

// newWordMatcher builds the matcher of words (NormalizeWord results).
func newWordMatcher(words []string) *wordMatcher {
	m := &wordMatcher{edges: [][]acEdge{nil}, fail: []int32{0}, word: []int32{-1}, dict: []int32{0}}
	for _, w := range words {
		if w == "" {
			continue
		}
		n := int32(0)
		for i := 0; i < len(w); i++ {
			next := m.child(n, w[i])
			if next == 0 {
				next = int32(len(m.edges))
				m.edges = append(m.edges, nil)
				m.fail = append(m.fail, 0)
				m.word = append(m.word, -1)
				m.dict = append(m.dict, 0)
				m.setChild(n, w[i], next)
			}
			n = next
		}
		if m.word[n] < 0 {
			m.word[n] = int32(len(m.size))
			m.whole = append(m.whole, strings.IndexFunc(w, unspacedRune) < 0)
			m.size = append(m.size, len(w))
		}
	}
	m.empty = len(m.size) == 0
	// Breadth first: a node's fail link is found from its parent's.
	queue := make([]int32, 0, len(m.edges))
	for b := range 256 {
		if c := m.root[b]; c != 0 {
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range m.edges[n] {
			f := m.fail[n]
			for f != 0 && m.child(f, e.b) == 0 {
				f = m.fail[f]
			}
			if c := m.child(f, e.b); c != e.node {
				m.fail[e.node] = c
			}
			if f := m.fail[e.node]; m.word[f] >= 0 {
				m.dict[e.node] = f
			} else {
				m.dict[e.node] = m.dict[f]
			}
			queue = append(queue, e.node)
		}
	}
	return m
}

func (m *wordMatcher) child(n int32, b byte) int32 {
	if n == 0 {
		return m.root[b]
	}
	es := m.edges[n]
	if len(es) <= 8 {
		for _, e := range es {
			if e.b == b {
				return e.node
			}
		}
		return 0
	}
	if i, ok := slices.BinarySearchFunc(es, b, func(e acEdge, b byte) int { return int(e.b) - int(b) }); ok {
		return es[i].node
	}
	return 0
}

func (m *wordMatcher) setChild(n int32, b byte, c int32) {
	if n == 0 {
		m.root[b] = c
		return
	}
	i, _ := slices.BinarySearchFunc(m.edges[n], b, func(e acEdge, b byte) int { return int(e.b) - int(b) })
	m.edges[n] = slices.Insert(m.edges[n], i, acEdge{b, c})
}

// match reports whether the folded text holds one of the words: a word of
// a spaced script where neither neighbour continues a word, any other
// anywhere (MatchesMutedWord).
func (m *wordMatcher) match(text string) bool {
	if m.empty {
		return false
	}
	n := int32(0)
	for i := 0; i < len(text); i++ {
		b := text[i]
		for n != 0 {
			if c := m.child(n, b); c != 0 {
				n = c
				break
			}
			n = m.fail[n]
		}
		if n == 0 {
			n = m.root[b] // most bytes of a text that matches nothing
			if n == 0 {
				continue
			}
		}
		for f := n; f != 0; f = m.dict[f] {
			if w := m.word[f]; w >= 0 && m.found(text, int(w), i+1) {
				return true
			}
		}
	}
	return false
}

// found reports whether word w found ending at end counts as a match.
func (m *wordMatcher) found(text string, w, end int) bool {
	if !m.whole[w] {
		return true
	}
	start := end - m.size[w]
	before, _ := utf8.DecodeLastRuneInString(text[:start])
	after, _ := utf8.DecodeRuneInString(text[end:])
	return (start == 0 || !inWord(before)) && (end == len(text) || !inWord(after))
}

// mutes reports whether the post v is hidden by one of the matcher's words.
func (m *wordMatcher) mutes(v *PostView) bool {
	return !m.empty && (m.match(foldString(v.Title)) || m.match(foldString(v.Content)))
}

// foldTable maps every rune of the Basic Multilingual Plane to its folded
// form (foldRune); built once, on first use.
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
// lower case). Text that is already folded ASCII is returned as is.
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
		b = utf8.AppendRune(b, foldRune(r))
		i += size
	}
	return string(b)
}

// foldRune is the folded form of r (foldString).
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
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return unicode.ToLower(m)
}
