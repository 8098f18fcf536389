package capacity

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Costs are the per-operation costs a plan multiplies the counts by,
// measured on a real Redis and PostgreSQL by `feedd bench capacity` (or
// read from the costs of an earlier run's JSON).
type Costs struct {
	Source string `json:"source"`
	// Redis CPU (µs): a delivery into a full inbox (trims and compactions
	// included), a feed page's inbox read and session, each outbox it
	// merges, a post's outbox write.
	RedisUsPerDelivery float64 `json:"redis_us_per_delivery"`
	RedisUsPerPage     float64 `json:"redis_us_per_page"`
	RedisUsPerPull     float64 `json:"redis_us_per_pull"`
	RedisUsPerPost     float64 `json:"redis_us_per_post"`
	// API process CPU (µs): a feed page (hydrated), each outbox it merges,
	// a post or a follow request.
	APIUsPerPage  float64 `json:"api_us_per_page"`
	APIUsPerPull  float64 `json:"api_us_per_pull"`
	APIUsPerWrite float64 `json:"api_us_per_write"`
	// Worker process CPU (µs): a delivery, a job's own work.
	WorkerUsPerDelivery float64 `json:"worker_us_per_delivery"`
	WorkerUsPerJob      float64 `json:"worker_us_per_job"`
	// PostgreSQL rows written (inserted, updated or deleted) by a post and
	// its job, by each extra batch job of a large audience, by a follow and
	// its job; statements run by a feed page.
	PGRowsPerPost     float64 `json:"pg_rows_per_post"`
	PGRowsPerBatchJob float64 `json:"pg_rows_per_batch_job"`
	PGRowsPerFollow   float64 `json:"pg_rows_per_follow"`
	PGQueriesPerPage  float64 `json:"pg_queries_per_page"`
	// Redis bytes (INFO used_memory) of an inbox and of an outbox by the
	// entries it holds, measured at a few sizes (linear in between).
	// An inbox delivered to but never built (its owner has not read since
	// it was created) holds no sentinel: InboxUnbuiltBytes (none: as
	// InboxBytes).
	InboxBytes        []Point `json:"inbox_bytes"`
	InboxUnbuiltBytes []Point `json:"inbox_unbuilt_bytes,omitempty"`
	OutboxBytes       []Point `json:"outbox_bytes"`
}

// Point is a measured size: the bytes of a key holding Entries entries.
type Point struct {
	Entries int     `json:"entries"`
	Bytes   float64 `json:"bytes"`
}

// Validate reports costs that cannot be planned with.
func (c *Costs) Validate() error {
	if len(c.InboxBytes) < 2 || len(c.OutboxBytes) < 2 || !sortedPoints(c.InboxBytes) || !sortedPoints(c.OutboxBytes) ||
		(c.InboxUnbuiltBytes != nil && (len(c.InboxUnbuiltBytes) < 2 || !sortedPoints(c.InboxUnbuiltBytes))) {
		return fmt.Errorf("capacity: costs need inbox and outbox bytes at two sizes at least, in order of entries")
	}
	if c.RedisUsPerDelivery <= 0 || c.APIUsPerPage <= 0 || c.WorkerUsPerDelivery <= 0 {
		return fmt.Errorf("capacity: costs lack the CPU of a delivery or of a page")
	}
	return nil
}

// bytesAt interpolates pts (sorted by entries) at n, extending the last
// segment beyond the last point.
func bytesAt(pts []Point, n int) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Entries >= n })
	switch {
	case i < len(pts) && pts[i].Entries == n:
		return pts[i].Bytes
	case i == 0:
		i = 1
	case i == len(pts):
		i = len(pts) - 1
	}
	a, b := pts[i-1], pts[i]
	return a.Bytes + (b.Bytes-a.Bytes)*float64(n-a.Entries)/float64(b.Entries-a.Entries)
}

// Figures are the resources a stretch of the simulation needs, per second
// (its mean over the stretch).
type Figures struct {
	DeliveriesPerS   float64 `json:"deliveries_per_s"`
	PagesPerS        float64 `json:"pages_per_s"`
	PostsPerS        float64 `json:"posts_per_s"`
	FollowsPerS      float64 `json:"follows_per_s"`
	PullReadsPerPage float64 `json:"pull_reads_per_page"`
	RedisCores       float64 `json:"redis_cores"`
	APICores         float64 `json:"api_cores"`
	WorkerCores      float64 `json:"worker_cores"`
	WorkerProcesses  int     `json:"worker_processes"` // of 2 cores, at half load
	PGWritesPerS     float64 `json:"pg_writes_per_s"`  // rows
	PGReadsPerS      float64 `json:"pg_reads_per_s"`   // statements
}

