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

// rows is a phase over a source table (likes: over the blog:liked sets of
// its posts) on its way into the store, described for the batch-and-skip
// step every such phase shares (phaseRows).
type rows[S, R any] struct {
	phase string
	table string // the source table, counted for the progress display ("": not counted)
	// ids: the source's keys are ids feedd keeps, and read leaves out
	// those above feed.MaxImportID, counted as skipped at the end.
	ids   bool
	batch int // source rows a batch reads
	read  func(ctx context.Context, after int64, n int) ([]S, error)
	key   func(S) int64 // a source row's key, in the order read
	// size is how many source rows s stands for (nil: one).
	size func(s S) int
	// prepare, if set, runs before a batch is converted.
	prepare func(ctx context.Context, src []S) error
	// convert turns a source row into the rows to write, keeping each
	// with the source key it is counted under, and counts (r.skip,
	// r.cleaned) what it drops or fixes.
	convert func(b *batch, s S, keep func(row R, key int64))
	write   func(ctx context.Context, rows []R, c feed.ImportCommit) error
	// stored, if set, is told of each row kept once the batch is
	// committed: written (reason "") or skipped by the store.
	stored  func(row R, reason string)
	already string // batch.already
}

// phaseRows runs a phase of rows: each batch is read, converted, written
// with its checkpoint, and what the store skipped counted and told.
func phaseRows[S, R any](ctx context.Context, r *run, p rows[S, R]) error {
	total := int64(-1)
	if p.table != "" {
		var err error
		if total, err = r.counted(ctx, p.table); err != nil {
			return err
		}
	}
	var end func(ctx context.Context) error
	if p.ids {
		end = func(ctx context.Context) error { return r.outOfRange(ctx, p.phase, p.table) }
	}
	return table(ctx, r, p.phase, total, p.batch, p.read, p.key, func(ctx context.Context, src []S, b *batch) error {
		b.already = p.already
		if p.prepare != nil {
			if err := p.prepare(ctx, src); err != nil {
				return err
			}
		}
		out := make([]R, 0, len(src))
		keys := make([]int64, 0, len(src))
		keep := func(row R, key int64) { out, keys = append(out, row), append(keys, key) }
		for _, s := range src {
			if p.size != nil {
				b.read += p.size(s)
			} else {
				b.read++
			}
			p.convert(b, s, keep)
		}
		b.written, b.key = len(out), func(i int) int64 { return keys[i] }
		skipped, err := r.store(b, func(c feed.ImportCommit) error { return p.write(ctx, out, c) })
		if err != nil || p.stored == nil {
			return err
		}
		for i, row := range out {
			p.stored(row, skipped[i])
		}
		return nil
	}, end)
}

// outOfRange counts the rows of a source table whose ids are above
// feed.MaxImportID, which the phase's reads leave out, as skipped
// (SkipIDOutOfRange): the source's count now, whatever earlier runs
// counted, in the phase's checkpoint.
func (r *run) outOfRange(ctx context.Context, phase, table string) error {
	n, first, err := r.src.beyond(ctx, table)
	if err != nil {
		return err
	}
	cp := r.cp(phase)
	d := n - cp.Counts.Skipped[SkipIDOutOfRange]
	if d == 0 {
		return nil
	}
	cp.Counts = cp.Counts.Clone()
	cp.Counts.Read += d
	if cp.Counts.Skip(SkipIDOutOfRange, d); n == 0 {
		delete(cp.Counts.Skipped, SkipIDOutOfRange)
	}
	if n > 0 {
		r.sample(phase, "skipped", SkipIDOutOfRange, 0, fmt.Sprintf("%d rows with ids above %d, the first %s", n, feed.MaxImportID, first))
	}
	if r.o.Store != nil {
		if err := r.o.Store.SaveImportProgress(ctx, cp); err != nil {
			return err
		}
	}
	r.cps[phase] = cp
	return nil
}

// importUsers: tb_user, with the city and introduction of tb_user_info.
// Passwords are not read: feedd logs in with codes.
func (r *run) importUsers(ctx context.Context) error {
	return phaseRows(ctx, r, rows[srcUser, *feed.User]{
		phase: PhaseUsers, table: "tb_user", ids: true, batch: min(r.o.Batch, wideBatch), read: r.src.users,
		key: func(u srcUser) int64 { return u.id },
		convert: func(b *batch, s srcUser, keep func(*feed.User, int64)) {
			var c cleaner
			keep(&feed.User{ID: s.id, Phone: c.utf8(s.phone), NickName: c.nick(s.nick), Icon: c.icon(s.icon),
				City: c.line(s.city), Introduce: c.line(s.introduce), CreatedAt: time.UnixMilli(s.created), ActiveAt: r.now}, s.id)
			r.cleaned(b, &c, s.id)
		},
		write: func(ctx context.Context, users []*feed.User, c feed.ImportCommit) error {
			return r.o.Store.ImportUsers(ctx, users, c)
		},
		stored: func(u *feed.User, reason string) {
			switch reason {
			case "":
				r.users[u.ID] = true
			case feed.SkipIDTaken:
				delete(r.users, u.ID) // the store's own user has the id
			}
		},
	})
}

