package postgres

import "context"

// queryIDList runs query, a SELECT of one column of ids named id, as one
// row: the ids as one int8[] (array_agg, in id order). A batch of 1000
// follower ids is then one value through pgx instead of 1000 rows, whose
// reading row by row was a large share of a fan-out's CPU.
func (db *DB) queryIDList(ctx context.Context, query string, args ...any) ([]int64, error) {
	var ids []int64
	err := db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM (`+query+`) s`, args...).Scan(&ids)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}
