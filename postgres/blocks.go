package postgres

import "context"

// BlockedBy implements feed.SocialStore: one statement, primary-key
// lookups of (author, viewer) in blocks.
func (db *DB) BlockedBy(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if len(authorIDs) == 0 || viewerID <= 0 {
		return out, nil
	}
	ids, err := scanIDs(db.Pool.Query(ctx, `SELECT DISTINCT a FROM unnest($2::bigint[]) AS t(a)
		WHERE EXISTS (SELECT 1 FROM blocks WHERE user_id = a AND blocked_id = $1)`, viewerID, authorIDs))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}
