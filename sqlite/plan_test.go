package sqlite

import (
	"strings"
	"testing"
)

// queryPlan returns the EXPLAIN QUERY PLAN lines of query.
func queryPlan(t *testing.T, db *DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Outbox.Entries reads each author's newest posts from posts_user, a
// bounded range scan per author, and never scans the posts table.
func TestOutboxPlan(t *testing.T) {
	db, err := Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan := queryPlan(t, db, outboxQuery, "[1,2,3]", 1_700_000_000_000, 20, 0)
	joined := strings.Join(plan, "\n")
	ok := strings.Contains(joined, "SEARCH posts USING COVERING INDEX posts_user (user_id=? AND created_at<?)") &&
		strings.Contains(joined, "CORRELATED LIST SUBQUERY") &&
		strings.Contains(joined, "SEARCH p USING INTEGER PRIMARY KEY (rowid=?)")
	for _, line := range plan {
		if strings.HasPrefix(line, "SCAN p") { // SCAN posts, SCAN p: a full scan
			ok = false
		}
	}
	if !ok {
		t.Fatalf("Outbox.Entries plan:\n%s", joined)
	}
}

// The cap's trim finds each user's cut with one backward walk of the
// inbox's primary key, reaches the entries to drop with a key range, and
// deletes them by key: no scan of the inbox table. Counting a batch reads
// no table but its list of users (an upsert per user), and the inboxes due
// for a trim are read from the partial index that holds only them.
func TestTrimPlan(t *testing.T) {
	db, err := Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan := strings.Join(queryPlan(t, db, trimQuery, "[1,2,3]", 50), "\n")
	for _, want := range []string{
		"SEARCH inbox USING PRIMARY KEY (user_id=? AND score=? AND post_id=?)",
		"MATERIALIZE cut",
		"CORRELATED SCALAR SUBQUERY",
		"SEARCH inbox USING PRIMARY KEY (user_id=?)",
		"SEARCH i USING PRIMARY KEY (user_id=? AND (score,post_id)<(?,?))",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("trim plan has no %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "SCAN inbox") || strings.Contains(plan, "SCAN i\n") || strings.HasSuffix(plan, "SCAN i") || strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
		t.Errorf("trim plan scans the inbox or sorts:\n%s", plan)
	}
	plan = strings.Join(queryPlan(t, db, countDownQuery, "[1,2,3]", 1000, 1, 5, 5), "\n")
	if plan != "SCAN json_each VIRTUAL TABLE INDEX 1:" {
		t.Errorf("plan of a count:\n%s", plan)
	}
	plan = strings.Join(queryPlan(t, db, dueQuery), "\n")
	if !strings.HasPrefix(plan, "SCAN inbox_trim USING ") || !strings.HasSuffix(plan, "INDEX inbox_trim_due") {
		t.Errorf("plan of the due inboxes:\n%s", plan)
	}
}
