package feed

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestMergeHead checks mergeHead against the stream itself, with random
// streams and changes. When every entry that joined the stream since the
// candidates were read lies within its head, a merge it accepts is the
// newest n entries of the stream and of the candidates that left it
// (deleted posts, which pages drop when read), exactly; the stream itself
// when shorter than the head. It refuses only when the head holds none of
// the candidates; when nothing changed it returns the candidates
// themselves (n of them, or a stream shorter than the head).
func TestMergeHead(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 13))
	for range 5000 {
		k, n := 1+r.IntN(24), 1+r.IntN(60)
		var stream []Entry
		id := int64(1)
		for range r.IntN(100) {
			stream = append(stream, Entry{PostID: id, Score: int64(r.IntN(200))})
			id++
		}
		slices.SortFunc(stream, CompareEntries)
		cands := slices.Clone(stream[:min(n, len(stream))])
		// Entries that leave the stream (any of them, the candidates'
		// newest included).
		var gone []Entry
		for range r.IntN(4) {
			if len(stream) > 0 {
				i := r.IntN(min(len(stream), n+k))
				if slices.Contains(cands, stream[i]) {
					gone = append(gone, stream[i])
				}
				stream = slices.Delete(stream, i, i+1)
			}
		}
		// New entries, only those that end within the head (one below it
		// is what the merge may miss): dropping one moves the others up.
		var added []Entry
		for range r.IntN(k + 3) {
			added = append(added, Entry{PostID: id, Score: int64(r.IntN(260))})
			id++
		}
		for {
			next := MergeEntries(stream, added)
			n0 := len(added)
			added = slices.DeleteFunc(added, func(e Entry) bool { return slices.Index(next, e) >= k })
			if len(added) == n0 {
				stream = next
				break
			}
		}
		head := stream[:min(k, len(stream))]
		got, ok := mergeHead(head, cands, k, n)
		overlap := slices.ContainsFunc(head, func(e Entry) bool { return slices.Contains(cands, e) })
		if ok != (len(head) < k || overlap) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v: ok %v", seed, k, n, head, cands, ok)
		}
		if !ok {
			continue
		}
		want := MergeEntries(stream, gone)
		if len(head) < k {
			want = stream
		}
		want = want[:min(n, len(want))]
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v gone %v: merged %v, want %v", seed, k, n, head, cands, gone, got, want)
		}
		if len(added) == 0 && len(gone) == 0 && len(cands) > 0 && (len(cands) == n || len(stream) < k) && !sameEntries(got, cands) {
			t.Fatalf("seed %d: k %d n %d head %v cands %v: nothing new, and a copy of the candidates", seed, k, n, head, cands)
		}
	}
}
