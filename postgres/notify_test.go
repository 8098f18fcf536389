package postgres_test

import (
	"sync"
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
	var mu sync.Mutex
	var notices []feed.Notice
	db.Notified = func(ns []feed.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, ns...)
	}
	return &feedtest.NotifyBackend{Backend: b, Notify: db, Notices: func() []feed.Notice {
		mu.Lock()
		defer mu.Unlock()
		out := notices
		notices = nil
		return out
	}}
}

func TestNotifications(t *testing.T) { feedtest.TestNotifications(t, openNotify) }

func TestNotifyConcurrentLikes(t *testing.T) { feedtest.TestNotifyConcurrentLikes(t, openNotify, 1000) }
