package bench

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var l Latencies
	for i := 100; i >= 1; i-- {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := l.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if l[0] != 100*time.Millisecond {
		t.Error("Quantile sorted its receiver")
	}
	if got := (Latencies{}).Quantile(0.5); got != 0 {
		t.Errorf("empty quantile = %v", got)
	}
}

func TestMedian(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("odd median = %v", got)
	}
	if got := Median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("even median = %v", got)
	}
}

// The limit run speaks RESP itself: its commands must parse as RESP.
func TestAppendCommand(t *testing.T) {
	buf := appendCommand(nil, "ZADD", "p:feed:{7}", "1800000000000", "1234567")
	r := bufio.NewReader(bytes.NewReader(buf))
	line, _ := r.ReadString('\n')
	if line != "*4\r\n" {
		t.Fatalf("header %q", line)
	}
	var args []string
	for range 4 {
		h, _ := r.ReadString('\n')
		a, _ := r.ReadString('\n')
		if !strings.HasPrefix(h, "$") || len(a)-2 != atoi(t, h[1:len(h)-2]) {
			t.Fatalf("bulk %q %q", h, a)
		}
		args = append(args, a[:len(a)-2])
	}
	if strings.Join(args, " ") != "ZADD p:feed:{7} 1800000000000 1234567" {
		t.Errorf("args %q", args)
	}
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestKeys(t *testing.T) {
	if got := limitKey("x:", 42); got != "x:limit:feed:{42}" {
		t.Errorf("limitKey = %q", got)
	}
	if got := globEscape(`a*b?[c]\`); got != `a\*b\?\[c\]\\` {
		t.Errorf("globEscape = %q", got)
	}
}

func TestRecommendedListpackEntries(t *testing.T) {
	for cap, want := range map[int]int{800: 1024, 100: 512, 1000: 2048} {
		if got := RecommendedListpackEntries(cap); got != want {
			t.Errorf("RecommendedListpackEntries(%d) = %d, want %d", cap, got, want)
		}
	}
}
