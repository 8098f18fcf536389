package feed_test

import (
	"testing"

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
