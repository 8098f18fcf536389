package main

import (
	"fmt"
	"runtime/debug"

	feed "github.com/feedd/feedd"
)

// release is the version of feedd this source is (feed.Release): a
// release at its commit, the next release's -dev version between releases.
const release = feed.Release

// version is what `feedd version` prints, one line: the release, the
// commit the binary was built from and whether that tree had changes not
// committed, the commit's time, the Go version, and the target. The commit
// comes from the build information the Go toolchain records in the binary
// (runtime/debug.ReadBuildInfo: vcs.revision, vcs.modified, vcs.time, also
// under -trimpath); a binary built outside a git checkout, or with
// -buildvcs=false, has none and says "commit unknown". A binary installed
// by module path (go install ...@vX.Y.Z) has no commit but its module
// version, printed instead.
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "feedd " + release + " (no build information)"
	}
	var rev, when, state, goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			state = "clean"
			if s.Value == "true" {
				state = "modified"
			}
		}
	}
	src := "commit unknown"
	switch {
	case rev != "":
		src = "commit " + rev
		if state != "" {
			src += ", " + state
		}
		if when != "" {
			src += ", " + when
		}
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		src = "module " + bi.Main.Version
	}
	out := fmt.Sprintf("feedd %s (%s) %s", release, src, bi.GoVersion)
	if goos != "" && goarch != "" {
		out += " " + goos + "/" + goarch
	}
	return out
}
