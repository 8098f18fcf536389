package hmdp

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// Schema is the tutorial's tables as its SQL file defines them (MySQL,
// utf8mb4): what tests and feedd bench import load into a database of
// their own.
//
//go:embed testdata/schema.sql
var Schema string

// Source is the tutorial's running service: its MySQL database and,
// optionally, its Redis. The importer only reads it: every read is one
// statement in key order (WHERE id > ? ORDER BY id LIMIT ?), in autocommit,
// so it holds no table lock and no transaction open between batches.
type Source struct {
	MySQL *sql.DB
	// Redis is the tutorial's Redis (likes in blog:liked:{blogId}, feeds
	// in feed:{userId}); nil: none.
	Redis goredis.UniversalClient
	// Prefix is put before the tutorial's keys, for a deployment whose
	// RedisTemplate adds one ("" for none).
	Prefix string
}

// The tutorial's Redis keys.
func (s *Source) likedKey(blogID int64) string {
	return s.Prefix + "blog:liked:" + strconv.FormatInt(blogID, 10)
}
func (s *Source) feedKey(userID int64) string {
	return s.Prefix + "feed:" + strconv.FormatInt(userID, 10)
}

// The tutorial's ids are BIGINT UNSIGNED: a read keeps the rows whose ids
// are at most feed.MaxImportID (beyond counts the others), and reads an id
// that refers to another row as ref, which maps every id above the bound
// to outOfRange, one that no imported row has.
var (
	inRange    = strconv.FormatInt(feed.MaxImportID, 10)
	outOfRange = int64(feed.MaxImportID + 1)
)

func ref(col string) string {
	return "CAST(LEAST(" + col + ", " + strconv.FormatInt(outOfRange, 10) + ") AS SIGNED)"
}

// beyond counts the rows of a source table whose ids are above
// feed.MaxImportID, and names the first of them.
func (s *Source) beyond(ctx context.Context, table string) (n int64, first string, err error) {
	err = s.MySQL.QueryRowContext(ctx, "SELECT count(*), COALESCE(CAST(MIN(id) AS CHAR), '') FROM "+table+" WHERE id > "+inRange).Scan(&n, &first)
	if err != nil {
		err = fmt.Errorf("count the ids of %s out of range: %w", table, err)
	}
	return n, first, err
}

// ms is a MySQL TIMESTAMP or DATETIME column as Unix milliseconds:
// UNIX_TIMESTAMP reads a DATETIME in the session's time zone (the DSN's
// time_zone, else the server's).
func ms(col string) string { return "CAST(ROUND(UNIX_TIMESTAMP(" + col + ") * 1000) AS SIGNED)" }

type srcUser struct {
	id                                 int64
	phone, nick, icon, city, introduce string
	created                            int64
}

