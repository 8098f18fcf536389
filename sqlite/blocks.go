package sqlite

import "context"

// BlockedBy implements feed.SocialStore: one statement, primary-key
// lookups of (author, viewer) in blocks.
func (db *DB) BlockedBy(ctx context.Context, viewerID int64, authorIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if len(authorIDs) == 0 || viewerID <= 0 {
		return out, nil
	}
	ids, err := scanIDs(db.read(ctx, `SELECT DISTINCT a.value FROM json_each(?2) a
		WHERE EXISTS (SELECT 1 FROM blocks WHERE user_id = a.value AND blocked_id = ?1)`, viewerID, idList(authorIDs)))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}