// figures prices counts c of a stretch of seconds.
func (k *Costs) figures(c Counts, seconds float64) Figures {
	per := func(x float64) float64 { return x / seconds }
	f := Figures{
		DeliveriesPerS: per(float64(c.Deliveries)),
		PagesPerS:      per(float64(c.Pages)),
		PostsPerS:      per(float64(c.Posts)),
		FollowsPerS:    per(float64(c.Follows)),
	}
	if c.Pages > 0 {
		f.PullReadsPerPage = float64(c.PullReads) / float64(c.Pages)
	}
	// Backfills and rebuilds write entries as deliveries do.
	entries := float64(c.Deliveries + c.Backfilled + c.RebuiltEntries)
	f.RedisCores = per(entries*k.RedisUsPerDelivery+float64(c.Pages)*k.RedisUsPerPage+
		float64(c.PullReads)*k.RedisUsPerPull+float64(c.Posts)*k.RedisUsPerPost) / 1e6
	f.APICores = per(float64(c.Pages)*k.APIUsPerPage+float64(c.PullReads)*k.APIUsPerPull+
		float64(c.Posts+c.Follows)*k.APIUsPerWrite) / 1e6
	f.WorkerCores = per(float64(c.Deliveries+c.Backfilled)*k.WorkerUsPerDelivery+
		float64(c.PostJobs+c.BatchJobs+c.Follows)*k.WorkerUsPerJob) / 1e6
	f.WorkerProcesses = max(1, int(math.Ceil(f.WorkerCores)))
	f.PGWritesPerS = per(float64(c.Posts)*k.PGRowsPerPost + float64(c.BatchJobs)*k.PGRowsPerBatchJob +
		float64(c.Follows)*k.PGRowsPerFollow + float64(c.Touches))
	f.PGReadsPerS = per(float64(c.Pages)*k.PGQueriesPerPage + float64(c.Rebuilds+c.OutboxBuilds))
	return f
}

func (f Figures) cores() float64 { return f.RedisCores + f.APICores + f.WorkerCores }

// Summary is a run priced: the mean day and the peak hour.
type Summary struct {
	Users           int     `json:"users"`
	Edges           int64   `json:"edges"`
	PullThreshold   int     `json:"pull_threshold"`
	PullAuthors     int     `json:"pull_authors"`
	PullEdgeShare   float64 `json:"pull_edge_share"` // of follows, to pull-mode authors
	Day             Figures `json:"day"`
	PeakHour        Figures `json:"peak_hour"`
	PeakHourIndex   int     `json:"peak_hour_index"` // counted hours from the start
	PullsPerPageP99 int     `json:"pull_reads_per_page_p99"`
	RedisBytes      float64 `json:"redis_bytes"`      // inboxes and outboxes at the end
	InboxEntries    int64   `json:"inbox_entries"`    // at the end
	InboxBytes      float64 `json:"inbox_bytes"`      // of them
	OutboxBytes     float64 `json:"outbox_bytes"`     // the outboxes'
	Totals          Counts  `json:"totals"`           // over the counted days
	CoreEquivalents float64 `json:"core_equivalents"` // peak cores + Redis GB / GBPerCore
}

// GBPerCore prices memory against CPU in Summary.CoreEquivalents: a
// general-purpose cloud machine has about 4 GB a core.
const GBPerCore = 4.0