func (s *Source) users(ctx context.Context, after int64, n int) ([]srcUser, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT u.id, u.phone, COALESCE(u.nick_name, ''), COALESCE(u.icon, ''),
		COALESCE(i.city, ''), COALESCE(i.introduce, ''), `+ms("u.create_time")+`
		FROM tb_user u LEFT JOIN tb_user_info i ON i.user_id = u.id
		WHERE u.id > ? AND u.id <= `+inRange+` ORDER BY u.id LIMIT ?`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read tb_user: %w", err)
	}
	defer rows.Close()
	var out []srcUser
	for rows.Next() {
		var u srcUser
		if err := rows.Scan(&u.id, &u.phone, &u.nick, &u.icon, &u.city, &u.introduce, &u.created); err != nil {
			return nil, fmt.Errorf("read tb_user: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

type srcPost struct {
	id, shop, user         int64
	title, images, content string
	liked, comments        int
	created, updated       int64
}

func (s *Source) posts(ctx context.Context, after int64, n int) ([]srcPost, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT id, shop_id, `+ref("user_id")+`, title, images, content,
		COALESCE(liked, 0), COALESCE(comments, 0), `+ms("create_time")+`, `+ms("update_time")+`
		FROM tb_blog WHERE id > ? AND id <= `+inRange+` ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read tb_blog: %w", err)
	}
	defer rows.Close()
	var out []srcPost
	for rows.Next() {
		var p srcPost
		if err := rows.Scan(&p.id, &p.shop, &p.user, &p.title, &p.images, &p.content, &p.liked, &p.comments, &p.created, &p.updated); err != nil {
			return nil, fmt.Errorf("read tb_blog: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// userIDs lists tb_user's ids after after: the users whose feeds come next.
func (s *Source) userIDs(ctx context.Context, after int64, n int) ([]int64, error) {
	return s.ids(ctx, `SELECT id FROM tb_user WHERE id > ? AND id <= `+inRange+` ORDER BY id LIMIT ?`, after, n)
}

func (s *Source) ids(ctx context.Context, q string, after int64, n int) ([]int64, error) {
	rows, err := s.MySQL.QueryContext(ctx, q, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

type srcFollow struct {
	id, user, followee, created int64
}

func (s *Source) follows(ctx context.Context, after int64, n int) ([]srcFollow, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT id, `+ref("user_id")+`, `+ref("follow_user_id")+`, `+ms("create_time")+`
		FROM tb_follow WHERE id > ? ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read tb_follow: %w", err)
	}
	defer rows.Close()
	var out []srcFollow
	for rows.Next() {
		var f srcFollow
		if err := rows.Scan(&f.id, &f.user, &f.followee, &f.created); err != nil {
			return nil, fmt.Errorf("read tb_follow: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

type srcComment struct {
	id, user, blog, parent, answer int64
	content                        string
	liked, status                  int
	created, updated               int64
}

func (s *Source) comments(ctx context.Context, after int64, n int) ([]srcComment, error) {
	rows, err := s.MySQL.QueryContext(ctx, `SELECT id, `+ref("user_id")+`, `+ref("blog_id")+`, `+ref("COALESCE(parent_id, 0)")+`,
		`+ref("COALESCE(answer_id, 0)")+`, COALESCE(content, ''), COALESCE(liked, 0), COALESCE(status, 0), `+ms("create_time")+`, `+ms("update_time")+`
		FROM tb_blog_comments WHERE id > ? AND id <= `+inRange+` ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read tb_blog_comments: %w", err)
	}
	defer rows.Close()
	var out []srcComment
	for rows.Next() {
		var c srcComment
		if err := rows.Scan(&c.id, &c.user, &c.blog, &c.parent, &c.answer, &c.content, &c.liked, &c.status, &c.created, &c.updated); err != nil {
			return nil, fmt.Errorf("read tb_blog_comments: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// count is the number of rows of a source table.
func (s *Source) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.MySQL.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

// member is one member of a tutorial sorted set: a user id (likes) or a
// post id (feeds) and its score, a time in ms.
type member struct {
	raw   string
	id    int64
	score float64
	ok    bool // raw is a positive id
}

// sortedSets reads the sorted sets of keys in one pipeline, each member
// with its score: the whole set in score order (newest first with desc),
// or its first max members when max > 0. A missing key reads as empty.
func (s *Source) sortedSets(ctx context.Context, keys []string, desc bool, max int64) ([][]member, error) {
	cmds := make([]*goredis.ZSliceCmd, len(keys))
	_, err := s.Redis.Pipelined(ctx, func(p goredis.Pipeliner) error {
		stop := max - 1
		for i, k := range keys {
			if desc {
				cmds[i] = p.ZRevRangeWithScores(ctx, k, 0, stop)
			} else {
				cmds[i] = p.ZRangeWithScores(ctx, k, 0, stop)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the tutorial's Redis: %w", err)
	}
	out := make([][]member, len(keys))
	for i, c := range cmds {
		for _, z := range c.Val() {
			raw, _ := z.Member.(string)
			m := member{raw: raw, score: z.Score}
			if id, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64); err == nil && id > 0 {
				m.id, m.ok = id, true
			}
			out[i] = append(out[i], m)
		}
	}
	return out, nil
}
