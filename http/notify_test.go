package http

import (
	"testing"

	feed "github.com/feedd/feedd"
)

func TestLatestNotifications(t *testing.T) {
	n := func(g int64) feed.Event { return feed.NoticeEvent(feed.Notice{UserID: 1, GroupID: g}) }
	post := feed.Event{Kind: feed.EventPost, Entry: feed.Entry{PostID: 1}}
	got := latestNotifications([]feed.Event{n(1), post, n(2), n(1), post, n(1)})
	want := map[int]bool{2: true, 5: true}
	if len(got) != len(want) || !got[2] || !got[5] {
		t.Fatalf("latestNotifications = %v, want %v", got, want)
	}
}
