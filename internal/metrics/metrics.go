// Package metrics is feedd's Prometheus instrumentation: one registry per
// process (never the global default, so several feedd in one test process
// do not collide), the Go runtime and process collectors, and the hooks the
// domain (feed.Observer), fan-out (fanout.Observer) and HTTP layer
// (http.Observer) call. Only this package imports Prometheus.
//
// Every metric feedd exports is named in this file; docs/operations.md says
// what to watch and docs/alerts.yml alerts on them.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// lagBuckets are the fan-out lag histograms' buckets (seconds): tens of
// milliseconds when idle, up to the minutes of an overload.
var lagBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics holds feedd's metrics on a registry of its own.
type Metrics struct {
	Registry *prometheus.Registry

	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	refusals   *prometheus.CounterVec
	deliveries prometheus.Counter
	lag        prometheus.Histogram
	firstLag   prometheus.Histogram
	discarded  *prometheus.CounterVec
	pushes     *prometheus.CounterVec
	rebuilds   prometheus.Counter
	degraded   prometheus.Counter
	codes      prometheus.Counter
	pulls      prometheus.Histogram
	jobs       *jobsCollector
}

// New returns feedd's metrics, registered with the Go runtime and process
// collectors on a new registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_http_requests_total",
			Help: "HTTP requests answered, by route (the mux pattern) and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "feedd_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route (the mux pattern).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_refusals_total",
			Help: "Requests refused to protect the service (HTTP 429 and 503: rate limits, load shedding), by reason (the error code).",
		}, []string{"reason"}),
		deliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_fanout_deliveries_total",
			Help: "Inbox entries written by fan-out: of new posts (the author's own included) and of recent posts pushed when an author leaves pull mode.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_fanout_lag_seconds",
			Help:    "From a post's creation (its score) to the end of the fan-out job that delivered it: once per post job, once per batch job of a split audience.",
			Buckets: lagBuckets,
		}),
		firstLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_fanout_first_lag_seconds",
			Help:    "From a post's creation (its score) to its first follower's inbox write, once per post with followers to push to.",
			Buckets: lagBuckets,
		}),
		discarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_fanout_jobs_discarded_total",
			Help: "Fan-out jobs that failed their last attempt and will not run again, by kind: inboxes that miss a post (or a follow's change); the log has the post id.",
		}, []string{"kind"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_push_jobs_total",
			Help: "Tries of Web Push jobs, by outcome: sent, skipped (alert off, group read or gone, hidden), gone (subscription removed on 404 or 410), retry (429, 5xx, no answer), refused (another 4xx, an endpoint not allowed).",
		}, []string{"outcome"}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_inbox_rebuilds_total",
			Help: "Inboxes refilled from the source of truth (lost from Redis, or an idle user back).",
		}),
		degraded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_degraded_reads_total",
			Help: "Feed pages computed from the database because the inbox store (Redis) failed.",
		}),
		codes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_login_codes_sent_total",
			Help: "Login codes handed to the code sender.",
		}),
		pulls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_feed_page_pull_authors",
			Help:    "Pull-mode authors whose outboxes a feed page merges (0: the inbox alone).",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500},
		}),
		jobs: &jobsCollector{desc: prometheus.NewDesc("feedd_jobs",
			"Fan-out jobs (River) by kind and state, every state but completed; refreshed periodically, see feedd_jobs_refreshed_timestamp_seconds.",
			[]string{"kind", "state"}, nil),
			refreshed: prometheus.NewDesc("feedd_jobs_refreshed_timestamp_seconds",
				"When feedd_jobs was last counted (Unix time).", nil, nil)},
	}
	// The reasons of refusals without an error code exist from the start,
	// so the family is there (at 0) before the first refusal.
	m.refusals.WithLabelValues("http_429")
	m.refusals.WithLabelValues("http_503")
	for _, kind := range []string{"feed_post", "feed_batch", "feed_follow"} {
		m.discarded.WithLabelValues(kind)
	}
	for _, o := range []string{"sent", "skipped", "gone", "retry", "refused"} {
		m.pushes.WithLabelValues(o)
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.refusals, m.deliveries, m.lag, m.firstLag, m.discarded, m.pushes, m.rebuilds, m.degraded, m.codes, m.pulls,
	)
	return m
}

