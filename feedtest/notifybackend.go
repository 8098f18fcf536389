package feedtest

import (
	"sync"

	feed "github.com/feedd/feedd"
)

// NotifyBackend is a backend with its notification store.
type NotifyBackend struct {
	*Backend
	// Notify is the store behind Backend's stores, recording with the
	// settings open was given.
	Notify feed.NotifyStore
	// Notices returns the notices the stores handed to their Notified
	// hook since the last call, and forgets them.
	Notices func() []feed.Notice
}

// NewNotifyBackend is b with notify as its NotifyStore; hook is the
// store's Notified field, set here to collect the notices it is handed.
func NewNotifyBackend(b *Backend, notify feed.NotifyStore, hook *func([]feed.Notice)) *NotifyBackend {
	var mu sync.Mutex
	var notices []feed.Notice
	*hook = func(ns []feed.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, ns...)
	}
	return &NotifyBackend{Backend: b, Notify: notify, Notices: func() []feed.Notice {
		mu.Lock()
		defer mu.Unlock()
		out := notices
		notices = nil
		return out
	}}
}
