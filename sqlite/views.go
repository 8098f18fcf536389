package sqlite

import (
	"context"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.FeedViewer = (*DB)(nil)

// feedViewsQuery hydrates a feed page in one statement: the posts among the
// ids (?2, a JSON array) that are the viewer's (?1) own or of an author the
// viewer follows and does not mute, with the author's name and icon and the
// viewer's like. Every lookup is by primary key or index.
const feedViewsQuery = `SELECT p.id, p.user_id, p.shop_id, p.title, p.images, p.content, p.liked, p.comments, p.comment_policy,
	p.created_at, p.updated_at, p.quote_of, p.quote_policy, p.reposts, p.quotes, u.nick_name, u.icon,
	EXISTS (SELECT 1 FROM likes l WHERE l.user_id = ?1 AND l.post_id = p.id)
	FROM posts p JOIN users u ON u.id = p.user_id
	WHERE p.id IN (SELECT value FROM json_each(?2))
	AND (p.user_id = ?1 OR EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = ?1 AND f.followee_id = p.user_id))
	AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.user_id = ?1 AND m.muted_id = p.user_id)`

// FeedViews implements feed.FeedViewer.
func (db *DB) FeedViews(ctx context.Context, viewerID int64, ids []int64) (map[int64]*feed.PostView, error) {
	out := make(map[int64]*feed.PostView, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.read(ctx, feedViewsQuery, viewerID, idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p feed.Post
		var a feed.User
		var created, updated int64
		var liked bool
		if err := rows.Scan(&p.ID, &p.UserID, &p.ShopID, &p.Title, &p.Images, &p.Content, &p.Liked, &p.Comments, &p.CommentPolicy,
			&created, &updated, &p.QuoteOf, &p.QuotePolicy, &p.Reposts, &p.Quotes, &a.NickName, &a.Icon, &liked); err != nil {
			return nil, err
		}
		p.CreatedAt, p.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		a.ID = p.UserID
		out[p.ID] = &feed.PostView{Post: &p, Author: &a, IsLike: liked}
	}
	return out, rows.Err()
}
