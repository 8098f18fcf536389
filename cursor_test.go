package feed_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	feed "github.com/feedd/feedd"
)

func TestEntryCompare(t *testing.T) {
	e := func(score, id int64) feed.Entry { return feed.Entry{PostID: id, Score: score} }
	for _, c := range []struct {
		a, b feed.Entry
		want int
	}{
		{e(2, 1), e(1, 9), -1}, // newer first, whatever the ids
		{e(1, 9), e(2, 1), 1},
		{e(5, 7), e(5, 3), -1}, // a tie in one ms: larger id first
		{e(5, 3), e(5, 7), 1},
		{e(5, 3), e(5, 3), 0},
		{e(math.MaxInt64, 1), e(0, math.MaxInt64), -1},
	} {
		if got := c.a.Compare(c.b); got != c.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := c.a.Before(c.b); got != (c.want < 0) {
			t.Errorf("%v.Before(%v) = %v", c.a, c.b, got)
		}
	}
}

func TestBoundAdmits(t *testing.T) {
	e := func(score, id int64) feed.Entry { return feed.Entry{PostID: id, Score: score} }
	for _, c := range []struct {
		b    feed.Bound
		e    feed.Entry
		want bool
	}{
		{feed.AtMost(10), e(10, 99), true}, // the whole millisecond
		{feed.AtMost(10), e(9, 1), true},
		{feed.AtMost(10), e(11, 1), false},
		{feed.After(e(10, 5)), e(10, 4), true}, // after the cursor in feed order
		{feed.After(e(10, 5)), e(10, 5), false},
		{feed.After(e(10, 5)), e(10, 6), false},
		{feed.After(e(10, 5)), e(9, 100), true},
		{feed.Top(), e(math.MaxInt64-1, math.MaxInt64), true},
	} {
		if got := c.b.Admits(c.e); got != c.want {
			t.Errorf("%+v.Admits(%v) = %v, want %v", c.b, c.e, got, c.want)
		}
	}
}

// TestAfterIsExact checks the native cursor's property on random feeds:
// the entries After(c) admits are exactly those that follow c in feed order.
func TestAfterIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		es := randomFeed(r, 1+r.IntN(40))
		for i, c := range es {
			var got []feed.Entry
			for _, e := range es {
				if feed.After(c).Admits(e) {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, es[i+1:]) {
				t.Fatalf("After(%v) admits %v, want %v", c, got, es[i+1:])
			}
		}
	}
}

// randomFeed returns n distinct entries in feed order, with many ties.
func randomFeed(r *rand.Rand, n int) []feed.Entry {
	seen := map[feed.Entry]bool{}
	var es []feed.Entry
	for len(es) < n {
		e := feed.Entry{Score: int64(r.IntN(5)), PostID: int64(1 + r.IntN(3*n))}
		if !seen[e] {
			seen[e] = true
			es = append(es, e)
		}
	}
	slices.SortFunc(es, feed.CompareEntries)
	return es
}

func TestCursorEncoding(t *testing.T) {
	for _, c := range []feed.Cursor{{Score: 0, PostID: 1}, {Score: 1_700_000_000_123, PostID: 42}, {Score: math.MaxInt64, PostID: math.MaxInt64}} {
		got, err := feed.DecodeCursor(feed.EncodeCursor(c))
		if err != nil || got != c {
			t.Errorf("DecodeCursor(EncodeCursor(%v)) = %v, %v", c, got, err)
		}
	}
	for _, bad := range []string{"", "x", "djE6MTox=", "v1:1:1", "djI6MTox" /* v2:1:1 */, "djE6LTE6MQ" /* v1:-1:1 */, "djE6MTow" /* v1:1:0 */, "djE6MTox Og", "djE6YTox"} {
		if _, err := feed.DecodeCursor(bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("DecodeCursor(%q) = %v, want EINVALID", bad, err)
		}
	}
}

func TestTimelineLimit(t *testing.T) {
	for in, want := range map[int]int{0: feed.DefaultTimelineLimit, 1: 1, feed.MaxTimelineLimit: feed.MaxTimelineLimit} {
		if got, err := feed.TimelineLimit(in); err != nil || got != want {
			t.Errorf("TimelineLimit(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []int{-1, feed.MaxTimelineLimit + 1} {
		if _, err := feed.TimelineLimit(in); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("TimelineLimit(%d) = %v, want EINVALID", in, err)
		}
	}
}

func TestScrollCursorValidate(t *testing.T) {
	for _, c := range []feed.ScrollCursor{{LastID: 1}, {LastID: math.MaxInt64, Offset: feed.MaxOffset}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []feed.ScrollCursor{{}, {LastID: -1}, {LastID: 1, Offset: -1}, {LastID: 1, Offset: feed.MaxOffset + 1}} {
		if err := c.Validate(); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("%+v.Validate() = %v, want EINVALID", c, err)
		}
	}
	for _, size := range []int{-1, feed.MaxPageSize + 1} {
		if err := feed.ValidPageSize(size); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("ValidPageSize(%d) = %v, want EINVALID", size, err)
		}
	}
}

// TestNextCursor walks the compatible API's worked example: scores 50, 40,
// 40, 40, 30 read two at a time.
func TestNextCursor(t *testing.T) {
	feedScores := []int64{50, 40, 40, 40, 30}
	es := make([]feed.Entry, len(feedScores))
	for i, s := range feedScores {
		es[i] = feed.Entry{Score: s, PostID: int64(len(feedScores) - i)}
	}
	type step struct {
		max        int64
		skip       int
		wantMin    int64
		wantOffset int
	}
	for _, s := range []step{
		{math.MaxInt64, 0, 40, 1}, // 50, 40
		{40, 1, 40, 3},            // 40, 40: the tie continues, offset counts it
		{40, 3, 30, 1},            // 30
	} {
		page := readCompat(es, s.max, s.skip, 2)
		gotMin, gotOff := feed.NextCursor(page, s.max, s.skip)
		if gotMin != s.wantMin || gotOff != s.wantOffset {
			t.Fatalf("NextCursor after %v read at (%d, %d) = (%d, %d), want (%d, %d)", page, s.max, s.skip, gotMin, gotOff, s.wantMin, s.wantOffset)
		}
	}
}

// TestNextCursorScrollsExactly is the compatible cursor's property on
// random feeds with ties longer than a page: scrolling with NextCursor
// yields every entry once, in order, at every page size.
func TestNextCursorScrollsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		es := randomFeed(r, 1+r.IntN(60))
		size := 1 + r.IntN(7)
		var got []feed.Entry
		max, skip := int64(math.MaxInt64), 0
		for range len(es) + 1 {
			page := readCompat(es, max, skip, size)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			max, skip = feed.NextCursor(page, max, skip)
		}
		if !slices.Equal(got, es) {
			t.Fatalf("size %d: scrolled %v, want %v", size, got, es)
		}
	}
}

// readCompat is a compatible page of es: within AtMost(max), after skip.
func readCompat(es []feed.Entry, max int64, skip, size int) []feed.Entry {
	var in []feed.Entry
	for _, e := range es {
		if feed.AtMost(max).Admits(e) {
			in = append(in, e)
		}
	}
	if skip >= len(in) {
		return nil
	}
	return in[skip:min(skip+size, len(in))]
}
