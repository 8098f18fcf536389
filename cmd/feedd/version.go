package main

import (
	"fmt"
	"runtime/debug"
)

// version is what `feedd version` prints: the module's version and the
// revision of the source it was built from, as the Go toolchain recorded
// them in the binary (runtime/debug.ReadBuildInfo). A binary built outside
// a version-controlled tree, or with -buildvcs=false, has no revision.
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "feedd (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	out := "feedd " + v
	if rev == "" {
		out += " (revision unknown"
	} else {
		out += " (revision " + rev
		if when != "" {
			out += " of " + when
		}
	}
	return fmt.Sprintf("%s%s) %s", out, modified, bi.GoVersion)
}
