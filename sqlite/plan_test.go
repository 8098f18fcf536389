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
