package main

// Tests that keep the documentation true to the code: links and the
// sections they name exist, every route is documented, the package map
// names every package, code comments cite sections that exist, and no
// tracked file speaks of how the work was done rather than of the product.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the module's root, seen from cmd/feedd.
const repoRoot = "../.."

// readRepo reads a file of the repository by its path from the root.
func readRepo(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownDocs are the repository's Markdown documents: the top-level ones
// and everything under docs/.
func markdownDocs(t testing.TB) []string {
	t.Helper()
	var docs []string
	for _, pattern := range []string{"*.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, _ := filepath.Rel(repoRoot, p)
			docs = append(docs, filepath.ToSlash(rel))
		}
	}
	if len(docs) < 3 {
		t.Fatalf("found only %v", docs)
	}
	return docs
}

var (
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)
	fenceLine   = regexp.MustCompile("^\\s*(```|~~~)")
)

// headings returns the anchors of a Markdown document's headings, as
// GitHub makes them (a repeated heading gets -1, -2, ...), code blocks
// left out.
func headings(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\r\n")
		if fenceLine.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := anchor(m[2])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// anchor is GitHub's anchor of a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"The native API (`/v1`)":          "the-native-api-v1",
		"Login codes, limits and secrets": "login-codes-limits-and-secrets",
		"Freshness (workers apart)":       "freshness-workers-apart",
		"Small writes (group commit)":     "small-writes-group-commit",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
	h := headings("# A\n```\n# B\n```\n## A\n")
	if !h["a"] || !h["a-1"] || h["b"] {
		t.Errorf("headings: %v", h)
	}
}

// mdLink is an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks: every relative link in the Markdown documents names a file
// that exists and, with a #fragment, a heading of that file.
func TestDocLinks(t *testing.T) {
	for _, doc := range markdownDocs(t) {
		text := readRepo(t, doc)
		inFence := false
		for i, line := range strings.Split(text, "\n") {
			if fenceLine.MatchString(line) {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
				}
				fi, err := os.Stat(filepath.Join(repoRoot, path))
				if err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", doc, i+1, target, path)
					continue
				}
				if frag == "" {
					continue
				}
				if fi.IsDir() || !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: link %q: a #fragment of %s, which is not a Markdown document", doc, i+1, target, path)
					continue
				}
				if !headings(readRepo(t, path))[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", doc, i+1, target, path, frag)
				}
			}
		}
	}
}

// citation is a reference to a section of a document by its heading, as
// comments and documents write them: BENCHMARKS.md "Fan-out",
// docs/operations.md, "Backups", docs/architecture.md "Overload and
// shedding".
var citation = regexp.MustCompile(`\b(BENCHMARKS\.md|README(?:\.md)?|CHANGELOG\.md|CONTRIBUTING\.md|SECURITY\.md|docs/[\w-]+\.md),?\s+\(?"([^"]+)"`)

// TestDocCitations: every section that a Go file or a document cites by
// its heading exists in the document cited.
func TestDocCitations(t *testing.T) {
	var files []string
	for _, f := range trackedFiles(t) {
		if strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".md") || strings.HasSuffix(f, ".json") {
			files = append(files, f)
		}
	}
	comment := regexp.MustCompile(`\n\s*//\s*`)
	checked := 0
	for _, f := range files {
		text := readRepo(t, f)
		if strings.HasSuffix(f, ".go") {
			text = comment.ReplaceAllString(text, " ") // a citation may wrap from one comment line to the next
		}
		text = strings.Join(strings.Fields(text), " ")
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			doc := m[1]
			if doc == "README" {
				doc = "README.md"
			}
			if _, err := os.Stat(filepath.Join(repoRoot, doc)); err != nil {
				t.Errorf("%s cites %s %q, but %s does not exist", f, m[1], m[2], doc)
				continue
			}
			checked++
			if !headings(readRepo(t, doc))[anchor(m[2])] {
				t.Errorf("%s cites %s %q, a section %s does not have: cite one of its headings", f, m[1], m[2], doc)
			}
		}
	}
	if checked < 5 {
		t.Errorf("only %d citations found: is the pattern still right?", checked)
	}
}