// importPosts: tb_blog. The like count is tb_blog.liked until the likes
// phase counts the likes it imports.
func (r *run) importPosts(ctx context.Context) error {
	return phaseRows(ctx, r, rows[srcPost, *feed.Post]{
		phase: PhasePosts, table: "tb_blog", ids: true, batch: min(r.o.Batch, wideBatch), read: r.src.posts,
		key: func(p srcPost) int64 { return p.id },
		convert: func(b *batch, s srcPost, keep func(*feed.Post, int64)) {
			if !r.users[s.user] {
				r.skip(b, SkipMissingAuthor, s.id, fmt.Sprintf("user_id %d", s.user))
				return
			}
			var c cleaner
			keep(&feed.Post{ID: s.id, UserID: s.user, ShopID: max(s.shop, 0), Title: c.title(s.title), Content: c.content(s.content),
				Images: c.images(s.images), Liked: max(s.liked, 0), CreatedAt: time.UnixMilli(s.created), UpdatedAt: time.UnixMilli(max(s.updated, s.created))}, s.id)
			r.cleaned(b, &c, s.id)
		},
		write: func(ctx context.Context, posts []*feed.Post, c feed.ImportCommit) error {
			return r.o.Store.ImportPosts(ctx, posts, c)
		},
		stored: func(p *feed.Post, reason string) {
			switch reason {
			case "":
				r.posts[p.ID] = postRef{p.UserID, p.Score()}
			case feed.SkipIDTaken:
				delete(r.posts, p.ID) // the store's own post has the id
			}
		},
	})
}

// importFollows: tb_follow.
func (r *run) importFollows(ctx context.Context) error {
	return phaseRows(ctx, r, rows[srcFollow, feed.ImportFollow]{
		phase: PhaseFollows, table: "tb_follow", batch: r.o.Batch, read: r.src.follows,
		key: func(f srcFollow) int64 { return f.id },
		convert: func(b *batch, s srcFollow, keep func(feed.ImportFollow, int64)) {
			switch {
			case s.user == s.followee:
				r.skip(b, SkipSelfFollow, s.id, fmt.Sprintf("user_id %d", s.user))
			case !r.users[s.user] || !r.users[s.followee]:
				r.skip(b, SkipMissingUser, s.id, fmt.Sprintf("user_id %d, follow_user_id %d", s.user, s.followee))
			default:
				keep(feed.ImportFollow{FollowerID: s.user, FolloweeID: s.followee, CreatedAt: time.UnixMilli(s.created)}, s.id)
			}
		},
		write: func(ctx context.Context, follows []feed.ImportFollow, c feed.ImportCommit) error {
			return r.o.Store.ImportFollows(ctx, follows, c)
		},
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
// number imported. A run reads the posts after the checkpoint only: as
// PhaseLikesAgain it reads every post from the first one, once, and
// imports the likes that are not there yet.
func (r *run) importLikes(phase string) func(context.Context) error {
	return func(ctx context.Context) error {
		var already string
		if phase == PhaseLikesAgain {
			already = feed.SkipDuplicate
			if cp := r.cp(phase); cp.Done || cp.Last == 0 {
				r.cps[phase] = feed.ImportCheckpoint{Source: SourceName, Phase: phase} // from the first post, counted anew
			}
		}
		var posts []int64 // the batch's posts that are imported: their like counts are set
		latest := r.now.Add(24 * time.Hour).UnixMilli()
		return phaseRows(ctx, r, rows[likedPost, feed.ImportLike]{
			phase: phase, batch: min(r.o.Batch, wideBatch), read: r.likedPosts, already: already,
			key:     func(p likedPost) int64 { return p.id },
			size:    func(p likedPost) int { return len(p.likers) },
			prepare: func(context.Context, []likedPost) error { posts = posts[:0]; return nil },
			convert: func(b *batch, p likedPost, keep func(feed.ImportLike, int64)) {
				ref, ok := r.posts[p.id]
				ok = ok && ref.author == p.author // else the store's post of that id is its own
				if ok {
					posts = append(posts, p.id)
				}
				for _, m := range p.likers {
					switch {
					case !m.ok || m.score <= 0 || m.score > float64(latest) || m.score != math.Trunc(m.score):
						r.skip(b, SkipMalformed, p.id, fmt.Sprintf("member %q score %v", m.raw, m.score))
					case !ok:
						r.skip(b, SkipMissingPost, p.id, fmt.Sprintf("user %d", m.id))
					case !r.users[m.id]:
						r.skip(b, SkipMissingUser, p.id, fmt.Sprintf("user %d", m.id))
					default:
						keep(feed.ImportLike{PostID: p.id, UserID: m.id, AuthorID: p.author, CreatedAt: time.UnixMilli(int64(m.score))}, p.id)
					}
				}
			},
			write: func(ctx context.Context, likes []feed.ImportLike, c feed.ImportCommit) error {
				return r.o.Store.ImportLikes(ctx, posts, likes, c)
			},
		})
	}
}

// likedPosts reads the posts of tb_blog after after with the members of
// their blog:liked sets.
func (r *run) likedPosts(ctx context.Context, after int64, n int) ([]likedPost, error) {
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

// postAuthors lists tb_blog's posts after after with their authors.
func (s *Source) postAuthors(ctx context.Context, after int64, n int) ([]likedPost, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT id, `+ref("user_id")+` FROM tb_blog WHERE id > ? AND id <= `+inRange+` ORDER BY id LIMIT ?`, after, n)
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
