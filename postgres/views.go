package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.FeedViewer = (*DB)(nil)

// sharedBy is the part of entryViewsQuery that finds, for post p, the
// reposts of those the viewer $1 is shown reposts of (the viewer, and
// the users it follows with show_reposts on and does not mute), as "FROM
// reposts x WHERE ..." (its select list and order put before it). It
// reads the smaller side: the post's reposts (reposts_post), each checked
// against the viewer's follows, when they are at most the viewer's
// follows (k.n, one more than its followee count); otherwise the viewer's
// follows, each probed for a repost of the post (reposts' unique
// (user_id, post_id)).
func sharedBy(selectList, tail string) string {
	return `CASE WHEN p.reposts <= k.n THEN (SELECT ` + selectList + ` FROM reposts x WHERE x.post_id = p.id
		AND (x.user_id = $1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = x.user_id AND f.show_reposts))
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = x.user_id)` + tail + `)
	ELSE (SELECT ` + selectList + ` FROM (SELECT f.followee_id AS id FROM follows f WHERE f.follower_id = $1 AND f.show_reposts UNION ALL SELECT $1) sh
		CROSS JOIN reposts x WHERE x.user_id = sh.id AND x.post_id = p.id
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = x.user_id)` + tail + `) END`
}

// firstSharer is sharedBy's earliest repost (by time, then id).
var firstSharer = sharedBy("x.id", " ORDER BY x.created_at, x.id LIMIT 1")

// entryViewsQuery hydrates feed entries in one statement, for the viewer
// $1: each id of $2, the repost it is when it is one, the post it shows
// (the repost's, or the post of that id) and who shared it (sharedBy),
// with the columns of feed.EntryViewRow (the flags' bits in the order of
// feed.Row*). $3 false leaves out the ids that are not reposts before
// reading anything else of them. Every lookup is by primary key or index;
// those only a repost's entry needs (its reposter, blocks) are made for
// reposts alone, and sharedBy's for posts that have reposts; a post's own
// entry reads its first sharer's repost and name (fx, fu) in the columns a
// repost's entry holds its own in. pgx caches the prepared statement per
// connection.
var entryViewsQuery = `WITH k AS (SELECT coalesce((SELECT followee FROM users WHERE id = $1), 0) + 1 AS n)
	SELECT coalesce(r.id, 0),
	(coalesce(ru.id, fu.id) IS NOT NULL)::int | ((u.id IS NOT NULL)::int << 1)
	| (CASE WHEN p.id IS NULL THEN 0 ELSE EXISTS (SELECT 1 FROM likes l WHERE l.user_id = $1 AND l.post_id = p.id)::int << 2 END)
	| (CASE WHEN r.id IS NULL THEN 0 ELSE (r.user_id = $1
		OR (EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = r.user_id AND f.show_reposts)
		AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = r.user_id)))::int << 3 END)
	| (CASE WHEN p.id IS NULL THEN 0 ELSE (p.user_id = $1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = p.user_id))::int << 4 END)
	| (CASE WHEN p.id IS NULL THEN 0 ELSE EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = $1 AND m.muted_id = p.user_id)::int << 5 END)
	| (CASE WHEN r.id IS NULL OR p.id IS NULL THEN 0 ELSE EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = $1 AND b.blocked_id = p.user_id)::int << 6 END)
	| (CASE WHEN r.id IS NULL OR p.id IS NULL THEN 0 ELSE EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = $1)::int << 7 END)
	| (CASE WHEN p.reposts > 0 THEN EXISTS (SELECT 1 FROM reposts x WHERE x.user_id = $1 AND x.post_id = p.id)::int << 8 ELSE 0 END),
	coalesce(r.user_id, fx.user_id, 0), coalesce(r.created_at, fx.created_at, 0), coalesce(ru.nick_name, fu.nick_name, ''), coalesce(ru.icon, fu.icon, ''),
	coalesce(p.id, 0), coalesce(p.user_id, 0), coalesce(p.shop_id, 0), coalesce(p.title, ''), coalesce(p.images, ''), coalesce(p.content, ''),
	coalesce(p.liked, 0), coalesce(p.comments, 0), coalesce(p.comment_policy, 0), coalesce(p.created_at, 0), coalesce(p.updated_at, 0),
	coalesce(p.quote_of, 0), coalesce(p.quote_policy, 0), coalesce(p.reposts, 0), coalesce(p.quotes, 0),
	coalesce(u.nick_name, ''), coalesce(u.icon, ''),
	coalesce(fx.id, CASE WHEN r.id IS NOT NULL AND p.reposts > 0 THEN ` + firstSharer + ` END, 0),
	CASE WHEN p.reposts > 0 THEN ` + sharedBy("count(*)", "") + ` ELSE 0 END
	FROM k CROSS JOIN unnest($2::bigint[]) e(id) LEFT JOIN reposts r ON r.id = e.id
	LEFT JOIN users ru ON ru.id = r.user_id
	LEFT JOIN posts p ON p.id = coalesce(r.post_id, e.id)
	LEFT JOIN users u ON u.id = p.user_id
	LEFT JOIN reposts fx ON fx.id = CASE WHEN r.id IS NULL AND p.reposts > 0 THEN ` + firstSharer + ` END
	LEFT JOIN users fu ON fu.id = fx.user_id
	WHERE r.id IS NOT NULL OR $3`

// EntryViews implements feed.FeedViewer with entryViewsQuery.
func (db *DB) EntryViews(ctx context.Context, viewerID int64, ids []int64) (*feed.EntryViews, error) {
	out := feed.NewEntryViews(len(ids))
	return out, db.entryRows(ctx, viewerID, ids, true, out.Add)
}

// RepostEntries implements feed.RepostStore with entryViewsQuery, without
// the posts among ids.
func (db *DB) RepostEntries(ctx context.Context, viewerID int64, ids []int64) (map[int64]*feed.RepostEntry, error) {
	out := feed.NewEntryViews(len(ids))
	return out.Reposts, db.entryRows(ctx, viewerID, ids, false, out.Add)
}

// Sharers implements feed.RepostStore with entryViewsQuery: the sharers
// of the posts' own rows.
func (db *DB) Sharers(ctx context.Context, viewerID int64, postIDs []int64) (map[int64]*feed.Sharers, error) {
	out := map[int64]*feed.Sharers{}
	return out, db.entryRows(ctx, viewerID, postIDs, true, func(r *feed.EntryViewRow) {
		if r.RepostID == 0 && r.Post.ID != 0 {
			if sh := r.Sharers(); sh != nil {
				out[r.Post.ID] = sh
			}
		}
	})
}

// entryRows runs entryViewsQuery, with the posts among ids (posts) or
// without them, and hands each row to fn.
func (db *DB) entryRows(ctx context.Context, viewerID int64, ids []int64, posts bool, fn func(*feed.EntryViewRow)) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.Pool.Query(ctx, entryViewsQuery, viewerID, ids, posts)
	if err != nil {
		return err
	}
	var r feed.EntryViewRow
	_, err = pgx.ForEachRow(rows, r.Dest(), func() error {
		row := r
		fn(&row)
		return nil
	})
	return err
}
