package feed_test

import (
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestDeliveryRules: the push/pull line with its hysteresis, the
// activity horizon and the backfill size, at and around their edges.
func TestDeliveryRules(t *testing.T) {
	for _, c := range []struct {
		mode            feed.Mode
		fans, threshold int
		want            bool
	}{
		{feed.PushMode, 9999, 10000, false},
		{feed.PushMode, 10000, 10000, true},
		{feed.PushMode, 1 << 30, 0, false}, // pull mode off
		{feed.PullMode, 20000, 10000, false},
		{feed.LeavingPullMode, 20000, 10000, false},
	} {
		if got := feed.EntersPull(c.mode, c.fans, c.threshold); got != c.want {
			t.Errorf("EntersPull(%d, %d, %d) = %v", c.mode, c.fans, c.threshold, got)
		}
	}
	if !feed.StaysPull(9000, 10000) || feed.StaysPull(8999, 10000) {
		t.Error("StaysPull: the line is 9/10 of the threshold")
	}
	if feed.Pushed(feed.PullMode) || !feed.Pushed(feed.PushMode) || !feed.Pushed(feed.LeavingPullMode) {
		t.Error("Pushed")
	}
	if feed.Merged(feed.PushMode) || !feed.Merged(feed.PullMode) || !feed.Merged(feed.LeavingPullMode) {
		t.Error("Merged")
	}
	day := 24 * time.Hour
	since := feed.ActiveSince(100*day.Milliseconds(), 30*day)
	if since != 70*day.Milliseconds() || feed.ActiveSince(5, 0) != 0 {
		t.Errorf("ActiveSince = %d", since)
	}
	if !feed.IsActive(since, since) || feed.IsActive(since-1, since) || !feed.IsActive(0, 0) {
		t.Error("IsActive: active at or after the horizon")
	}
	now := time.UnixMilli(100 * day.Milliseconds())
	if feed.Regenerates(now.Add(-30*day), now, 30*day) || !feed.Regenerates(now.Add(-30*day-1), now, 30*day) || feed.Regenerates(time.Time{}, now, 0) {
		t.Error("Regenerates: away for more than the window")
	}
	if feed.TouchDue(now.Add(-feed.TouchInterval), now) || !feed.TouchDue(now.Add(-feed.TouchInterval-1), now) {
		t.Error("TouchDue")
	}
	for _, c := range []struct{ backfill, cap, want int }{
		{0, 0, feed.DefaultBackfill}, {50, 0, 50}, {500, 100, 100}, {-1, -1, feed.DefaultBackfill},
	} {
		if got := feed.BackfillSize(c.backfill, c.cap); got != c.want {
			t.Errorf("BackfillSize(%d, %d) = %d, want %d", c.backfill, c.cap, got, c.want)
		}
	}
}