// Value is the value of the unlabelled counter name, or the sum of the
// histogram name (name_count: its count), summed over label values; 0 for
// a name not exported. For benchmarks that compare what the process
// counted with what they expect.
func (m *Metrics) Value(name string) (float64, error) {
	families, err := m.Registry.Gather()
	if err != nil {
		return 0, err
	}
	base, count := strings.CutSuffix(name, "_count")
	var v float64
	for _, f := range families {
		if f.GetName() != name && !(count && f.GetName() == base) {
			continue
		}
		for _, mt := range f.GetMetric() {
			switch {
			case mt.Counter != nil:
				v += mt.Counter.GetValue()
			case mt.Gauge != nil:
				v += mt.Gauge.GetValue()
			case mt.Histogram != nil && count && f.GetName() == base:
				v += float64(mt.Histogram.GetSampleCount())
			case mt.Histogram != nil:
				v += mt.Histogram.GetSampleSum()
			}
		}
	}
	return v, nil
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Request implements http.Observer.
func (m *Metrics) Request(route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
}

// Refused implements http.Observer.
func (m *Metrics) Refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// Delivered implements fanout.Observer.
func (m *Metrics) Delivered(entries int) { m.deliveries.Add(float64(entries)) }

// Lag implements fanout.Observer.
func (m *Metrics) Lag(lag time.Duration) { m.lag.Observe(lag.Seconds()) }

// FirstLag implements fanout.Observer.
func (m *Metrics) FirstLag(lag time.Duration) { m.firstLag.Observe(lag.Seconds()) }

// Discarded implements fanout.Observer.
func (m *Metrics) Discarded(kind string) { m.discarded.WithLabelValues(kind).Inc() }

// Pushed implements fanout.Observer.
func (m *Metrics) Pushed(outcome string) { m.pushes.WithLabelValues(outcome).Inc() }

// StreamPage implements feed.Observer.
func (m *Metrics) StreamPage(pulls int) { m.pulls.Observe(float64(pulls)) }

// InboxRebuilt implements feed.Observer.
func (m *Metrics) InboxRebuilt() { m.rebuilds.Inc() }

// DegradedRead implements feed.Observer.
func (m *Metrics) DegradedRead() { m.degraded.Inc() }

// CodeSent implements feed.Observer.
func (m *Metrics) CodeSent() { m.codes.Inc() }

// QueueLag exports lag as feedd_fanout_queue_lag_seconds: how long the
// oldest new post (or follow) job has waited to be worked, read by the
// process that works them.
func (m *Metrics) QueueLag(lag func() time.Duration) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_fanout_queue_lag_seconds",
		Help: "Age of the oldest post or follow job waiting to be worked (0: none waits); what the API's load shedding watches (--max-lag).",
	}, func() float64 { return lag().Seconds() }))
}

// JobCount is how many jobs of one kind are in one state.
type JobCount struct {
	Kind, State string
	Jobs        int64
}

// JobStates are the River job states feedd_jobs counts: all but
// completed (finished work is feedd_fanout_deliveries_total's business,
// and counting it would scan a day of retained jobs). Each adapter's
// count query selects exactly these.
var JobStates = []string{"available", "cancelled", "discarded", "pending", "retryable", "running", "scheduled"}

// WatchJobs counts jobs with count (one grouped query) now and every
// interval until ctx is done, and exports the last counts as feedd_jobs.
// The kinds are always exported in every state of JobStates, 0 when none;
// other kinds appear when counted. A failed count keeps the previous
// figures (the refresh timestamp shows their age) and is logged.
func (m *Metrics) WatchJobs(ctx context.Context, interval time.Duration, kinds []string, count func(context.Context) ([]JobCount, error), log *slog.Logger) {
	m.jobs.kinds = kinds
	m.Registry.MustRegister(m.jobs)
	refresh := func() {
		cctx, cancel := context.WithTimeout(ctx, interval)
		defer cancel()
		counts, err := count(cctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("count jobs for metrics", "error", err)
			}
			return
		}
		m.jobs.set(counts, time.Now())
	}
	refresh()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				refresh()
			}
		}
	}()
}

// jobsCollector exports the last job counts at scrape time, so a scrape
// never sees a half-updated set.
type jobsCollector struct {
	desc, refreshed *prometheus.Desc
	kinds           []string

	mu     sync.Mutex
	counts map[[2]string]int64
	at     time.Time
}

func (c *jobsCollector) set(counts []JobCount, at time.Time) {
	m := make(map[[2]string]int64, len(c.kinds)*len(JobStates))
	for _, k := range c.kinds {
		for _, s := range JobStates {
			m[[2]string{k, s}] = 0
		}
	}
	for _, jc := range counts {
		m[[2]string{jc.Kind, jc.State}] += jc.Jobs
	}
	c.mu.Lock()
	c.counts, c.at = m, at
	c.mu.Unlock()
}

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.refreshed
}

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		return
	}
	for k, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(c.refreshed, prometheus.GaugeValue, float64(c.at.UnixNano())/1e9)
}
