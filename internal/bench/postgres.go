package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	feed "github.com/feedd/feedd"
)

// PostgresStore is Store on feedd's PostgreSQL database (the tables of
// postgres/migrations).
type PostgresStore struct {
	Pool *pgxpool.Pool
}

var _ Store = (*PostgresStore)(nil)

// Engine implements Store.
func (s *PostgresStore) Engine() string { return "postgres" }

// Close implements Store.
func (s *PostgresStore) Close() error { s.Pool.Close(); return nil }

// CreateUsers implements Store: one transaction, a statement per chunk. The
// benchmark's database is its own, so nothing else draws from the sequence
// meanwhile and the ids come out consecutive (checked).
func (s *PostgresStore) CreateUsers(ctx context.Context, tag string, n int, progress func(int)) (int64, error) {
	now := time.Now().UnixMilli()
	var first, last int64
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		for done := 0; done < n; {
			k := min(chunk, n-done)
			if _, err := tx.Exec(ctx, `INSERT INTO users (phone, nick_name, icon, created_at, active_at)
				SELECT $3 || i, 'user_bench' || i, '/imgs/icons/bench.jpg', $4, $4 FROM generate_series($1::bigint, $2::bigint) i ORDER BY i`,
				done+1, done+k, tag, now); err != nil {
				return err
			}
			done += k
			progress(done)
		}
		if err := tx.QueryRow(ctx, `SELECT id FROM users WHERE phone = $1`, fmt.Sprint(tag, 1)).Scan(&first); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT id FROM users WHERE phone = $1`, fmt.Sprint(tag, n)).Scan(&last)
	})
	if err == nil && last-first != int64(n-1) {
		err = fmt.Errorf("bench: user ids %d..%d are not consecutive", first, last)
	}
	return first, err
}

// FollowRange implements Store.
func (s *PostgresStore) FollowRange(ctx context.Context, followee, first int64, n int, progress func(int)) error {
	now := time.Now().UnixMilli()
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		for done := 0; done < n; {
			k := min(chunk, n-done)
			lo := first + int64(done)
			if _, err := tx.Exec(ctx, `INSERT INTO follows (follower_id, followee_id, created_at, pull)
				SELECT i, $3, $4, coalesce((SELECT mode <> 0 FROM users WHERE id = $3), false)
				FROM generate_series($1::bigint, $2::bigint) i ON CONFLICT DO NOTHING`,
				lo, lo+int64(k)-1, followee, now); err != nil {
				return err
			}
			done += k
			progress(done)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET followee = followee + 1 WHERE id BETWEEN $1 AND $2`, first, first+int64(n)-1); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE users SET fans = fans + $1 WHERE id = $2`, n, followee)
		return err
	})
	if err != nil {
		return err
	}
	return s.analyze(ctx)
}

// analyze refreshes the planner's statistics after a bulk load, as
// autovacuum would shortly on a live database: without them the first
// queries plan as if the tables were empty.
func (s *PostgresStore) analyze(ctx context.Context) error {
	_, err := s.Pool.Exec(ctx, `ANALYZE users, follows, posts, likes`)
	return err
}

// Follow implements Store.
func (s *PostgresStore) Follow(ctx context.Context, pairs [][2]int64) error {
	now := time.Now().UnixMilli()
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		for len(pairs) > 0 {
			k := min(chunk, len(pairs))
			a, b := make([]int64, k), make([]int64, k)
			for i, p := range pairs[:k] {
				a[i], b[i] = p[0], p[1]
			}
			if _, err := tx.Exec(ctx, `INSERT INTO follows (follower_id, followee_id, created_at, pull)
				SELECT f, e, $3, coalesce((SELECT mode <> 0 FROM users WHERE id = e), false)
				FROM unnest($1::bigint[], $2::bigint[]) AS t(f, e) ON CONFLICT DO NOTHING`, a, b, now); err != nil {
				return err
			}
			pairs = pairs[k:]
		}
		return nil
	})
}

// FixCounts implements Store.
func (s *PostgresStore) FixCounts(ctx context.Context, first, last int64) error {
	_, err := s.Pool.Exec(ctx, `UPDATE users SET
		fans = (SELECT count(*) FROM follows WHERE followee_id = users.id),
		followee = (SELECT count(*) FROM follows WHERE follower_id = users.id)
		WHERE id BETWEEN $1 AND $2`, first, last)
	if err != nil {
		return err
	}
	return s.analyze(ctx)
}

// LikeShare implements Store.
func (s *PostgresStore) LikeShare(ctx context.Context, first, last int64, every int) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO likes (post_id, user_id, created_at, author_id)
			SELECT p.id, f.follower_id, p.created_at + 1, p.user_id FROM follows f JOIN posts p ON p.user_id = f.followee_id
			WHERE f.follower_id BETWEEN $1 AND $2 AND (p.id + f.follower_id) % $3 = 0
			ORDER BY p.id, f.follower_id ON CONFLICT DO NOTHING`, first, last, every)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE posts SET liked = (SELECT count(*) FROM likes WHERE post_id = posts.id)
			WHERE user_id BETWEEN $1 AND $2`, first, last)
		return err
	})
	if err != nil {
		return n, err
	}
	return n, s.analyze(ctx)
}

// InboxHolding implements Store.
func (s *PostgresStore) InboxHolding(ctx context.Context, e feed.Entry, ids []int64) (int, error) {
	var n int
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE user_id = ANY($1) AND score = $2 AND post_id = $3`,
		ids, e.Score, e.PostID).Scan(&n)
	return n, err
}