// routePattern is a ServeMux pattern with a method in a string literal.
var routePattern = regexp.MustCompile(`"((?:GET|POST|PUT|PATCH|DELETE|HEAD) /[^"]*)"`)

// TestRoutesDocumented: every route of the public API (http/routes.go) is
// in docs/API.md or the OpenAPI document, and every route of the admin
// listener in docs/operations.md.
func TestRoutesDocumented(t *testing.T) {
	var openapi struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(readRepo(t, "http/openapi.json")), &openapi); err != nil {
		t.Fatal(err)
	}
	api := readRepo(t, "docs/API.md")
	routes := routePattern.FindAllStringSubmatch(readRepo(t, "http/routes.go"), -1)
	if len(routes) < 40 {
		t.Fatalf("found only %d routes in http/routes.go: is the pattern still right?", len(routes))
	}
	for _, m := range routes {
		method, path, _ := strings.Cut(m[1], " ")
		path = strings.TrimSuffix(path, "{$}")
		if op := openapi.Paths[path]; op != nil && op[strings.ToLower(method)] != nil {
			continue
		}
		if strings.Contains(api, "`"+method+" "+path+"`") || strings.Contains(api, "`"+method+" "+path+"?") {
			continue
		}
		t.Errorf("route %s %s (http/routes.go) is in neither docs/API.md (as `%s %s`) nor http/openapi.json", method, path, method, path)
	}

	ops := readRepo(t, "docs/operations.md")
	var admin [][]string
	for _, f := range []string{"http/admin.go", "http/admin_reports.go"} {
		admin = append(admin, routePattern.FindAllStringSubmatch(readRepo(t, f), -1)...)
	}
	if len(admin) < 4 {
		t.Fatalf("found only %d admin routes: is the pattern still right?", len(admin))
	}
	for _, m := range admin {
		if !strings.Contains(ops, "`"+m[1]+"`") {
			t.Errorf("admin route %s is not in docs/operations.md (as `%s`), \"The admin listener\"", m[1], m[1])
		}
	}
}

