package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// alertsFile is the Prometheus rules file that docs/operations.md quotes.
const alertsFile = "../../docs/alerts.yml"

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// readRules parses docs/alerts.yml strictly (an unknown or misspelt field
// is an error, as for promtool) and checks each rule's shape.
func readRules(t *testing.T) []rule {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var all []rule
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules are required", g.Name)
		}
		for _, r := range g.Rules {
			switch {
			case !regexp.MustCompile(`^[A-Z][A-Za-z0-9]+$`).MatchString(r.Alert):
				t.Errorf("alert name %q", r.Alert)
			case seen[r.Alert]:
				t.Errorf("alert %s defined twice", r.Alert)
			case strings.TrimSpace(r.Expr) == "":
				t.Errorf("%s: no expr", r.Alert)
			case r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical":
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			case r.Annotations["summary"] == "" || r.Annotations["description"] == "":
				t.Errorf("%s: summary and description are required", r.Alert)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if !balanced(r.Expr) {
				t.Errorf("%s: unbalanced brackets in %q", r.Alert, r.Expr)
			}
			for _, m := range regexp.MustCompile(`\[([^\]]*)\]`).FindAllStringSubmatch(r.Expr, -1) {
				if _, err := model.ParseDuration(m[1]); err != nil {
					t.Errorf("%s: range [%s]: %v", r.Alert, m[1], err)
				}
			}
			seen[r.Alert] = true
			all = append(all, r)
		}
	}
	if len(all) == 0 {
		t.Fatalf("%s has no rules", alertsFile)
	}
	return all
}

// balanced reports whether (), [] and {} nest properly outside strings.
func balanced(s string) bool {
	var stack []rune
	inStr := false
	for _, c := range s {
		switch {
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case c == ')' || c == ']' || c == '}':
			open := map[rune]rune{')': '(', ']': '[', '}': '{'}[c]
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inStr
}

var (
	selectorRe = regexp.MustCompile(`\b((?:feedd|go|process)_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	groupingRe = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// checkRulesAgainst checks that every metric a rule names is one feedd
// exports (families: scrapes of real feedd processes), with the labels the
// rule matches on or groups by.
func checkRulesAgainst(t *testing.T, rules []rule, families map[string]*dto.MetricFamily) {
	t.Helper()
	labelsOf := func(name string) ([]string, bool) {
		mf := families[name]
		isBucket := false
		if mf == nil {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && families[base] != nil && families[base].GetType() == dto.MetricType_HISTOGRAM {
					mf, isBucket = families[base], suffix == "_bucket"
				}
			}
		}
		if mf == nil {
			return nil, false
		}
		labels := []string{"instance", "job"} // added by Prometheus
		if isBucket {
			labels = append(labels, "le")
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		return labels, true
	}
	for _, r := range rules {
		var known []string
		names := 0
		for _, m := range selectorRe.FindAllStringSubmatch(r.Expr, -1) {
			labels, ok := labelsOf(m[1])
			if !ok {
				t.Errorf("%s: %s is not a metric feedd exports", r.Alert, m[1])
				continue
			}
			names++
			known = append(known, labels...)
			for _, lm := range matcherRe.FindAllStringSubmatch(m[2], -1) {
				if !slices.Contains(labels, lm[1]) {
					t.Errorf("%s: %s has no label %s", r.Alert, m[1], lm[1])
				}
			}
		}
		if names == 0 {
			t.Errorf("%s: expr names no feedd metric: %q", r.Alert, r.Expr)
		}
		for _, g := range groupingRe.FindAllStringSubmatch(r.Expr, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !slices.Contains(known, l) {
					t.Errorf("%s: groups by %s, a label none of its metrics has", r.Alert, l)
				}
			}
		}
	}
}

// TestAlertRules: docs/alerts.yml is a well-formed rules file (checked by
// promtool too when it is installed), docs/operations.md quotes it whole,
// and the guide names the fan-out lag metric. That the rules name only
// metrics feedd exports is checked against real processes in
// TestMetricsWorkerProcess.
func TestAlertRules(t *testing.T) {
	rules := readRules(t)
	raw, _ := os.ReadFile(alertsFile)
	guide, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), strings.TrimSpace(string(raw))) {
		t.Error("docs/operations.md does not quote docs/alerts.yml whole: copy the file into the guide's rules block")
	}
	if !strings.Contains(string(guide), "feedd_fanout_lag_seconds") {
		t.Error("docs/operations.md does not name feedd_fanout_lag_seconds")
	}
	for _, r := range rules {
		if !strings.Contains(string(guide), r.Alert) {
			t.Errorf("docs/operations.md does not explain %s", r.Alert)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not installed: rules checked by this test's parser only")
	}
}