// Summarize prices r with k.
func (k *Costs) Summarize(r *Result, users, threshold int) Summary {
	s := Summary{Users: users, Edges: r.Edges, PullThreshold: threshold, PullAuthors: r.PullAuthors}
	if r.Edges > 0 {
		s.PullEdgeShare = float64(r.PullEdges) / float64(r.Edges)
	}
	peak := -1.0
	for i, h := range r.Hours {
		s.Totals.add(h)
		if f := k.figures(h, 3600); f.cores() > peak {
			peak, s.PeakHour, s.PeakHourIndex = f.cores(), f, i
		}
	}
	s.Day = k.figures(s.Totals, float64(len(r.Hours))*3600)
	s.PullsPerPageP99 = quantile(r.PullsPerPage, 0.99)
	unbuilt := k.InboxUnbuiltBytes
	if unbuilt == nil {
		unbuilt = k.InboxBytes
	}
	for n := range r.InboxSizes {
		if c := r.InboxSizes[n]; c > 0 {
			s.InboxEntries += c * int64(n)
			s.InboxBytes += float64(c) * bytesAt(k.InboxBytes, n)
		}
		if n < len(r.UnbuiltSizes) && r.UnbuiltSizes[n] > 0 {
			c := r.UnbuiltSizes[n]
			s.InboxEntries += c * int64(n)
			s.InboxBytes += float64(c) * bytesAt(unbuilt, n)
		}
	}
	for n, c := range r.OutboxSizes {
		if c > 0 {
			s.OutboxBytes += float64(c) * bytesAt(k.OutboxBytes, n)
		}
	}
	s.RedisBytes = s.InboxBytes + s.OutboxBytes
	s.CoreEquivalents = s.PeakHour.cores() + s.RedisBytes/1e9/GBPerCore
	return s
}

// quantile is the q-quantile of a histogram whose slot i counts value i.
func quantile(hist []int64, q float64) int {
	var total int64
	for _, c := range hist {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, c := range hist {
		if seen += c; seen >= want {
			return i
		}
	}
	return len(hist) - 1
}

// Growth is how one figure grows with the number of users: f = a·users^b,
// fitted by least squares on the logarithms of the runs' figures.
type Growth struct {
	Name     string    `json:"name"`
	Measured []float64 `json:"measured"` // at each run's users
	Exponent float64   `json:"exponent"` // b
	Planned  []float64 `json:"planned"`  // at each planned size
}

// Extrapolate fits each named figure of runs (at least two sizes) and
// plans it at sizes.
func Extrapolate(runs []Summary, sizes []int) []Growth {
	figures := []struct {
		name string
		get  func(Summary) float64
	}{
		{"peak deliveries/s", func(s Summary) float64 { return s.PeakHour.DeliveriesPerS }},
		{"peak pages/s", func(s Summary) float64 { return s.PeakHour.PagesPerS }},
		{"pull reads per page (mean)", func(s Summary) float64 { return s.Day.PullReadsPerPage }},
		{"pull reads per page (p99)", func(s Summary) float64 { return float64(s.PullsPerPageP99) }},
		{"Redis GB", func(s Summary) float64 { return s.RedisBytes / 1e9 }},
		{"peak Redis cores", func(s Summary) float64 { return s.PeakHour.RedisCores }},
		{"peak API cores", func(s Summary) float64 { return s.PeakHour.APICores }},
		{"peak worker cores", func(s Summary) float64 { return s.PeakHour.WorkerCores }},
		{"peak PostgreSQL writes/s", func(s Summary) float64 { return s.PeakHour.PGWritesPerS }},
		{"peak PostgreSQL reads/s", func(s Summary) float64 { return s.PeakHour.PGReadsPerS }},
		{"follows", func(s Summary) float64 { return float64(s.Edges) }},
	}
	var out []Growth
	for _, f := range figures {
		g := Growth{Name: f.name}
		var xs, ys []float64
		for _, r := range runs {
			v := f.get(r)
			g.Measured = append(g.Measured, v)
			if v > 0 {
				xs, ys = append(xs, math.Log(float64(r.Users))), append(ys, math.Log(v))
			}
		}
		a, b := fit(xs, ys)
		g.Exponent = b
		for _, n := range sizes {
			p := 0.0
			if len(xs) >= 2 {
				p = math.Exp(a + b*math.Log(float64(n)))
			}
			g.Planned = append(g.Planned, p)
		}
		out = append(out, g)
	}
	return out
}

// fit is the least-squares line y = a + b·x.
func fit(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n < 2 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b
}

// Cheapest is the index of the run with the fewest core equivalents.
func Cheapest(runs []Summary) int {
	i := 0
	for j, r := range runs {
		if r.CoreEquivalents < runs[i].CoreEquivalents {
			i = j
		}
	}
	return i
}

// sortedPoints checks that pts go up in entries.
func sortedPoints(pts []Point) bool {
	return slices.IsSortedFunc(pts, func(a, b Point) int { return a.Entries - b.Entries })
}
