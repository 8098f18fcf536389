package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// queryIDList runs query, a SELECT of one ordered column of ids, as one row:
// the ids joined by group_concat. A batch of 1000 follower ids is then one
// value through database/sql and the driver instead of 1000 rows, whose
// reading row by row was a large share of a fan-out's CPU. The ids are returned in
// ascending order (sorted here: SQLite does not promise that an aggregate
// sees the subquery's order, though it does).
func (db *DB) queryIDList(ctx context.Context, query string, args ...any) ([]int64, error) {
	var list *string
	err := db.readRow(ctx, `SELECT group_concat(id) FROM (`+query+`)`, args...).Scan(&list)
	if err != nil {
		return nil, err
	}
	return parseIDList(list)
}

// parseIDList parses group_concat's comma-separated ids (nil: no rows).
func parseIDList(list *string) ([]int64, error) {
	if list == nil || *list == "" {
		return []int64{}, nil
	}
	s := *list
	out := make([]int64, 0, strings.Count(s, ",")+1)
	for s != "" {
		id, rest, err := cutInt(s, ',')
		if err != nil {
			return nil, fmt.Errorf("sqlite: id list: %w", err)
		}
		out = append(out, id)
		s = rest
	}
	slices.Sort(out)
	return out, nil
}
