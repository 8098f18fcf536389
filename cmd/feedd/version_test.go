package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFormat(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/feedd/feedd", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-04T18:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	want := "feedd v1.2.3 (revision 0123456789abcdef0123456789abcdef01234567 of 2026-12-04T18:00:00Z, modified) go1.26.8"
	if got := version(bi, true); got != want {
		t.Errorf("version:\n got %s\nwant %s", got, want)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got := version(bi, true); got != "feedd (devel) (revision unknown) go1.26.8" {
		t.Errorf("no VCS information: %s", got)
	}
	if got := version(nil, false); !strings.Contains(got, "no build information") {
		t.Errorf("no build information: %s", got)
	}
}

// TestVersionCommand: `feedd version` and `feedd --version` print one line
// and start nothing; a real build names the revision of the tree it was
// built from.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, env(), &out, &errOut); err != nil {
			t.Fatalf("feedd %v: %v", args, err)
		}
		if s := out.String(); !strings.HasPrefix(s, "feedd ") || strings.Count(s, "\n") != 1 {
			t.Errorf("feedd %v printed %q", args, s)
		}
	}
	if err := run(t.Context(), []string{"version", "extra"}, env(), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("feedd version extra: no error")
	}

	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git rev-parse HEAD: %v; under CI=true the build's revision must be checked", err)
		}
		t.Skipf("no git checkout to compare with: %v", err)
	}
	head := strings.TrimSpace(string(rev))
	// -buildvcs=true: the toolchain records the revision even where GOFLAGS
	// turns it off. It reads it from a .git directory at the module's root;
	// in a linked checkout (.git a file) it records none, and feedd must say
	// so rather than print a wrong one.
	bin := filepath.Join(t.TempDir(), "feedd")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("feedd --version: %v\n%s", err, out)
	}
	want := "revision " + head
	if fi, err := os.Stat("../../.git"); err == nil && !fi.IsDir() && !strings.Contains(string(out), want) {
		want = "revision unknown"
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("feedd --version printed %q, want %q", out, want)
	}
}