// TestPackageMap: docs/architecture.md's package map names every package
// directory of the module, so that a reader finds where a thing lives.
func TestPackageMap(t *testing.T) {
	arch := readRepo(t, "docs/architecture.md")
	dirs := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "data") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(p))
			if rel != "." {
				dirs[filepath.ToSlash(rel)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 8 {
		t.Fatalf("found only %v", dirs)
	}
	for dir := range dirs {
		if !strings.Contains(arch, "`"+dir+"/`") {
			t.Errorf("package %s/ is not in docs/architecture.md's package map: add a row | `%s/` | what it holds |", dir, dir)
		}
	}
}

// trackedFiles lists the repository's files under version control (every
// file, when git cannot say), as paths from the root.
func trackedFiles(t testing.TB) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = repoRoot
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(filepath.Join(repoRoot, f)); err == nil { // deleted, not yet committed
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (d.Name() == ".git" || d.Name() == "data") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(repoRoot, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files
}

// workWords are ways of speaking of how the work was done instead of the
// product: sessions of work, who did what, branches, issue numbers, dates
// and times of work. Written with \s+ so that this file does not match
// itself.
var workWords = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bsession\s+of\s+20\d\d`),
	regexp.MustCompile(`(?i)\bthis\s+session\b`),
	regexp.MustCompile(`(?i)\bthe\s+lead\b`),
	regexp.MustCompile(`(?i)\b(other|several|parallel|two|three|four|five|six|seven|eight)\s+helpers\b`),
	regexp.MustCompile(`(?i)\bhelper\s+(session|branch|worktree)s?\b`),
	regexp.MustCompile(`(?i)\bworktrees?\b`),
	regexp.MustCompile(`\bh-(rank|packed|wire|fan|mem|reads|docs|notify|sec|prod)\w*`),
	regexp.MustCompile(`(?i)\bbranch\s+(h-[\w-]+|main|docs)\b`),
	regexp.MustCompile(`(?i)\bon\s+(the|this|its|their|a|my|our)\s+branch\b`),
	regexp.MustCompile(`\bmain\s+at\s+[0-9a-f]{7,40}\b`),
	regexp.MustCompile(`(?i)\bissue\s+#?\d+\b`),
	regexp.MustCompile(`(?i)\bissues\s+#?\d+\s*(and|,|&)\s*#?\d+`),
	regexp.MustCompile(`(?i)\bissues\s+#\d+`),
	regexp.MustCompile(`(?i)\b(PR|pull\s+request)\s+#?\d+\b`),
	regexp.MustCompile(`(?i)\b(fix(es|ed)?|close[sd]?|resolve[sd]?|see)\s+#\d+\b`),
	regexp.MustCompile(`\b[0-2]\d:[0-5]\d(\s*-\s*[0-2]\d:[0-5]\d)?\s+UTC\b`),
}

// mayHaveWorkWord reports whether line (in lower case) holds a word every
// match of workWords holds: a line without one is not run through them
// (under -race, the regexps over every line take tens of seconds).
func mayHaveWorkWord(lower string) bool {
	for _, w := range []string{"session", "lead", "helper", "worktree", "h-", "branch", "main", "issue", "pr", "pull", "#", "utc"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// mayHaveDate reports whether line holds "20dd-", which every match of
// workDate starts with.
func mayHaveDate(line string) bool {
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; i+4 < len(line); i++ {
		if line[i] == '2' && line[i+1] == '0' && digit(line[i+2]) && digit(line[i+3]) && line[i+4] == '-' {
			return true
		}
	}
	return false
}

// workDate is a calendar date not followed by a time (2026-01-01T00:00Z is
// an example value, not a date of work).
var workDate = regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b([^T0-9]|$)`)

// TestNoWorkDiary: tracked files speak of the product only. A match names
// the file, the line and the words; say what the code or the figure is
// instead (history belongs in commit messages).
func TestNoWorkDiary(t *testing.T) {
	self := "cmd/feedd/docs_test.go"
	n := 0
	for _, f := range trackedFiles(t) {
		if f == self || f == "go.sum" || strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue // unreadable or binary
		}
		n++
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			if mayHaveWorkWord(strings.ToLower(text)) {
				for _, re := range workWords {
					if m := re.FindString(text); m != "" {
						t.Errorf("%s:%d: %q speaks of the work, not the product", f, line, m)
					}
				}
			}
			if f == "CHANGELOG.md" || !mayHaveDate(text) {
				continue // releases carry their dates
			}
			for _, m := range workDate.FindAllStringSubmatch(text, -1) {
				if d := strings.TrimRight(m[0], m[1]); d != "2006-01-02" { // Go's reference time in layouts
					t.Errorf("%s:%d: the date %s: a date of work belongs in the commit message", f, line, d)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("checked only %d files", n)
	}
}

func TestWorkWordsMatch(t *testing.T) {
	for _, s := range []string{
		"## Session" + " of 2026-12-03", "measured in this" + " session", "the le" + "ad merged",
		"branch h-" + "rank", "main at" + " 29c355d", "issue" + " 11", "Issues 13" + " and 14", "see #" + "29",
		"(22:12-22:26" + " UTC)", "the two" + " helpers", "PR" + " 12", "pull request" + " #3",
		"on the" + " branch", "git worktree" + "s", "h-" + "docs",
	} {
		if !slices.ContainsFunc(workWords, func(re *regexp.Regexp) bool { return re.MatchString(s) }) {
			t.Errorf("%q is not caught", s)
		}
		if !mayHaveWorkWord(strings.ToLower(s)) {
			t.Errorf("%q is passed over before the patterns", s)
		}
	}
	for _, s := range []string{
		"the session token", "a helper function", "the helpers every packed script shares", "post #17",
		"feedd issues 192 bits", "branch of the switch", "expires_at 2026-01-01T12:02:00Z",
	} {
		for _, re := range workWords {
			if re.MatchString(s) {
				t.Errorf("%q is taken for a word of work by %s", s, re)
			}
		}
	}
	if !workDate.MatchString("measured on 2026-12-02.") || !mayHaveDate("measured on 2026-12-02.") || workDate.MatchString("2026-01-01T00:00:00Z") {
		t.Error("workDate")
	}
}
