package hmdp

import (
	"context"
	"fmt"
	"math"
	"time"

	feed "github.com/feedd/feedd"
)

// counted is a source table's size, for the progress display and the
// report.
func (r *run) counted(ctx context.Context, table string) (int64, error) {
	n, err := r.src.count(ctx, table)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

// cleaned counts and samples the kinds a cleaner found in a row.
func (r *run) cleaned(b *batch, c *cleaner, key int64) {
	for _, k := range c.kinds {
		b.delta.Clean(k, 1)
		r.sample(b.phase, "cleaned", k, key, "")
	}
}

// skip counts and samples a row the importer skips.
func (r *run) skip(b *batch, reason string, key int64, detail string) {
	b.delta.Skip(reason, 1)
	r.sample(b.phase, "skipped", reason, key, detail)
}

// importUsers: tb_user, with the city and introduction of tb_user_info.
// Passwords are not read: feedd logs in with codes.
func (r *run) importUsers(ctx context.Context) error {
	total, err := r.counted(ctx, "tb_user")
	if err != nil {
		return err
	}
	return table(ctx, r, PhaseUsers, total, min(r.o.Batch, wideBatch), r.src.users, func(u srcUser) int64 { return u.id },
		func(ctx context.Context, rows []srcUser, b *batch) error {
			users := make([]*feed.User, 0, len(rows))
			for _, s := range rows {
				var c cleaner
				users = append(users, &feed.User{ID: s.id, Phone: c.utf8(s.phone), NickName: c.plain(s.nick), Icon: c.icon(s.icon),
					City: c.plain(s.city), Introduce: c.plain(s.introduce), CreatedAt: time.UnixMilli(s.created), ActiveAt: r.now})
				r.cleaned(b, &c, s.id)
			}
			b.read, b.written, b.key = len(rows), len(users), func(i int) int64 { return users[i].ID }
			skipped, err := r.store(b, func(c feed.ImportCommit) error { return r.o.Store.ImportUsers(ctx, users, c) })
			if err != nil {
				return err
			}
			for i, u := range users {
				switch skipped[i] {
				case "":
					r.users[u.ID] = true
				case feed.SkipIDTaken:
					delete(r.users, u.ID) // the store's own user has the id
				}
			}
			return nil
		})
}

// importPosts: tb_blog. The like count is tb_blog.liked until the likes
// phase counts the likes it imports.
func (r *run) importPosts(ctx context.Context) error {
	total, err := r.counted(ctx, "tb_blog")
	if err != nil {
		return err
	}
	return table(ctx, r, PhasePosts, total, min(r.o.Batch, wideBatch), r.src.posts, func(p srcPost) int64 { return p.id },
		func(ctx context.Context, rows []srcPost, b *batch) error {
			posts := make([]*feed.Post, 0, len(rows))
			for _, s := range rows {
				if !r.users[s.user] {
					r.skip(b, SkipMissingAuthor, s.id, fmt.Sprintf("user_id %d", s.user))
					continue
				}
				var c cleaner
				p := &feed.Post{ID: s.id, UserID: s.user, ShopID: max(s.shop, 0), Title: c.title(s.title), Content: c.content(s.content),
					Images: c.images(s.images), Liked: max(s.liked, 0), CreatedAt: time.UnixMilli(s.created), UpdatedAt: time.UnixMilli(max(s.updated, s.created))}
				r.cleaned(b, &c, s.id)
				posts = append(posts, p)
			}
			b.read, b.written, b.key = len(rows), len(posts), func(i int) int64 { return posts[i].ID }
			skipped, err := r.store(b, func(c feed.ImportCommit) error { return r.o.Store.ImportPosts(ctx, posts, c) })
			if err != nil {
				return err
			}
			for i, p := range posts {
				switch skipped[i] {
				case "":
					r.posts[p.ID] = postRef{p.UserID, p.Score()}
				case feed.SkipIDTaken:
					delete(r.posts, p.ID) // the store's own post has the id
				}
			}
			return nil
		})
}

// importFollows: tb_follow.
func (r *run) importFollows(ctx context.Context) error {
	total, err := r.counted(ctx, "tb_follow")
	if err != nil {
		return err
	}
	return table(ctx, r, PhaseFollows, total, r.o.Batch, r.src.follows, func(f srcFollow) int64 { return f.id },
		func(ctx context.Context, rows []srcFollow, b *batch) error {
			follows := make([]feed.ImportFollow, 0, len(rows))
			keys := make([]int64, 0, len(rows))
			for _, s := range rows {
				switch {
				case s.user == s.followee:
					r.skip(b, SkipSelfFollow, s.id, fmt.Sprintf("user_id %d", s.user))
				case !r.users[s.user] || !r.users[s.followee]:
					r.skip(b, SkipMissingUser, s.id, fmt.Sprintf("user_id %d, follow_user_id %d", s.user, s.followee))
				default:
					follows = append(follows, feed.ImportFollow{FollowerID: s.user, FolloweeID: s.followee, CreatedAt: time.UnixMilli(s.created)})
					keys = append(keys, s.id)
				}
			}
			b.read, b.written, b.key = len(rows), len(follows), func(i int) int64 { return keys[i] }
			_, err := r.store(b, func(c feed.ImportCommit) error { return r.o.Store.ImportFollows(ctx, follows, c) })
			return err
		})
}

// likedPost is a post of tb_blog with the members of its blog:liked set.
type likedPost struct {
	id, author int64
	likers     []member
}

// importLikes: blog:liked:{blogId}, read for each post of tb_blog in id
// order (the key of this phase's checkpoint), earliest like first. A post
// comes with all its likes in one batch, and its like count becomes the
// number imported.
func (r *run) importLikes(ctx context.Context) error {
	read := func(ctx context.Context, after int64, n int) ([]likedPost, error) {
		posts, err := r.src.postAuthors(ctx, after, n)
		if err != nil {
			return nil, err
		}
		keys := make([]string, len(posts))
		for i, p := range posts {
			keys[i] = r.src.likedKey(p.id)
		}
		sets, err := r.src.sortedSets(ctx, keys, false, 0)
		if err != nil {
			return nil, err
		}
		for i := range posts {
			posts[i].likers = sets[i]
		}
		return posts, nil
	}
	return table(ctx, r, PhaseLikes, -1, min(r.o.Batch, wideBatch), read, func(p likedPost) int64 { return p.id },
		func(ctx context.Context, rows []likedPost, b *batch) error {
			var likes []feed.ImportLike
			var keys, posts []int64
			latest := r.now.Add(24 * time.Hour).UnixMilli()
			for _, p := range rows {
				ref, ok := r.posts[p.id]
				ok = ok && ref.author == p.author // else the store's post of that id is its own
				if ok {
					posts = append(posts, p.id)
				}
				for _, m := range p.likers {
					b.read++
					switch {
					case !m.ok || m.score <= 0 || m.score > float64(latest) || m.score != math.Trunc(m.score):
						r.skip(b, SkipMalformed, p.id, fmt.Sprintf("member %q score %v", m.raw, m.score))
					case !ok:
						r.skip(b, SkipMissingPost, p.id, fmt.Sprintf("user %d", m.id))
					case !r.users[m.id]:
						r.skip(b, SkipMissingUser, p.id, fmt.Sprintf("user %d", m.id))
					default:
						likes = append(likes, feed.ImportLike{PostID: p.id, UserID: m.id, AuthorID: p.author, CreatedAt: time.UnixMilli(int64(m.score))})
						keys = append(keys, p.id)
					}
				}
			}
			b.written, b.key = len(likes), func(i int) int64 { return keys[i] }
			_, err := r.store(b, func(c feed.ImportCommit) error { return r.o.Store.ImportLikes(ctx, posts, likes, c) })
			return err
		})
}

// postAuthors lists tb_blog's posts after after with their authors.
func (s *Source) postAuthors(ctx context.Context, after int64, n int) ([]likedPost, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT id, user_id FROM tb_blog WHERE id > ? ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read tb_blog: %w", err)
	}
	defer rows.Close()
	var out []likedPost
	for rows.Next() {
		var p likedPost
		if err := rows.Scan(&p.id, &p.author); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
