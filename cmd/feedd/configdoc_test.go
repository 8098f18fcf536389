package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The page that documents every flag; TestConfigurationDoc keeps it and
// the flag sets in step.
const configDoc = "docs/configuration.md"

// docRow is one flag row of docs/configuration.md:
// | `--name` | `FEED_NAME` | `default` | meaning |
type docRow struct {
	line     int
	env, def string
}

var (
	docFlagRow = regexp.MustCompile("^\\|\\s*`--([a-z0-9-]+)`\\s*\\|\\s*(.*?)\\s*\\|\\s*(.*?)\\s*\\|.*\\|\\s*$")
	docH2      = regexp.MustCompile(`^##\s+(.+?)\s*$`)
	usageEnv   = regexp.MustCompile(`\s*\(env (FEED_[A-Z0-9_]+)\)`)
)

// docFlags reads the flag rows of docs/configuration.md by the subcommand
// whose section ("## feedd NAME") holds them.
func docFlags(t *testing.T, text string) map[string]map[string][]docRow {
	t.Helper()
	bySub := map[string]map[string][]docRow{}
	sub := ""
	for i, line := range strings.Split(text, "\n") {
		if m := docH2.FindStringSubmatch(line); m != nil {
			sub = ""
			if name, ok := strings.CutPrefix(m[1], "feedd "); ok {
				sub = strings.Trim(name, "`")
				bySub[sub] = map[string][]docRow{}
			}
			continue
		}
		m := docFlagRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if sub == "" {
			t.Errorf("%s:%d: the row of --%s is outside every \"## feedd NAME\" section", configDoc, i+1, m[1])
			continue
		}
		bySub[sub][m[1]] = append(bySub[sub][m[1]], docRow{line: i + 1, env: strings.Trim(m[2], "`"), def: strings.Trim(m[3], "`")})
	}
	return bySub
}

// flagEnv is the FEED_* variable named in a flag's usage ("" for none).
func flagEnv(f *flag.Flag) string {
	if m := usageEnv.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	return ""
}

// wantRow is the row docs/configuration.md should have for f.
func wantRow(f *flag.Flag) string {
	code := func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	}
	return fmt.Sprintf("| `--%s` | %s | %s | %s |", f.Name, code(flagEnv(f)), code(f.DefValue), usageEnv.ReplaceAllString(f.Usage, ""))
}

// sameDefault reports whether a documented default is f's: the same text,
// or the same duration or number written another way (72h for 72h0m0s).
func sameDefault(f *flag.Flag, doc string) bool {
	if doc == f.DefValue {
		return true
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			d, err := time.ParseDuration(doc)
			def, derr := time.ParseDuration(f.DefValue)
			return err == nil && derr == nil && d == def
		case float64, int, int64, uint64:
			a, err := strconv.ParseFloat(doc, 64)
			b, berr := strconv.ParseFloat(f.DefValue, 64)
			return err == nil && berr == nil && a == b
		}
	}
	return false
}

// subcommandFlags builds the real flag set of each subcommand, with an
// empty environment, as `feedd SUB --help` shows it.
func subcommandFlags(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	noEnv := func(string) string { return "" }
	sets := map[string]*flag.FlagSet{}
	for _, sub := range []string{"serve", "worker", "migrate", "push-key"} {
		fs, err := newFlagSet(sub, &config{}, noEnv, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		sets[sub] = fs
	}
	fs, err := seedFlagSet(&config{cmd: "seed"}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sets["seed"] = fs
	fs, err = importFlagSet(&config{cmd: "import"}, &importFlags{}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sets["import"] = fs
	fs, _, err = newBenchFlagSet("fanout", &config{cmd: "serve"}, &benchFlags{}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sets["bench"] = fs
	return sets
}

// TestConfigurationDoc: docs/configuration.md documents every flag of
// every subcommand once, with its environment variable and its default.
// The section "## feedd serve" has every flag of feedd serve; the section
// of another subcommand has exactly the flags that are its own or whose
// default or variable differs from serve's.
func TestConfigurationDoc(t *testing.T) {
	doc := docFlags(t, readRepo(t, configDoc))
	sets := subcommandFlags(t)
	serve := sets["serve"]
	for sub, fs := range sets {
		rows, ok := doc[sub]
		if !ok {
			t.Errorf("%s has no section \"## feedd %s\"", configDoc, sub)
			continue
		}
		want := map[string]*flag.Flag{}
		fs.VisitAll(func(f *flag.Flag) {
			if sub != "serve" {
				if s := serve.Lookup(f.Name); s != nil && s.DefValue == f.DefValue && flagEnv(s) == flagEnv(f) {
					return // documented under feedd serve
				}
			}
			want[f.Name] = f
		})
		for name, f := range want {
			rs := rows[name]
			switch {
			case len(rs) == 0:
				t.Errorf("%s: feedd %s --%s is not documented; add this row to a table of the section \"## feedd %s\" (under the heading of its concern), and say what it means:\n%s",
					configDoc, sub, name, sub, wantRow(f))
			case len(rs) > 1:
				var lines []int
				for _, r := range rs {
					lines = append(lines, r.line)
				}
				t.Errorf("%s: feedd %s --%s is documented %d times (lines %v); keep one row", configDoc, sub, name, len(rs), lines)
			default:
				if r := rs[0]; r.env != flagEnv(f) || !sameDefault(f, r.def) {
					t.Errorf("%s:%d: feedd %s --%s: documented with variable %q and default %q; the flag has %q and %q:\n%s",
						configDoc, r.line, sub, name, r.env, r.def, flagEnv(f), f.DefValue, wantRow(f))
				}
			}
		}
		for name, rs := range rows {
			if want[name] != nil {
				continue
			}
			if fs.Lookup(name) == nil {
				t.Errorf("%s:%d: feedd %s has no flag --%s; remove the row", configDoc, rs[0].line, sub, name)
			} else {
				t.Errorf("%s:%d: feedd %s --%s is as in feedd serve; document it only there and remove this row", configDoc, rs[0].line, sub, name)
			}
		}
	}
	// Every subcommand of `feedd help` has its section.
	for line := range strings.Lines(usage) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "feedd" && f[1] != "help" {
			if name := strings.Trim(f[1], "[]"); doc[name] == nil {
				t.Errorf("%s has no section \"## feedd %s\" (feedd help lists it)", configDoc, name)
			}
		}
	}
}

// TestConfigurationDocCatches: the checks above fail on a missing flag, a
// flag documented twice and one documented with another default.
func TestConfigurationDocCatches(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Duration("wait", 72*time.Hour, "how long (env FEED_WAIT)")
	fs.Float64("w", 0.5, "weight")
	wait, w := fs.Lookup("wait"), fs.Lookup("w")
	if !sameDefault(wait, "72h") || sameDefault(wait, "71h") || !sameDefault(w, "0.50") || sameDefault(w, "1") {
		t.Error("sameDefault")
	}
	if got := wantRow(wait); got != "| `--wait` | `FEED_WAIT` | `72h0m0s` | how long |" {
		t.Errorf("wantRow: %s", got)
	}
	doc := docFlags(t, "## feedd serve\n| `--wait` | `FEED_WAIT` | `72h` | x |\n| `--wait` | | | y |\n## Other\n")
	if rs := doc["serve"]["wait"]; len(rs) != 2 || rs[0].env != "FEED_WAIT" || rs[0].def != "72h" || rs[1].def != "" {
		t.Errorf("docFlags: %+v", doc)
	}
}
