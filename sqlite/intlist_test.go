package sqlite

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestIntLists: the one-pass parsers read what strconv writes, in random
// lists of random integers (all magnitudes, both signs, the extremes), and
// refuse every malformed list.
func TestIntLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	num := func() int64 {
		switch rng.IntN(8) {
		case 0:
			return math.MaxInt64
		case 1:
			return math.MinInt64
		case 2:
			return 0
		}
		n := rng.Int64() >> rng.IntN(63)
		if rng.IntN(4) == 0 {
			n = -n
		}
		return n
	}
	for range 2000 {
		ids := make([]int64, 1+rng.IntN(20))
		fields := make([]string, len(ids))
		for i := range ids {
			ids[i] = num()
			fields[i] = strconv.FormatInt(ids[i], 10)
		}
		list := strings.Join(fields, ",")
		got, err := parseIDList(&list)
		want := slices.Sorted(slices.Values(ids))
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("parseIDList(%q) = %v, %v; want %v", list, got, err, want)
		}
		// The same numbers as tuples of 1..3 (space-separated, comma within).
		width := 1 + rng.IntN(3)
		n := len(ids) / width * width
		if n == 0 {
			continue
		}
		var tuples []string
		for i := 0; i < n; i += width {
			tuples = append(tuples, strings.Join(fields[i:i+width], ","))
		}
		f := make([]int64, width)
		var read []int64
		if err := eachTuple(strings.Join(tuples, " "), f, func() { read = append(read, f...) }); err != nil || !slices.Equal(read, ids[:n]) {
			t.Fatalf("eachTuple(%q, %d) read %v, %v; want %v", strings.Join(tuples, " "), width, read, err, ids[:n])
		}
	}
	for _, bad := range []string{",", "1,", ",1", "1,,2", "-", "1-2", "+1", " 1", "1 ", "1,a", "9223372036854775808",
		"-9223372036854775809", "99999999999999999999", "1.5", "0x10"} {
		if got, err := parseIDList(&bad); err == nil {
			t.Errorf("parseIDList(%q) = %v, want an error", bad, got)
		}
	}
	f := make([]int64, 2)
	for _, bad := range []string{"1", "1 2", "1,2,3", "1,2 3", "1,2 ", "1,2  3,4", "1,,2", ",1 2,3", "1,2 3,x"} {
		if err := eachTuple(bad, f, func() {}); err == nil {
			t.Errorf("eachTuple(%q, 2) accepted", bad)
		}
	}
}

// BenchmarkIDList is the parse of a fan-out batch's follower ids.
func BenchmarkIDList(b *testing.B) {
	fields := make([]string, 1000)
	for i := range fields {
		fields[i] = strconv.Itoa(1_000_000 + i*7)
	}
	list := strings.Join(fields, ",")
	for b.Loop() {
		if _, err := parseIDList(&list); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTuples is the parse of a first ranked page's 150 candidates.
func BenchmarkTuples(b *testing.B) {
	tuples := make([]string, 150)
	for i := range tuples {
		tuples[i] = strconv.Itoa(1_800_000_000_000+i*1000) + "," + strconv.Itoa(5_000_000+i)
	}
	list := strings.Join(tuples, " ")
	f := make([]int64, 2)
	for b.Loop() {
		if err := eachTuple(list, f, func() {}); err != nil {
			b.Fatal(err)
		}
	}
}
