package sqlite

import (
	"cmp"
	"errors"
	"fmt"
	"math"
)

// The lists group_concat returns (idList, eachTuple, Inbox.Page) are
// parsed here in one pass: strings.Cut and strconv.ParseInt per field were
// most of the Go side of reading 150 inbox entries or 1000 follower ids.

var errIntList = errors.New("malformed integer list")

// cutInt parses the decimal integer (an optional '-', then digits) at the
// start of s, which must end there or at sep. It returns the integer and
// the rest of s after the separator ("" at the end), or errIntList.
func cutInt(s string, sep byte) (int64, string, error) {
	neg := len(s) > 0 && s[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	start := i
	var n uint64
	for ; i < len(s) && s[i] != sep; i++ {
		d := s[i] - '0'
		if d > 9 || n > (math.MaxUint64-9)/10 {
			return 0, "", errIntList
		}
		n = n*10 + uint64(d)
	}
	if i == start || (!neg && n > math.MaxInt64) || (neg && n > -math.MinInt64) {
		return 0, "", errIntList
	}
	rest := ""
	if i < len(s) {
		rest = s[i+1:]
		if rest == "" {
			return 0, "", errIntList // a trailing separator
		}
	}
	if neg {
		return -int64(n), rest, nil
	}
	return int64(n), rest, nil
}

// eachTuple parses list, space-separated tuples of len(f) comma-separated
// integers, calling fn with each in f.
func eachTuple(list string, f []int64, fn func()) error {
	for list != "" {
		for i := range f {
			sep := byte(',')
			if i == len(f)-1 {
				sep = ' '
			}
			n, rest, err := cutInt(list, sep)
			if err != nil || (rest == "" && i < len(f)-1) {
				return fmt.Errorf("sqlite: tuple list: %w", cmp.Or(err, errIntList))
			}
			f[i], list = n, rest
		}
		fn()
	}
	return nil
}
