package feed_test

import (
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// TestNoticeEventWire: a notification event crosses processes (the JSON
// wire form of the event bus) with its kind, group and user.
func TestNoticeEventWire(t *testing.T) {
	ev := feed.NoticeEvent(feed.Notice{UserID: 42, GroupID: 7})
	b, err := feed.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := feed.UnmarshalEvent(b)
	if err != nil || got.Kind != feed.EventNotification || got.Entry.PostID != 7 || len(got.Users) != 1 || got.Users[0] != 42 {
		t.Fatalf("UnmarshalEvent(%s) = %+v, %v", b, got, err)
	}
}

// TestNotifyKey: keys round-trip and anything else is refused.
func TestNotifyKey(t *testing.T) {
	for _, id := range []int64{1, 2, 1 << 40, 1<<63 - 1} {
		k := feed.NotifyKey(id)
		if got, err := feed.ParseNotifyKey(k); err != nil || got != id {
			t.Fatalf("ParseNotifyKey(NotifyKey(%d) = %q) = %d, %v", id, k, got, err)
		}
	}
	for _, bad := range []string{"", "n", "nAAAA", feed.NotifyKey(1) + "x", "x" + feed.NotifyKey(1)[1:], feed.NotifyKey(0), feed.NotifyKey(-3)} {
		if _, err := feed.ParseNotifyKey(bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("ParseNotifyKey(%q): %v, want EINVALID", bad, err)
		}
	}
}

// TestNotifySettings: the zero value is the defaults; negative values are
// refused.
func TestNotifySettings(t *testing.T) {
	var s feed.NotifySettings
	if s.GroupWindow() != feed.DefaultNotifyWindow || s.RetentionPeriod() != feed.DefaultNotifyRetention || s.KeepGroups() != feed.DefaultNotifyKeep || s.Validate() != nil {
		t.Fatalf("zero settings: %v %v %v %v", s.GroupWindow(), s.RetentionPeriod(), s.KeepGroups(), s.Validate())
	}
	if err := (feed.NotifySettings{Window: -1}).Validate(); feed.ErrorCode(err) != feed.EINVALID {
		t.Fatalf("a negative window: %v", err)
	}
}

// TestNotifyStep: what a store writes for an event, from what the user was
// told (the rules of docs/API.md, "Notifications").
func TestNotifyStep(t *testing.T) {
	s := feed.NotifySettings{Window: time.Hour}
	now := time.UnixMilli(10_000_000)
	open := now.Add(-30 * time.Minute)
	for _, c := range []struct {
		name string
		f    feed.NotifyFound
		want feed.NotifyStep
	}{
		{"no group: opens one", feed.NotifyFound{}, feed.NotifyStep{Added: true}},
		{"the newest group closed: opens one", feed.NotifyFound{Newest: 3, NewestFirst: now.Add(-time.Hour)}, feed.NotifyStep{Added: true}},
		{"joins the open group", feed.NotifyFound{Newest: 3, NewestFirst: open}, feed.NotifyStep{Group: 3, Added: true}},
		{"past the renotify window, shown: told again, not counted twice",
			feed.NotifyFound{Newest: 3, NewestFirst: open, InNewest: true}, feed.NotifyStep{Group: 3}},
		{"past the renotify window, retracted: counted again",
			feed.NotifyFound{Newest: 3, NewestFirst: open, InNewest: true, InNewestRetracted: true}, feed.NotifyStep{Group: 3, Added: true}},
		{"a repeat, shown: nothing", feed.NotifyFound{Newest: 3, NewestFirst: open, InNewest: true, Told: 3}, feed.NotifyStep{Skip: true}},
		{"a repeat, retracted: back in its group, silently",
			feed.NotifyFound{Newest: 4, NewestFirst: open, Told: 3, ToldRetracted: true}, feed.NotifyStep{Restore: true, Group: 3, Added: true}},
		{"a repeat in a dismissed group: nothing",
			feed.NotifyFound{Newest: 4, NewestFirst: open, Told: 3, ToldRetracted: true, ToldDismissed: true}, feed.NotifyStep{Skip: true}},
	} {
		if got := s.Step(c.f, now); got != c.want {
			t.Errorf("%s: Step = %+v, want %+v", c.name, got, c.want)
		}
	}
	told, groups := s.TellCutoffs(now)
	if !told.Equal(now.Add(-feed.DefaultRenotifyAfter)) || !groups.Equal(told.Add(-time.Hour)) {
		t.Errorf("TellCutoffs = %v, %v", told, groups)
	}
}
