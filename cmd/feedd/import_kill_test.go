package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/bench"
)

// TestImportResumesAfterKill kills the real feedd import with SIGKILL in
// the middle of tb_follow, then the resumed one in the middle of
// tb_blog_comments, runs it again, and checks that the store ends
// exactly as one uninterrupted import leaves it: no row twice, no count
// moved twice, no like out of order, the same threads, the same inboxes,
// the same report.
func TestImportResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a feedd process")
	}
	src := newHMDPSource(t, false) // MakeHMDP loads the schema
	data, err := bench.MakeHMDP(context.Background(), src.db, src.rdb, src.prefix, bench.HMDPOptions{Users: 1500, Follows: 20, Posts: 2, Likes: 3, Comments: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("source: %+v", data)
	for _, mk := range []func(*testing.T) *importTarget{
		sqliteTarget,
		func(t *testing.T) *importTarget { return postgresTarget(t, false) },
	} {
		killed, clean := mk(t), mk(t)
		t.Run(killed.name, func(t *testing.T) {
			t.Parallel() // the engines' imports share only the source, which they read
			// In batches of the default size: the batch size changes nothing.
			want, _, err := runImportCmd(t, src, clean)
			if err != nil {
				t.Fatal(err)
			}

			// killIn runs the import and kills it past a third of phase,
			// whose source table has keys 1..total, with table's rows
			// midway.
			killIn := func(phase, table string, total int64) {
				t.Helper()
				args := append([]string{"import", "hmdp", "--mysql", src.dsn, "--redis", src.redis, "--redis-key-prefix", src.prefix, "--batch", "200"}, killed.args...)
				cmd := exec.Command(feeddBinary(t), args...)
				cmd.Env = os.Environ()
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan struct{})
				go func() { cmd.Wait(); close(exited) }()
				midway := func() bool {
					return killed.count(t, "SELECT count(*) FROM import_progress WHERE phase = ? AND last_key > ? AND done = ?", phase, total/3, false) > 0
				}
				deadline := time.Now().Add(2 * time.Minute)
				for !midway() {
					select {
					case <-exited:
						t.Fatalf("the import ended before it could be killed in %s; slow it down:\n%s", phase, out.String())
					default:
					}
					if time.Now().After(deadline) {
						cmd.Process.Kill()
						t.Fatalf("%s did not start within 2 minutes:\n%s", phase, out.String())
					}
					time.Sleep(2 * time.Millisecond)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				n := killed.count(t, "SELECT count(*) FROM "+table)
				if n == 0 || n >= int(total) {
					t.Fatalf("killed with %d of %d %s imported: not midway", n, total, table)
				}
				t.Logf("killed with %d of %d %s imported", n, total, table)
			}
			killIn("tb_follow", "follows", data.Follows)
			killIn("tb_blog_comments", "comments", data.Comments)

			got, _, err := runImportCmd(t, src, killed, "--batch", "200")
			if err != nil {
				t.Fatal(err)
			}
			for phase, w := range want.phases {
				if g := got.phases[phase]; [4]int64(g[:4]) != [4]int64(w[:4]) && phase != "inboxes" {
					t.Errorf("%s: source, read, imported, skipped %v after the kill, %v without", phase, g[:4], w[:4])
				}
			}
			for _, q := range []string{
				"SELECT count(*) FROM users",
				"SELECT count(*) FROM posts",
				"SELECT count(*) FROM follows",
				"SELECT count(*) FROM likes",
				"SELECT CAST(sum(fans) AS BIGINT) FROM users",
				"SELECT CAST(sum(followee) AS BIGINT) FROM users",
				"SELECT CAST(sum(mode) AS BIGINT) FROM users",
				"SELECT CAST(sum(liked) AS BIGINT) FROM posts",
				"SELECT count(*) FROM comments",
				"SELECT CAST(sum(comments) AS BIGINT) FROM posts",
				"SELECT CAST(sum(replies) AS BIGINT) FROM comments",
				"SELECT CAST(sum(parent_id * 7 + answer_id * 3 + post_id + user_id + liked) AS BIGINT) FROM comments",
				"SELECT count(*) FROM follows WHERE pull = ?",
				"SELECT count(*) FROM inbox",
				"SELECT CAST(sum(post_id % 1000 * (user_id % 1000)) AS BIGINT) FROM inbox",
			} {
				args := []any{}
				if strings.Contains(q, "?") {
					args = append(args, true)
				}
				if g, w := killed.count(t, q, args...), clean.count(t, q, args...); g != w {
					t.Errorf("%s: %d after the kill, %d without", q, g, w)
				}
			}
			if n := killed.count(t, "SELECT count(*) FROM likes a JOIN likes b ON a.post_id = b.post_id AND a.id < b.id AND a.created_at > b.created_at"); n != 0 {
				t.Errorf("%d pairs of likes out of order (Likers reads them by id, earliest first)", n)
			}
			if n := killed.count(t, "SELECT count(*) FROM likes"); int64(n) != data.Likes {
				t.Errorf("%d likes imported, the source has %d", n, data.Likes)
			}
			if n := killed.count(t, "SELECT count(*) FROM comments"); int64(n) != data.Comments {
				t.Errorf("%d comments imported, the source has %d", n, data.Comments)
			}
			if n := killed.count(t, "SELECT count(*) FROM posts p WHERE comments <> (SELECT count(*) FROM comments c WHERE c.post_id = p.id)"); n != 0 {
				t.Errorf("%d posts whose comment count is not their comments'", n)
			}
		})
	}
}
