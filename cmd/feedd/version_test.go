package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestVersionFormat(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/feedd/feedd", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "GOARCH", Value: "arm64"},
			{Key: "GOOS", Value: "linux"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-04T18:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, c := range []struct {
		settings []debug.BuildSetting
		module   string
		want     string
	}{
		{bi.Settings, "(devel)", "feedd " + release + " (commit 0123456789abcdef0123456789abcdef01234567, modified, 2026-12-04T18:00:00Z) go1.26.8 linux/arm64"},
		{append(bi.Settings[:4:4], debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "(devel)",
			"feedd " + release + " (commit 0123456789abcdef0123456789abcdef01234567, clean, 2026-12-04T18:00:00Z) go1.26.8 linux/arm64"},
		{nil, "(devel)", "feedd " + release + " (commit unknown) go1.26.8"},
		{nil, "v0.1.0", "feedd " + release + " (module v0.1.0) go1.26.8"},
	} {
		bi.Settings, bi.Main.Version = c.settings, c.module
		if got := version(bi, true); got != c.want {
			t.Errorf("version:\n got %s\nwant %s", got, c.want)
		}
	}
	if got := version(nil, false); !strings.Contains(got, "no build information") || !strings.Contains(got, release) {
		t.Errorf("no build information: %s", got)
	}
}

// TestVersionInChangelog: the version the source says agrees with
// CHANGELOG.md (CONTRIBUTING.md, "Cutting a release"). At a release's
// commit (0.2.0) the newest section is that release's, dated; between
// releases (0.3.0-dev) the newest is [Unreleased], and the newest release
// below it comes before the one the source leads to.
func TestVersionInChangelog(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## [") {
			sections = append(sections, line)
		}
	}
	next, dev := strings.CutSuffix(release, "-dev")
	if _, ok := semver(next); !ok {
		t.Fatalf("the source says %q: want MAJOR.MINOR.PATCH, or that and -dev between releases", release)
	}
	dated := regexp.MustCompile(`^## \[([0-9.]+)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	if !dev {
		if len(sections) > 0 && sections[0] == "## [Unreleased]" {
			sections = sections[1:]
		}
		if len(sections) == 0 || !dated.MatchString(sections[0]) || dated.FindStringSubmatch(sections[0])[1] != release {
			t.Errorf("CHANGELOG.md's newest release is %q; the source says %s: want \"## [%s] - YYYY-MM-DD\"", sections, release, release)
		}
		return
	}
	if len(sections) == 0 || sections[0] != "## [Unreleased]" {
		t.Fatalf("the source says %s, but CHANGELOG.md's newest section is %q: want \"## [Unreleased]\"", release, sections)
	}
	if len(sections) > 1 {
		m := dated.FindStringSubmatch(sections[1])
		if m == nil {
			t.Fatalf("CHANGELOG.md's newest release is %q: want \"## [MAJOR.MINOR.PATCH] - YYYY-MM-DD\"", sections[1])
		}
		if !semverLess(m[1], next) {
			t.Errorf("the source says %s, but CHANGELOG.md already has %s: move the source on to the next release's -dev", release, m[1])
		}
	}
}

// semver parses MAJOR.MINOR.PATCH.
func semver(v string) ([3]int, bool) {
	var n [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return n, false
	}
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || strconv.Itoa(x) != p {
			return n, false
		}
		n[i] = x
	}
	return n, true
}

func semverLess(a, b string) bool {
	x, _ := semver(a)
	y, _ := semver(b)
	return slices.Compare(x[:], y[:]) < 0
}

// TestVersionCommand: `feedd version` and `feedd --version` print one line
// and start nothing; a build, -trimpath as scripts/release.sh makes it,
// names the release, the commit of the tree it was built from, and the Go
// version.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, env(), &out, &errOut); err != nil {
			t.Fatalf("feedd %v: %v", args, err)
		}
		if s := out.String(); !strings.HasPrefix(s, "feedd "+release+" (") || strings.Count(s, "\n") != 1 {
			t.Errorf("feedd %v printed %q", args, s)
		}
	}
	if err := run(t.Context(), []string{"version", "extra"}, env(), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("feedd version extra: no error")
	}

	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git rev-parse HEAD: %v; under CI=true the build's commit must be checked", err)
		}
		t.Skipf("no git checkout to compare with: %v", err)
	}
	head := strings.TrimSpace(string(rev))
	// feeddBinary builds with -buildvcs=true: the toolchain records the commit even where GOFLAGS
	// turns it off. It reads it from a .git directory at the module's root;
	// in a linked checkout (.git a file) it records none, and feedd must say
	// so rather than print a wrong one.
	out, err := exec.Command(feeddBinary(t), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("feedd version: %v\n%s", err, out)
	}
	want := "feedd " + release + " (commit " + head + ", "
	if fi, err := os.Stat("../../.git"); err == nil && !fi.IsDir() && !strings.Contains(string(out), want) {
		want = "feedd " + release + " (commit unknown)"
	}
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), ") "+runtime.Version()+" ") {
		t.Errorf("feedd version printed %q, want %q and %s", out, want, runtime.Version())
	}
}
