package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/feedd/feedd/redis"
)

// scrape reads the admin listener's /metrics at admin (a base URL) and
// parses the text format.
func scrape(t testing.TB, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return mfs
}

// value is the value of the series of family name whose labels include
// labels (pairs), 0 when absent; for a histogram, its sample count.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, m := range mf.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// series returns "route code" -> count of feedd_http_requests_total.
func requestCounts(mfs map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if mf := mfs["feedd_http_requests_total"]; mf != nil {
		for _, m := range mf.Metric {
			var route, code string
			for _, l := range m.Label {
				switch l.GetName() {
				case "route":
					route = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			out[route+" "+code] = m.Counter.GetValue()
		}
	}
	return out
}

func get(t testing.TB, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestMetrics runs feedd embedded with its admin listener and an access
// log: the request counters move by exactly the requests made, published
// posts show as deliveries and lag, the job dashboard, the job gauge and
// pprof answer on the admin listener, and /metrics is not on the public one.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--access-log")
	if s.admin == "" {
		t.Fatal("serve did not log its admin listener")
	}
	author, f1, f2 := s.login("13800000001"), s.login("13800000002"), s.login("13800000003")
	authorID, f1ID := s.me(author), s.me(f1)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f1, nil, nil)
	s.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f2, nil, nil)

	// A known sequence of requests, between two scrapes.
	before := scrape(t, s.admin)
	for range 3 {
		s.do("GET", "/blog/hot", "", nil)
	}
	s.must("GET", "/user/me", f1, nil, nil)
	s.must("GET", "/user/me", f1, nil, nil)
	s.do("GET", "/user/me", "", nil)                    // 401
	s.do("GET", fmt.Sprintf("/user/%d", f1ID), f2, nil) // a path with an id: counted by its pattern
	s.do("GET", "/no/such/thing", "", nil)              // 404, the catch-all
	s.do("POST", "/user/code?phone=13800000009", "", nil)
	pub := s.do("GET", "/metrics", "", nil) // not on the public listener
	if pub.Status != 404 || pub.Success {
		t.Fatalf("public /metrics: %d %s, want the 404 envelope", pub.Status, pub.Raw)
	}
	after := scrape(t, s.admin)

	want := map[string]float64{
		"GET /blog/hot 200":   3,
		"GET /user/me 200":    2,
		"GET /user/me 401":    1,
		"GET /user/{id} 200":  1,
		"/ 404":               2, // /no/such/thing and the public /metrics
		"POST /user/code 200": 1,
	}
	b, a := requestCounts(before), requestCounts(after)
	for k := range a {
		if d := a[k] - b[k]; d != want[k] {
			t.Errorf("feedd_http_requests_total{%s} moved by %v, want %v", k, d, want[k])
		}
	}
	for k, n := range want {
		if a[k]-b[k] != n {
			t.Errorf("feedd_http_requests_total{%s} moved by %v, want %v", k, a[k]-b[k], n)
		}
	}
	if d := value(after, "feedd_http_request_duration_seconds", "route", "GET /blog/hot") - value(before, "feedd_http_request_duration_seconds", "route", "GET /blog/hot"); d != 3 {
		t.Errorf("duration histogram of GET /blog/hot moved by %v, want 3", d)
	}
	if d := value(after, "feedd_login_codes_sent_total") - value(before, "feedd_login_codes_sent_total"); d != 1 {
		t.Errorf("login codes sent moved by %v, want 1", d)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if after[name] == nil {
			t.Errorf("%s missing: Go runtime and process collectors", name)
		}
	}

	// Three posts to two followers: 3 x (author + 2) inbox entries, and
	// one lag observation per post (one job each).
	for i := range 3 {
		s.must("POST", "/blog", author, map[string]any{"title": fmt.Sprint("p", i), "content": "x"}, nil)
	}
	var got map[string]*dto.MetricFamily
	waitFor(t, "deliveries of 3 posts", func() bool {
		got = scrape(t, s.admin)
		return value(got, "feedd_fanout_lag_seconds")-value(before, "feedd_fanout_lag_seconds") >= 3 &&
			value(got, "feedd_fanout_deliveries_total")-value(before, "feedd_fanout_deliveries_total") >= 9
	})
	if d := value(got, "feedd_fanout_deliveries_total") - value(before, "feedd_fanout_deliveries_total"); d != 9 {
		t.Errorf("deliveries moved by %v, want 9", d)
	}
	if d := value(got, "feedd_fanout_lag_seconds") - value(before, "feedd_fanout_lag_seconds"); d != 3 {
		t.Errorf("lag observations moved by %v, want 3", d)
	}
	if d := value(got, "feedd_fanout_first_lag_seconds") - value(before, "feedd_fanout_first_lag_seconds"); d != 3 {
		t.Errorf("first-follower lag observations moved by %v, want 3", d)
	}
	if got["feedd_jobs"] == nil || len(got["feedd_jobs"].Metric) < 3*7 {
		t.Errorf("feedd_jobs missing or short: %v", got["feedd_jobs"])
	}

	// The job dashboard, over this process's queue.
	code, ctype, body := get(t, s.admin+"/river/")
	if code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, "<html") {
		t.Fatalf("/river/: %d %s %.200q", code, ctype, body)
	}
	waitFor(t, "completed post jobs in River's UI API", func() bool {
		code, _, body := get(t, s.admin+"/river/api/jobs?state=completed&limit=100")
		return code == 200 && strings.Count(body, `"kind":"feed_post"`) >= 3
	})

	// pprof.
	if code, _, body := get(t, s.admin+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/: %d %.200q", code, body)
	}
	if code, _, body := get(t, s.admin+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.200q", code, body)
	}
	if code, _, _ := get(t, s.admin+"/no/such"); code != 404 {
		t.Fatalf("unknown admin path: %d", code)
	}

	// The access log: one line per request, the caller's id, no token.
	rec := s.logs.find("request", map[string]string{"route": "GET /user/me", "status": "200", "user_id": fmt.Sprint(f1ID)})
	if rec == nil {
		t.Fatal("no access log line for GET /user/me")
	}
	if _, ok := rec["duration_ms"].(float64); !ok {
		t.Errorf("access log line without duration_ms: %v", rec)
	}
	s.logs.mu.Lock()
	for _, rec := range s.logs.lines {
		j, _ := json.Marshal(rec)
		for _, tok := range []string{author, f1, f2} {
			if rec["msg"] == "request" && strings.Contains(string(j), tok) {
				t.Errorf("access log line holds a token: %s", j)
			}
		}
	}
	s.logs.mu.Unlock()
}

