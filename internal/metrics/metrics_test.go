package metrics_test

import (
	"testing"

	"github.com/feedd/feedd/internal/metrics"
)

// TestValue: Value reads a counter, and a histogram's sum and count, as
// the hooks left them.
func TestValue(t *testing.T) {
	m := metrics.New()
	m.Delivered(3)
	m.Delivered(4)
	m.StreamPage(0)
	m.StreamPage(5)
	m.StreamPage(2)
	for name, want := range map[string]float64{
		"feedd_fanout_deliveries_total":      7,
		"feedd_feed_page_pull_authors":       7,
		"feedd_feed_page_pull_authors_count": 3,
		"feedd_no_such_metric":               0,
	} {
		if got, err := m.Value(name); err != nil || got != want {
			t.Errorf("Value(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
}
