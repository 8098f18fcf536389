package sqlite_test

import (
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/feedd/feedd/sqlite"
)

// update rewrites the schema files of testdata/schema from a new database:
// go test ./sqlite -run TestSchema -update (CONTRIBUTING.md, "A migration").
var update = flag.Bool("update", false, "rewrite testdata/schema/*.sql from a new database")

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlSpace   = strings.NewReplacer("( ", "(", " )", ")", " ,", ",")
)

// normalSQL is a statement as sqlite_schema keeps it, without comments and
// with one space wherever the text had any: the same whether a table was
// created whole or grew by ALTER TABLE (which splices the column's text
// into the stored statement).
func normalSQL(s string) string {
	s = strings.Join(strings.Fields(sqlComment.ReplaceAllString(s, "")), " ")
	return sqlSpace.Replace(s)
}

// dumpSchema is a database's schema, one line per table, index, trigger
// and view, in a stable order, each its CREATE statement in normalSQL.
func dumpSchema(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT type, name, coalesce(sql, '') FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite_%' ORDER BY tbl_name, type = 'table' DESC, type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		b.WriteString(normalSQL(text) + ";\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkSchema compares got with the file testdata/schema/name, or rewrites
// the file under -update.
func checkSchema(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "schema", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./sqlite -run TestSchema -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the schema of a new %s differs from %s:\n%s\n(a new migration: go test ./sqlite -run TestSchema -update, and review the diff)",
			strings.TrimSuffix(name, ".sql"), path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSchema: the schemas of a new feedd.db and inbox.db, as the
// migrations make them, are the ones written in testdata/schema. A
// migration shows there as the tables it changes; folding migrations into
// the baseline (CONTRIBUTING.md) must leave the files as they are.
func TestSchema(t *testing.T) {
	main, ib := openPair(t, t.TempDir())
	checkSchema(t, "feedd.db.sql", dumpSchema(t, main.Read))
	checkSchema(t, "inbox.db.sql", dumpSchema(t, ib.Read))
}

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
