package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/sqlite"
)

// openPair opens (migrating) feedd.db and inbox.db in dir, closed when t
// ends.
func openPair(t *testing.T, dir string) (*sqlite.DB, *sqlite.DB) {
	t.Helper()
	main, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { main.Close() })
	ib, err := sqlite.OpenInbox(t.Context(), dir, sqlite.Options{}, main)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ib.Close() })
	return main, ib
}

// schema lists a database's tables, indexes and triggers with their SQL.
func schema(t *testing.T, db *sqlite.DB) []string {
	t.Helper()
	rows, err := db.Read.Query(`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// upgraded opens, with this code, a data directory as a feedd with
// migrations 001-008 left it: inbox heads and rank profiles filled, and
// their triggers, which call feedd's SQL functions. (008 without its last
// statement, which fills the profiles with those functions: the test
// fills them.)
func upgraded(t *testing.T) (dir string, main, ib *sqlite.DB) {
	t.Helper()
	dir = t.TempDir()
	rp, err := os.ReadFile("migrations/008_rank_profile.sql")
	if err != nil {
		t.Fatal(err)
	}
	triggers, _, ok := strings.Cut(string(rp), "-- The profiles of the users who have liked or followed.")
	if !ok {
		t.Fatal("008_rank_profile.sql: no backfill statement to leave out")
	}
	posts := `INSERT INTO posts (user_id, title, content, liked, created_at, updated_at) VALUES `
	var inbox []string
	for i := range 40 {
		at := 1_800_000_000_000 + i*60_000
		posts += fmt.Sprintf("(%d, 't', 'c', %d, %d, %d),", 2+i%2, min(i%3, 1)^1, at, at)
		inbox = append(inbox, fmt.Sprintf("(1, %d, %d), (4, %d, %d)", at, i+1, at, i+1))
	}
	files, _ := filepath.Glob("migrations/00[1-7]_*.sql")
	dbOf(t, filepath.Join(dir, "feedd.db"), files,
		`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000000', 'a', 1), ('13800000001', 'b', 1), ('13800000002', 'c', 1), ('13800000003', 'd', 1)`,
		strings.TrimSuffix(posts, ","),
		`INSERT INTO likes (post_id, user_id, created_at, author_id) SELECT id, 1, created_at + 1, user_id FROM posts WHERE liked = 1`,
		`INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 2, 5), (1, 3, 5), (2, 3, 5), (4, 1, 5)`,
		triggers, `INSERT INTO feedd_migrations (name) VALUES ('migrations/008_rank_profile.sql')`,
		`INSERT INTO rank_profile (user_id, likes, follows) VALUES (1, X'01', X'01'), (2, NULL, X'01'), (4, NULL, X'01')`)
	dbOf(t, filepath.Join(dir, "inbox.db"), []string{"inbox_migrations/001_inbox.sql", "migrations/007_inbox_head.sql"},
		`INSERT INTO inbox (user_id, score, post_id) VALUES `+strings.Join(inbox, ", "),
		`INSERT INTO inbox_trim (user_id, room, head_score, head_post) VALUES (1, 960, 1800000000000, 1), (4, 960, NULL, 1)`,
		`INSERT INTO inbox_head (user_id, head) VALUES (1, X'01'), (4, X'01')`)
	main, ib = openPair(t, dir)
	return dir, main, ib
}

