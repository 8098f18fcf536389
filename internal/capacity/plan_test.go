package capacity

import (
	"math"
	"testing"
)

// TestBytesAt: measured points are read as they are, between them
// linearly, past the last along the last segment.
func TestBytesAt(t *testing.T) {
	pts := []Point{{0, 100}, {10, 200}, {20, 400}}
	for n, want := range map[int]float64{0: 100, 5: 150, 10: 200, 15: 300, 20: 400, 30: 600} {
		if got := bytesAt(pts, n); got != want {
			t.Errorf("bytesAt(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestExtrapolate: figures that grow as a power of the users are fitted
// with that exponent and planned on the same line.
func TestExtrapolate(t *testing.T) {
	var runs []Summary
	for _, n := range []int{1000, 3000, 10000} {
		s := Summary{Users: n, Edges: int64(50 * n), RedisBytes: 1e6 * math.Pow(float64(n), 1.2)}
		s.PeakHour.DeliveriesPerS = 2 * float64(n)
		runs = append(runs, s)
	}
	for _, g := range Extrapolate(runs, []int{100000}) {
		var want, exp float64
		switch g.Name {
		case "follows":
			want, exp = 50*100000, 1
		case "Redis GB":
			want, exp = 1e6*math.Pow(100000, 1.2)/1e9, 1.2
		case "peak deliveries/s":
			want, exp = 200000, 1
		default:
			continue
		}
		if math.Abs(g.Exponent-exp) > 1e-9 || math.Abs(g.Planned[0]-want)/want > 1e-9 {
			t.Errorf("%s: exponent %v planned %v, want %v and %v", g.Name, g.Exponent, g.Planned, exp, want)
		}
	}
}

// TestSummarize: per-second figures are the counts over the stretch's
// seconds priced by the costs, the peak hour is the costliest, and memory
// is the inboxes' and outboxes' sizes priced by the measured bytes.
func TestSummarize(t *testing.T) {
	k := &Costs{RedisUsPerDelivery: 2, APIUsPerPage: 500, APIUsPerPull: 40, WorkerUsPerDelivery: 3,
		InboxBytes: []Point{{0, 100}, {800, 16100}}, OutboxBytes: []Point{{0, 50}, {800, 90050}}}
	r := &Result{
		Hours:        []Counts{{Pages: 3600, PullReads: 7200, Deliveries: 36000}, {Pages: 7200, PullReads: 0, Deliveries: 72000}},
		PullsPerPage: []int64{7200, 0, 3600},
		InboxSizes:   append(make([]int64, 800), 2), // two full inboxes
		OutboxSizes:  append([]int64{0, 0}, make([]int64, 799)...),
	}
	r.OutboxSizes[400] = 1
	s := k.Summarize(r, 10, 0)
	if s.PeakHourIndex != 1 || s.PeakHour.DeliveriesPerS != 20 || s.PeakHour.PagesPerS != 2 {
		t.Errorf("peak hour %d: %+v", s.PeakHourIndex, s.PeakHour)
	}
	if s.Day.PullReadsPerPage != 7200.0/10800 || s.PullsPerPageP99 != 2 {
		t.Errorf("pull reads a page: mean %v, p99 %d", s.Day.PullReadsPerPage, s.PullsPerPageP99)
	}
	// Peak hour: 2 pages/s × 500 µs = 0.001 core of API; 20 deliveries/s × 2 µs of Redis.
	if math.Abs(s.PeakHour.APICores-0.001) > 1e-12 || math.Abs(s.PeakHour.RedisCores-0.00004) > 1e-12 {
		t.Errorf("cores: %+v", s.PeakHour)
	}
	if s.InboxBytes != 2*16100 || s.OutboxBytes != 45050 || s.InboxEntries != 1600 {
		t.Errorf("bytes: inboxes %v, outboxes %v, entries %d", s.InboxBytes, s.OutboxBytes, s.InboxEntries)
	}
}
