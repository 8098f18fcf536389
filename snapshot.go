package feed

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Ranked snapshots: their ids and the stored form of their items.

// snapshotID returns a new random snapshot id (128 bits, hex).
func (s *Service) snapshotID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.rand(), b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// EncodeSnapshot is the stored form of a snapshot's items, one line each:
// post id, entry score, rank score and the features in RankFeatures'
// order, comma-separated. SnapshotSlice reads it, parsing only the lines
// it returns: the one snapshot encoding of every store.
func EncodeSnapshot(items []RankedItem) []byte {
	b := make([]byte, 0, len(items)*64)
	for _, it := range items {
		b = strconv.AppendInt(b, it.PostID, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, it.Score, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, it.RankScore, 'g', -1, 64)
		for i := range RankFeatures {
			b = append(b, ',')
			b = strconv.AppendFloat(b, it.Features[i], 'g', -1, 64)
		}
		b = append(b, '\n')
	}
	return b
}

// SnapshotSlice returns at most limit items of an EncodeSnapshot body after
// skipping offset, and whether more follow.
func SnapshotSlice(body []byte, offset, limit int) ([]RankedItem, bool, error) {
	for range offset {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			return []RankedItem{}, false, nil
		}
		body = body[i+1:]
	}
	items := []RankedItem{}
	for len(body) > 0 && len(items) < limit {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			return nil, false, fmt.Errorf("decode snapshot: unterminated line")
		}
		it, err := decodeRankedItem(string(body[:i]))
		if err != nil {
			return nil, false, err
		}
		items = append(items, it)
		body = body[i+1:]
	}
	return items, len(body) > 0, nil
}

func decodeRankedItem(line string) (RankedItem, error) {
	parts := strings.Split(line, ",")
	if len(parts) != 3+len(RankFeatures) {
		return RankedItem{}, fmt.Errorf("decode snapshot: %d fields in %q", len(parts), line)
	}
	var it RankedItem
	var err error
	var errs [3 + len(RankFeatures)]error
	it.PostID, errs[0] = strconv.ParseInt(parts[0], 10, 64)
	it.Score, errs[1] = strconv.ParseInt(parts[1], 10, 64)
	it.RankScore, errs[2] = strconv.ParseFloat(parts[2], 64)
	for i := range it.Features {
		it.Features[i], errs[3+i] = strconv.ParseFloat(parts[3+i], 64)
	}
	if err = errors.Join(errs[:]...); err != nil {
		return RankedItem{}, fmt.Errorf("decode snapshot: %w", err)
	}
	return it, nil
}
