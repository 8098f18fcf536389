package hmdp

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far one phase is: a bar with its rows/s on a
// terminal, a plain line every lineEvery (and at the end) elsewhere.
type progress struct {
	w       io.Writer
	pb      *progressbar.ProgressBar
	name    string
	total   int64 // -1: unknown
	n       int64
	base    int64 // rows done before this run
	start   time.Time
	shownAt time.Time
}

const lineEvery = 5 * time.Second

func newProgress(w io.Writer, name string, done, total int64) *progress {
	p := &progress{w: w, name: name, total: total, n: done, base: done, start: time.Now()}
	p.shownAt = p.start
	if w == nil {
		return p
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.pb = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(fmt.Sprintf("%-16s", name)),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		p.pb.Set64(done)
	}
	return p
}

// add counts n more rows read.
func (p *progress) add(n int) {
	p.n += int64(n)
	switch {
	case p.w == nil:
	case p.pb != nil:
		p.pb.Set64(min(p.n, max(p.pb.GetMax64(), p.n)))
	case time.Since(p.shownAt) >= lineEvery:
		p.shownAt = time.Now()
		p.line("")
	}
}

// done ends the phase's display.
func (p *progress) done(ran int64) {
	if p.w == nil {
		return
	}
	if p.pb != nil {
		p.pb.Finish()
		return
	}
	p.line(fmt.Sprintf(" done, %d this run", ran))
}

func (p *progress) line(suffix string) {
	el := time.Since(p.start).Seconds()
	of := ""
	if p.total >= 0 {
		of = fmt.Sprintf("/%d", p.total)
	}
	fmt.Fprintf(p.w, "%s: %d%s rows, %.0f rows/s%s\n", p.name, p.n, of, rate(p.n-p.base, el), suffix)
}

func rate(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}
