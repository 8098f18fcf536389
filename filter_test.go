package feed

import (
	"testing"

	"github.com/feedd/feedd/rank"
)

func TestMatchesMutedWord(t *testing.T) {
	for _, c := range []struct {
		text, word string
		want       bool
	}{
		{"Big SPOILER ahead", "spoiler", true},
		{"spoilers ahead", "spoiler", false}, // whole words only
		{"nospoiler", "spoiler", false},      // no match inside a word
		{"(spoiler)", "spoiler", true},       // punctuation is a boundary
		{"spoiler2", "spoiler", false},       // digits continue a word
		{"ΟΔΥΣΣΕΥΣ ήρθε", "οδυσσευς", true},  // final sigma folds with Σ and σ
		{"Straße", "STRASSE", false},         // simple folding: ß is not ss
		{"我不想看剧透了", "剧透", true},              // CJK: substring
		{"我爱golang", "golang", true},         // CJK ends a Latin word
		{"ゲームのネタバレ注意", "ネタバレ", true},         // Katakana: substring
		{"café au lait", "cafe", false},      // accents matter
		{"CAFÉ", "café", true},               // case of accented letters folds
		{"e\u0301t\u00e9", "e", false},       // a combining mark continues a word
		{"", "x", false},
		// Format characters (Cf) show nothing: they neither split a word
		// nor join two, in the text or in the word.
		{"big spoi\u200bler", "spoiler", true},
		{"big SPOI\u200dLER", "spoiler", true},
		{"big spoi\u2060ler", "spoiler", true},
		{"big spoi\u00adler!", "spoiler", true},
		{"\ufeffspoiler\u200b", "spoiler", true},
		{"spoi\u200b\u200bler\U000e0020", "spoiler", true},
		{"spoi\u200bler\u200bs", "spoiler", false}, // still one word, "spoilers"
		{"剧\u200b透", "剧透", true},
		{"a spoiler", "spoi\u00adler", true},
	} {
		w, err := NormalizeWord(c.word)
		if err != nil {
			t.Fatalf("NormalizeWord(%q): %v", c.word, err)
		}
		if got := MatchesMutedWord(c.text, w); got != c.want {
			t.Errorf("MatchesMutedWord(%q, %q) = %v, want %v", c.text, c.word, got, c.want)
		}
	}
	for _, bad := range []string{"", " ", "two words", "c++", "a,b", "\u200b\u00ad", string(make([]rune, MaxMutedWordLen+1))} {
		if _, err := NormalizeWord(bad); ErrorCode(err) != EINVALID {
			t.Errorf("NormalizeWord(%q) = %v, want EINVALID", bad, err)
		}
	}
}

func TestRankCursor(t *testing.T) {
	c := rank.Cursor{Snapshot: "0123456789abcdef0123456789abcdef", Pos: 20}
	s := rank.EncodeCursor(c)
	got, err := DecodeRankCursor(s)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := DecodeCursor(s); err == nil {
		t.Fatal("a ranked cursor decodes as a chronological one")
	}
	if _, err := DecodeRankCursor(EncodeCursor(Cursor{Score: 1, PostID: 2})); err == nil {
		t.Fatal("a chronological cursor decodes as a ranked one")
	}
	for _, bad := range []string{"", "r1", rank.EncodeCursor(rank.Cursor{Snapshot: "x", Pos: 1}), rank.EncodeCursor(rank.Cursor{Snapshot: c.Snapshot, Pos: 0})} {
		if _, err := DecodeRankCursor(bad); ErrorCode(err) != EINVALID {
			t.Errorf("DecodeRankCursor(%q) = %v, want EINVALID", bad, err)
		}
	}
}