// TestAdminListenerFlags: failing to bind --admin-addr stops start-up with
// an error naming the address; off turns the listener off.
func TestAdminListenerFlags(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	err = run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", taken, "--data", t.TempDir()},
		func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), taken) {
		t.Fatalf("run with a taken admin address: %v, want an error naming %s", err, taken)
	}
	if _, err := parseConfig("serve", []string{"--admin-addr", "nonsense"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("--admin-addr nonsense accepted")
	}
	c, err := parseConfig("worker", nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.adminAddr != "off" {
		t.Fatalf("worker's default admin address %q (%v), want off", c.adminAddr, err)
	}
	c, err = parseConfig("serve", nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.adminAddr != "127.0.0.1:8082" {
		t.Fatalf("serve's default admin address %q (%v)", c.adminAddr, err)
	}

	env := func(k string) string {
		return map[string]string{"FEED_ADMIN_ADDR": "off", "FEED_ACCESS_LOG": "true"}[k]
	}
	c, err = parseConfig("serve", nil, env, io.Discard)
	if err != nil || c.adminAddr != "off" || !c.accessLog {
		t.Fatalf("from the environment: admin %q access log %v (%v)", c.adminAddr, c.accessLog, err)
	}

	s := startServer(t, "--data", t.TempDir(), "--admin-addr", "off")
	if s.admin != "" || s.logs.find("admin listening", nil) != nil {
		t.Fatal("--admin-addr off still started the admin listener")
	}
}

// TestMetricsWorkerProcess: on PostgreSQL + Redis, with an API-only
// process and a separate `feedd worker`, the worker exports the fan-out of
// the posts it delivered (and the API none), the API counts an inbox
// rebuild, both export pool statistics, and the job dashboard answers on
// PostgreSQL.
func TestMetricsWorkerProcess(t *testing.T) {
	t.Parallel()
	b := singleNode(t)
	api := startProc(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, b.args...)...)
	w := startProc(t, nil, append([]string{"worker", "--workers", "2", "--admin-addr", "127.0.0.1:0"}, b.args...)...)
	if api.admin == "" || w.admin == "" {
		t.Fatalf("admin listeners: api %q worker %q", api.admin, w.admin)
	}
	apiAdmin, wAdmin := "http://"+api.admin, "http://"+w.admin
	c := api.client(t)
	author, f1, f2 := c.login("13800000001"), c.login("13800000002"), c.login("13800000003")
	authorID, f1ID := c.me(author), c.me(f1)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f1, nil, nil)
	c.must("PUT", fmt.Sprintf("/follow/%d/true", authorID), f2, nil, nil)

	before := scrape(t, wAdmin)
	for i := range 2 {
		c.must("POST", "/blog", author, map[string]any{"title": fmt.Sprint("p", i), "content": "x"}, nil)
	}
	var got map[string]*dto.MetricFamily
	waitFor(t, "the worker's deliveries of 2 posts", func() bool {
		got = scrape(t, wAdmin)
		return value(got, "feedd_fanout_lag_seconds")-value(before, "feedd_fanout_lag_seconds") >= 2
	})
	if d := value(got, "feedd_fanout_deliveries_total") - value(before, "feedd_fanout_deliveries_total"); d != 6 {
		t.Errorf("worker deliveries moved by %v, want 6", d)
	}
	if d := value(got, "feedd_fanout_lag_seconds") - value(before, "feedd_fanout_lag_seconds"); d != 2 {
		t.Errorf("worker lag observations moved by %v, want 2", d)
	}
	if d := value(got, "feedd_fanout_first_lag_seconds") - value(before, "feedd_fanout_first_lag_seconds"); d != 2 {
		t.Errorf("worker first-follower lag observations moved by %v, want 2", d)
	}
	apiM := scrape(t, apiAdmin)
	if d := value(apiM, "feedd_fanout_deliveries_total"); d != 0 {
		t.Errorf("the API process (--workers 0) counts %v deliveries", d)
	}
	for _, name := range []string{"feedd_postgres_pool_connections", "feedd_redis_pool_connections"} {
		if apiM[name] == nil || got[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	if value(apiM, "feedd_postgres_pool_connections", "state", "max") < 1 {
		t.Errorf("PostgreSQL pool max connections not exported: %v", apiM["feedd_postgres_pool_connections"])
	}

	// A lost inbox is rebuilt on its first read, and counted.
	if err := b.rdb.Del(context.Background(), redis.InboxKey(b.prefix, f1ID)).Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(c.scrollAll(f1, 10)); n != 2 {
		t.Fatalf("rebuilt feed has %d posts, want 2", n)
	}
	if d := value(scrape(t, apiAdmin), "feedd_inbox_rebuilds_total") - value(apiM, "feedd_inbox_rebuilds_total"); d != 1 {
		t.Errorf("inbox rebuilds moved by %v, want 1", d)
	}

	for _, admin := range []string{apiAdmin, wAdmin} {
		code, ctype, body := get(t, admin+"/river/")
		if code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, "<html") {
			t.Fatalf("%s/river/: %d %s", admin, code, ctype)
		}
	}
	waitFor(t, "completed post jobs in River's UI API on PostgreSQL", func() bool {
		code, _, body := get(t, apiAdmin+"/river/api/jobs?state=completed&limit=100")
		return code == 200 && strings.Count(body, `"kind":"feed_post"`) >= 2
	})
	waitFor(t, "feedd_jobs on PostgreSQL", func() bool {
		return len(scrape(t, apiAdmin)["feedd_jobs"].GetMetric()) >= 3*7
	})

	// The alerting rules name only metrics these processes export.
	families := scrape(t, apiAdmin)
	for name, mf := range scrape(t, wAdmin) {
		families[name] = mf
	}
	checkRulesAgainst(t, readRules(t), families)
}
