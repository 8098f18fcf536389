package rank

import (
	"bytes"
	"slices"
	"testing"
)

// TestSnapshotEncoding: SnapshotSlice reads back what EncodeSnapshot
// wrote, every field exact, any slice of it, and refuses a damaged body.
func TestSnapshotEncoding(t *testing.T) {
	items := make([]Item, 25)
	for i := range items {
		items[i] = Item{PostID: int64(100 - i), Score: int64(1000+i) << 30, RankScore: float64(25-i) / 3,
			Features: [len(Features)]float64{0.5, float64(i) / 7, 1 - float64(i)/25, 1e-300, float64(i % 2)}}
	}
	body := EncodeSnapshot(items)
	for _, c := range []struct{ offset, limit int }{{0, 25}, {0, 10}, {10, 10}, {20, 10}, {25, 5}, {30, 5}} {
		got, more, err := SnapshotSlice(body, c.offset, c.limit)
		end := min(c.offset+c.limit, len(items))
		want := items[min(c.offset, len(items)):end]
		if err != nil || !slices.Equal(got, want) || more != (end < len(items)) {
			t.Fatalf("SnapshotSlice(%d, %d) = %v, %v, %v; want %v, %v", c.offset, c.limit, got, more, err, want, end < len(items))
		}
	}
	for _, bad := range [][]byte{body[:len(body)-1], bytes.Replace(body, []byte(","), []byte(";"), 1), []byte("1,2,x,0,0,0,0,0\n")} {
		if _, _, err := SnapshotSlice(bad, 0, 25); err == nil {
			t.Errorf("SnapshotSlice(%q...) accepted a damaged body", bad[:min(len(bad), 20)])
		}
	}
}

// TestCursor: DecodeCursor reads back what EncodeCursor wrote and refuses
// anything else with ErrCursor.
func TestCursor(t *testing.T) {
	c := Cursor{Snapshot: "0123456789abcdef0123456789abcdef", Pos: MaxCandidates}
	if got, err := DecodeCursor(EncodeCursor(c)); err != nil || got != c {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "r1", "djE6MToy", EncodeCursor(Cursor{Snapshot: "x", Pos: 1}),
		EncodeCursor(Cursor{Snapshot: c.Snapshot, Pos: 0}), EncodeCursor(Cursor{Snapshot: c.Snapshot, Pos: MaxCandidates + 1}),
		EncodeCursor(Cursor{Snapshot: "0123456789ABCDEF0123456789abcdef", Pos: 1})} {
		if _, err := DecodeCursor(bad); err != ErrCursor {
			t.Errorf("DecodeCursor(%q) = %v, want ErrCursor", bad, err)
		}
	}
}

// TestSnapshotBeforeComments: a snapshot saved before the comments and
// reposts features (two fields fewer a line), or before the reposts
// feature (one fewer), still reads, those features 0.
func TestSnapshotBeforeComments(t *testing.T) {
	for line, want := range map[string]Item{
		"7,1000,2.5,0.1,0.2,0.3,0.4,1\n":         {PostID: 7, Score: 1000, RankScore: 2.5, Features: [len(Features)]float64{0.1, 0.2, 0.3, 0.4, 1, 0, 0}},
		"7,1000,2.5,0.1,0.2,0.3,0.4,1,0.5\n":     {PostID: 7, Score: 1000, RankScore: 2.5, Features: [len(Features)]float64{0.1, 0.2, 0.3, 0.4, 1, 0.5, 0}},
		"7,1000,2.5,0.1,0.2,0.3,0.4,1,0.5,.25\n": {PostID: 7, Score: 1000, RankScore: 2.5, Features: [len(Features)]float64{0.1, 0.2, 0.3, 0.4, 1, 0.5, 0.25}},
	} {
		items, more, err := SnapshotSlice([]byte(line), 0, 10)
		if err != nil || more || len(items) != 1 {
			t.Fatalf("SnapshotSlice(%q) = %v, %v, %v", line, items, more, err)
		}
		if items[0] != want {
			t.Fatalf("%q: item %+v, want %+v", line, items[0], want)
		}
	}
	if _, _, err := SnapshotSlice([]byte("7,1000,2.5,0.1\n"), 0, 10); err == nil {
		t.Fatal("a line short of fields decodes")
	}
}
