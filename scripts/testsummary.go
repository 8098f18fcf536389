//go:build ignore

// testsummary reads the events of `go test -json` on stdin and writes what
// `go test` writes without -json: each package's result line, and the
// output of the tests that failed (every test's with -v). At the end it
// lists the slowest tests and the time from the first event to the last.
// scripts/test.sh pipes go test through it:
//
//	go test -json ./... | go run scripts/testsummary.go [-v] [-slowest 10]
//
// It exits 0 whatever the tests did: the exit status is go test's.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (go doc test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type testKey struct{ pkg, test string }

type timing struct {
	testKey
	seconds float64
	result  string
}

func main() {
	verbose := flag.Bool("v", false, "write every test's output, as go test -v does")
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	held := map[testKey][]string{} // the output of tests still running
	var times []timing
	var first, last time.Time
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var e event
			if json.Unmarshal(line, &e) != nil || e.Action == "" {
				out.Write(line) // not an event: as it came
			} else {
				if first.IsZero() && !e.Time.IsZero() {
					first = e.Time
				}
				if !e.Time.IsZero() {
					last = e.Time
				}
				if t, ok := handle(out, e, held, *verbose); ok {
					times = append(times, t)
				}
			}
			if in.Buffered() == 0 {
				out.Flush()
			}
		}
		if err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(out, "testsummary:", err)
			break
		}
	}
	// Tests that never ended (their test binary died): what they said.
	for k, lines := range held {
		writeHeld(out, k, lines)
	}
	slices.SortFunc(times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	if len(times) > 0 && *slowest > 0 {
		fmt.Fprintf(out, "\nslowest tests:\n")
		for _, t := range times[:min(*slowest, len(times))] {
			fmt.Fprintf(out, "%9.1fs  %-4s %s %s\n", t.seconds, t.result, t.pkg, t.test)
		}
	}
	if !first.IsZero() {
		fmt.Fprintf(out, "go test: %d tests in %s\n", len(times), last.Sub(first).Round(time.Second))
	}
}

// handle writes what go test would for e, holding a test's output until
// it is known to have failed, and returns the time of a top-level test
// that ended.
func handle(out io.Writer, e event, held map[testKey][]string, verbose bool) (timing, bool) {
	k := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		io.WriteString(out, e.Output)
	case e.Test == "":
		if e.Action == "output" && (verbose || !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n") {
			io.WriteString(out, e.Output)
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			for hk, lines := range held {
				if hk.pkg == e.Package {
					writeHeld(out, hk, lines)
					delete(held, hk)
				}
			}
		}
	case e.Action == "output":
		if verbose {
			io.WriteString(out, e.Output)
		} else {
			held[k] = append(held[k], e.Output)
		}
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		if e.Action == "fail" && !verbose {
			// As go test writes a failed test: its result line, then what
			// it logged, then its failed subtests, indented.
			var lines []string
			for _, l := range held[k] {
				switch {
				case strings.HasPrefix(l, "--- "):
					lines = append([]string{l}, lines...)
				case !strings.HasPrefix(l, "=== "):
					lines = append(lines, l)
				}
			}
			parent, _, sub := cutLast(e.Test)
			if pk := (testKey{e.Package, parent}); sub {
				for _, l := range lines {
					held[pk] = append(held[pk], "    "+l)
				}
			} else {
				for _, l := range lines {
					io.WriteString(out, l)
				}
			}
		}
		delete(held, k)
		if !strings.Contains(e.Test, "/") && e.Action != "skip" {
			return timing{k, e.Elapsed, e.Action}, true
		}
	}
	return timing{}, false
}

// cutLast splits a subtest's name at its last slash.
func cutLast(test string) (parent, name string, sub bool) {
	i := strings.LastIndex(test, "/")
	if i < 0 {
		return "", test, false
	}
	return test[:i], test[i+1:], true
}

// writeHeld writes the output of a test that did not end.
func writeHeld(out io.Writer, k testKey, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(out, "--- %s %s did not end; its output:\n", k.pkg, k.test)
	for _, l := range lines {
		io.WriteString(out, l)
	}
}