// InboxHoldingRange implements Store.
func (s *PostgresStore) InboxHoldingRange(ctx context.Context, e feed.Entry, first, last int64) (int, error) {
	var n int
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE user_id BETWEEN $1 AND $2 AND score = $3 AND post_id = $4`,
		first, last, e.Score, e.PostID).Scan(&n)
	return n, err
}

// InboxEntries implements Store.
func (s *PostgresStore) InboxEntries(ctx context.Context, first, last int64) (int64, error) {
	var n int64
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE user_id BETWEEN $1 AND $2`, first, last).Scan(&n)
	return n, err
}

// InboxInsertOne implements Store.
func (s *PostgresStore) InboxInsertOne(ctx context.Context, e feed.Entry, userID int64) error {
	_, err := s.Pool.Exec(ctx, `INSERT INTO inbox (user_id, score, post_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		userID, e.Score, e.PostID)
	return err
}

// InboxInsertRange implements Store: a statement per chunk, four
// connections at once.
func (s *PostgresStore) InboxInsertRange(ctx context.Context, e feed.Entry, first int64, n int) error {
	var ranges [][2]int64
	for done := 0; done < n; done += chunk / 5 {
		ranges = append(ranges, [2]int64{first + int64(done), first + int64(min(done+chunk/5, n)) - 1})
	}
	return parallel(ctx, 4, len(ranges), func(ctx context.Context, i int) error {
		_, err := s.Pool.Exec(ctx, `INSERT INTO inbox (user_id, score, post_id)
			SELECT i, $3, $4 FROM generate_series($1::bigint, $2::bigint) i ON CONFLICT DO NOTHING`, ranges[i][0], ranges[i][1], e.Score, e.PostID)
		return err
	})
}

// InboxDelete implements Store.
func (s *PostgresStore) InboxDelete(ctx context.Context, e feed.Entry, first, last int64) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM inbox WHERE user_id BETWEEN $1 AND $2 AND score = $3 AND post_id = $4`,
		first, last, e.Score, e.PostID)
	return err
}

// SetActive sets the activity time (ms) of each user in ids to the same
// index of at.
func (s *PostgresStore) SetActive(ctx context.Context, ids, at []int64) error {
	_, err := s.Pool.Exec(ctx, `UPDATE users SET active_at = t.at FROM unnest($1::bigint[], $2::bigint[]) AS t(id, at) WHERE users.id = t.id`, ids, at)
	return err
}

// ServerCPU returns a function that reads the CPU time the PostgreSQL
// server of pool has used (its postmaster, the backends it reaped and
// those running), or nil when the server is not on this machine: its
// processes are read from /proc, found from a backend's parent.
func (s *PostgresStore) ServerCPU(ctx context.Context) func() time.Duration {
	var backend int
	if err := s.Pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return nil
	}
	st, err := procStat(backend)
	if err != nil {
		return nil
	}
	postmaster := st.ppid
	if _, err := procStat(postmaster); err != nil {
		return nil
	}
	return func() time.Duration {
		pm, err := procStat(postmaster)
		if err != nil {
			return 0
		}
		total := pm.cpu + pm.children
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if c, err := procStat(pid); err == nil && c.ppid == postmaster {
				total += c.cpu
			}
		}
		return total
	}
}

// stat is what ServerCPU reads of /proc/PID/stat.
type stat struct {
	ppid          int
	cpu, children time.Duration // utime+stime, and cutime+cstime of reaped children
}

func procStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// The command may hold spaces: the fields follow its closing parenthesis.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(i int) time.Duration {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(v) * time.Second / clockTicks
	}
	ppid, _ := strconv.Atoi(f[1])
	// f[0] is field 3 (state): utime is field 14, so f[11].
	return stat{ppid: ppid, cpu: n(11) + n(12), children: n(13) + n(14)}, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc's times.
const clockTicks = 100
