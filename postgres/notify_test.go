package postgres_test

import (
	"testing"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/postgres"
)

// openNotify opens a fresh backend recording notifications with s, its
// notices collected.
func openNotify(t *testing.T, s feed.NotifySettings) *feedtest.NotifyBackend {
	b := openBackend(t)
	db := b.Users.(*postgres.DB)
	db.Notify = s
	return feedtest.NewNotifyBackend(b, db, &db.Notified)
}

func TestNotifications(t *testing.T) { feedtest.TestNotifications(t, openNotify) }

func TestNotifyConcurrentLikes(t *testing.T) { feedtest.TestNotifyConcurrentLikes(t, openNotify, 1000) }

func TestCommentNotifications(t *testing.T) { feedtest.TestCommentNotifications(t, openNotify) }

func TestNotifyMuteRace(t *testing.T) {
	for range 5 {
		feedtest.TestNotifyMuteRace(t, openNotify, 100)
	}
}

func TestVisibility(t *testing.T) { feedtest.TestVisibility(t, openNotify) }
func TestMarkers(t *testing.T)    { feedtest.TestMarkers(t, openNotify) }

func TestPush(t *testing.T)                { feedtest.TestPush(t, openNotify) }
func TestRepostNotifications(t *testing.T) { feedtest.TestRepostNotifications(t, openNotify) }
