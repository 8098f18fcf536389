package hmdp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Text is the report as feedd import prints it: one line per phase with
// the rows in the source, read, imported, skipped and cleaned (over every
// run of the import, the rate over this one), then the reasons.
func (r *Report) Text() string {
	var b strings.Builder
	what := "imported"
	if r.DryRun {
		what = "would be imported (dry run: nothing written)"
	}
	fmt.Fprintf(&b, "feedd import hmdp: %s in %.1f s\n", what, r.Elapsed.Seconds())
	fmt.Fprintf(&b, "%-16s %10s %10s %10s %9s %9s %12s\n", "phase", "source", "read", "imported", "skipped", "cleaned", "rows/s")
	for _, p := range r.Phases {
		src := "-"
		if p.Source >= 0 {
			src = fmt.Sprint(p.Source)
		}
		var cleaned int64
		for _, n := range p.Counts.Cleaned {
			cleaned += n
		}
		rps := "-"
		if p.RunRead > 0 {
			rps = fmt.Sprintf("%.0f", p.RowsPerSecond())
		}
		fmt.Fprintf(&b, "%-16s %10s %10d %10d %9d %9d %12s\n", p.Name, src, p.Counts.Read, p.Counts.Imported, p.Counts.SkippedTotal(), cleaned, rps)
	}
	reasons := func(title string, by func(PhaseReport) map[string]int64) {
		var lines []string
		for _, p := range r.Phases {
			m := by(p)
			if len(m) == 0 {
				continue
			}
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(m)) {
				parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
			}
			lines = append(lines, fmt.Sprintf("  %s: %s\n", p.Name, strings.Join(parts, ", ")))
		}
		if len(lines) > 0 {
			b.WriteString(title + ":\n" + strings.Join(lines, ""))
		}
	}
	reasons("skipped", func(p PhaseReport) map[string]int64 { return p.Counts.Skipped })
	reasons("cleaned", func(p PhaseReport) map[string]int64 { return p.Counts.Cleaned })
	if p := r.Phase(PhaseInboxes); p != nil {
		fmt.Fprintf(&b, "inboxes: read counts users, imported counts entries (built from the follows)\n")
	}
	if p := r.Phase(PhaseLikesAgain); p != nil {
		fmt.Fprintf(&b, "likes-resync: every post's likes read again; those already here are neither imported nor skipped\n")
	}
	if p := r.Phase(PhaseImages); p != nil {
		fmt.Fprintf(&b, "images: read counts notes, imported and skipped count their pictures\n")
	}
	if p := r.Phase(PhaseFeeds); p != nil {
		fmt.Fprintf(&b, "feed: read and imported count entries of the tutorial's feed:{userId}\n")
	}
	if r.Pull > 0 {
		fmt.Fprintf(&b, "pull mode: %d users with at least --pull-threshold followers\n", r.Pull)
	}
	if r.LikersUnknown {
		b.WriteString("likes: no --redis, so who liked what is unknown; posts keep the like counts of tb_blog.liked\n")
	}
	return b.String()
}
