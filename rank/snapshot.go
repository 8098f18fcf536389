package rank

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A ranked scroll keeps its order as a snapshot (the stores keep them:
// feed.SnapshotStore) and names it, with a position, in its cursor.

// NewSnapshotID returns a new random snapshot id (128 bits of r, hex).
func NewSnapshotID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// EncodeSnapshot is the stored form of a snapshot's items, one line each:
// post id, entry score, rank score and the features in Features' order,
// comma-separated. SnapshotSlice reads it, parsing only the lines it
// returns: the one snapshot encoding of every store.
func EncodeSnapshot(items []Item) []byte {
	b := make([]byte, 0, len(items)*64)
	for _, it := range items {
		b = strconv.AppendInt(b, it.PostID, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, it.Score, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, it.RankScore, 'g', -1, 64)
		for i := range Features {
			b = append(b, ',')
			b = strconv.AppendFloat(b, it.Features[i], 'g', -1, 64)
		}
		b = append(b, '\n')
	}
	return b
}

// SnapshotSlice returns at most limit items of an EncodeSnapshot body after
// skipping offset, and whether more follow.
func SnapshotSlice(body []byte, offset, limit int) ([]Item, bool, error) {
	for range offset {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			return []Item{}, false, nil
		}
		body = body[i+1:]
	}
	items := []Item{}
	for len(body) > 0 && len(items) < limit {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			return nil, false, fmt.Errorf("decode snapshot: unterminated line")
		}
		it, err := decodeItem(string(body[:i]))
		if err != nil {
			return nil, false, err
		}
		items = append(items, it)
		body = body[i+1:]
	}
	return items, len(body) > 0, nil
}

func decodeItem(line string) (Item, error) {
	parts := strings.Split(line, ",")
	// A snapshot saved before the reposts feature has one field fewer, and
	// before the comments feature two: they read as 0 until such
	// snapshots expire.
	if len(parts) > 3+len(Features) || len(parts) < 1+len(Features) {
		return Item{}, fmt.Errorf("decode snapshot: %d fields in %q", len(parts), line)
	}
	var it Item
	var errs [3 + len(Features)]error
	it.PostID, errs[0] = strconv.ParseInt(parts[0], 10, 64)
	it.Score, errs[1] = strconv.ParseInt(parts[1], 10, 64)
	it.RankScore, errs[2] = strconv.ParseFloat(parts[2], 64)
	for i := range len(parts) - 3 {
		it.Features[i], errs[3+i] = strconv.ParseFloat(parts[3+i], 64)
	}
	if err := errors.Join(errs[:]...); err != nil {
		return Item{}, fmt.Errorf("decode snapshot: %w", err)
	}
	return it, nil
}

// Cursor is the ranked timeline's position: a snapshot of the order and
// the number of its entries already read.
type Cursor struct {
	Snapshot string
	Pos      int
}

// EncodeCursor returns the opaque form of c for clients. Its prefix ("r1")
// tells it from a chronological cursor ("v1").
func EncodeCursor(c Cursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "r1:%s:%d", c.Snapshot, c.Pos))
}

// ErrCursor is DecodeCursor's error for a string that is not a cursor.
var ErrCursor = errors.New("cursor is not one this server returned for order=ranked")

// DecodeCursor parses an opaque ranked cursor; ErrCursor if it is not one.
func DecodeCursor(s string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrCursor
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != "r1" || len(parts[1]) != 32 || strings.Trim(parts[1], "0123456789abcdef") != "" {
		return Cursor{}, ErrCursor
	}
	pos, err := strconv.Atoi(parts[2])
	if err != nil || pos < 1 || pos > MaxCandidates {
		return Cursor{}, ErrCursor
	}
	return Cursor{Snapshot: parts[1], Pos: pos}, nil
}