// A database of the release before migration 009 upgrades at start: the
// inbox heads and rank profiles, their triggers and inbox_trim's head
// columns are gone, both files' schemas are those of a new database, and
// the data is all there and reads as before.
func TestMigrateDropsPackedCopies(t *testing.T) {
	ctx := t.Context()
	_, main, ib := upgraded(t)
	freshMain, freshInbox := openPair(t, t.TempDir())
	for _, c := range []struct {
		name     string
		got, new *sqlite.DB
	}{{"feedd.db", main, freshMain}, {"inbox.db", ib, freshInbox}} {
		got, want := schema(t, c.got), schema(t, c.new)
		if !slices.Equal(got, want) {
			t.Errorf("%s upgraded, schema:\n%s\nwant (a new database's):\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, s := range got {
			if strings.Contains(s, "inbox_head") || strings.Contains(s, "rank_profile") || strings.Contains(s, "feedd_head") {
				t.Errorf("%s upgraded still has %s", c.name, s)
			}
		}
	}
	var likes, follows int
	if err := main.Read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM likes), (SELECT count(*) FROM follows)`).Scan(&likes, &follows); err != nil {
		t.Fatal(err)
	}
	if likes != 14 || follows != 4 {
		t.Fatalf("after the upgrade: %d likes, %d follows; want 14, 4", likes, follows)
	}
	page, err := (&sqlite.Inbox{DB: ib}).Page(ctx, 1, feed.Top(), 0, 150)
	if err != nil || len(page) != 40 {
		t.Fatalf("inbox page of user 1 after the upgrade: %d entries, %v; want 40", len(page), err)
	}
	now := time.UnixMilli(1_800_000_000_000).Add(time.Hour)
	aff, err := main.Affinity(ctx, 1, []int64{2, 3}, now.Add(-24*time.Hour), now, time.Hour)
	if err != nil || aff[2].Likes <= 0 || aff[3].Likes <= 0 || aff[2].FollowedAt.IsZero() {
		t.Fatalf("Affinity of user 1 after the upgrade = %v, %v", aff, err)
	}
}

// The stock sqlite3 shell writes every table a like, a follow or an inbox
// touches, in a new database and in an upgraded one (no trigger calls a
// function only feedd registers), and feedd reads what it wrote.
func TestSQLite3ShellWrites(t *testing.T) {
	shell := testenv.SQLite3(t)
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		main, _ := openPair(t, dir)
		for _, q := range []string{
			`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000000', 'a', 1), ('13800000001', 'b', 1)`,
			`INSERT INTO posts (user_id, title, content, created_at, updated_at) VALUES (2, 't', 'c', 5, 5)`,
		} {
			if _, err := main.Write.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for name, setUp := range map[string]func(t *testing.T) string{
		"new":      fresh,
		"upgraded": func(t *testing.T) string { dir, _, _ := upgraded(t); return dir },
	} {
		t.Run(name, func(t *testing.T) {
			dir := setUp(t)
			run := func(file, script string) {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), shell, "-bail", filepath.Join(dir, file))
				cmd.Stdin = strings.NewReader(script)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("sqlite3 %s: %v\n%s\nscript:\n%s", file, err, out, script)
				}
			}
			// Written while feedd has the files open: WAL, busy_timeout.
			run("feedd.db", `PRAGMA busy_timeout = 10000;
				DELETE FROM likes WHERE user_id = 1;
				INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 1, 7, 2);
				INSERT INTO likes (post_id, user_id, created_at, author_id) VALUES (1, 2, 8, 2);
				DELETE FROM likes WHERE user_id = 2;
				UPDATE likes SET created_at = 9 WHERE user_id = 1;
				DELETE FROM follows WHERE follower_id = 1;
				INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 2, 6), (2, 1, 6);
				DELETE FROM follows WHERE follower_id = 2;
				UPDATE follows SET created_at = 10 WHERE follower_id = 1;`)
			run("inbox.db", `PRAGMA busy_timeout = 10000;
				INSERT INTO inbox (user_id, score, post_id) VALUES (1, 5, 1), (2, 5, 1);
				DELETE FROM inbox WHERE user_id = 2;
				INSERT INTO inbox_trim (user_id, room) VALUES (1, 100) ON CONFLICT (user_id) DO UPDATE SET room = room - 1;
				UPDATE inbox_trim SET room = 32 WHERE user_id = 1;
				DELETE FROM inbox_trim WHERE user_id = 2;`)
			main, ib := openPair(t, dir)
			now := time.UnixMilli(20)
			aff, err := main.Affinity(t.Context(), 1, []int64{2}, time.UnixMilli(0), now, time.Hour)
			if err != nil || aff[2].Likes <= 0 || !aff[2].FollowedAt.Equal(time.UnixMilli(10)) {
				t.Fatalf("Affinity after the shell's writes = %v, %v; want user 2's like and follow (at 10 ms)", aff, err)
			}
			page, err := (&sqlite.Inbox{DB: ib}).Page(t.Context(), 1, feed.AtMost(5), 0, 10)
			if err != nil || !slices.Contains(page, feed.Entry{PostID: 1, Score: 5}) {
				t.Fatalf("inbox page after the shell's writes = %v, %v; want post 1 at 5", page, err)
			}
		})
	}
}

// A feedd.db with notifications, made before 012_notify_group_ids.sql,
// keeps its groups and actors through the upgrade (the foreign key of the
// actors follows the new table: deleting a group deletes its actors), and
// the id of the group with the highest id, once removed, is not given to
// the next group.
func TestMigrateNotifyGroupIDs(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	all, err := filepath.Glob("migrations/0*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if f < "migrations/012" && f != "migrations/008_rank_profile.sql" {
			files = append(files, f)
		}
	}
	dbOf(t, filepath.Join(dir, "feedd.db"), files,
		`INSERT INTO feedd_migrations (name) VALUES ('migrations/008_rank_profile.sql')`,
		`INSERT INTO users (phone, nick_name, created_at) VALUES ('13800000000', 'a', 1), ('13800000001', 'b', 1), ('13800000002', 'c', 1)`,
		`INSERT INTO notify_groups (id, user_id, kind, target_id, first_at, latest_at, count) VALUES
			(1, 1, 'follow', 0, 10, 20, 2), (2, 2, 'follow', 0, 10, 30, 1), (3, 3, 'follow', 0, 10, 40, 1)`,
		`INSERT INTO notify_actors (group_id, actor_id, at) VALUES (1, 2, 10), (1, 3, 20), (2, 1, 30), (3, 1, 40)`)
	main, _ := openPair(t, dir)
	var groups, actors int
	if err := main.Read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM notify_groups), (SELECT count(*) FROM notify_actors)`).Scan(&groups, &actors); err != nil {
		t.Fatal(err)
	}
	if groups != 3 || actors != 4 {
		t.Fatalf("after the upgrade: %d groups, %d actors; want 3, 4", groups, actors)
	}
	now := time.UnixMilli(50)
	g, err := main.NotifyGroup(ctx, 1, 1, now)
	if err != nil || g.Count != 2 || !slices.Equal(g.ActorIDs, []int64{3, 2}) {
		t.Fatalf("group 1 after the upgrade = %+v, %v; want 2 actors, [3 2]", g, err)
	}
	if _, err := main.Write.ExecContext(ctx, `DELETE FROM notify_groups WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	if err := main.Read.QueryRowContext(ctx, `SELECT count(*) FROM notify_actors`).Scan(&actors); err != nil || actors != 3 {
		t.Fatalf("actors after deleting a group: %d, %v; want 3 (its row deleted with it)", actors, err)
	}
	main.Notify = feed.NotifySettings{}
	main.Enqueue = func(context.Context, *sql.Tx, ...feed.Job) error { return nil }
	if err := main.SetFollow(ctx, 2, 3, true, now); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := main.Read.QueryRowContext(ctx, `SELECT max(id) FROM notify_groups`).Scan(&id); err != nil || id != 4 {
		t.Fatalf("the next group's id = %d, %v; want 4 (3 was removed, never given again)", id, err)
	}
}
