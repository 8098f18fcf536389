package feedtest

import (
	"context"
	"slices"

	feed "github.com/feedd/feedd"
)

// Model is the reference implementation of feed.Inbox: plain maps, sorted on
// every read. TestInbox compares a real inbox against it operation by
// operation. It is not safe for concurrent use.
type Model struct {
	inboxes map[int64]map[feed.Entry]bool
	cap     int // 0: keep everything
}

var _ feed.Inbox = (*Model)(nil)

// NewModel returns an empty model inbox that keeps every entry.
func NewModel() *Model { return &Model{inboxes: map[int64]map[feed.Entry]bool{}} }

// NewCappedModel returns an empty model inbox that keeps cap entries per
// user, exactly: every Deliver, Add and Restore trims to cap (a slack of 0).
func NewCappedModel(cap int) *Model {
	m := NewModel()
	m.cap = cap
	return m
}

// keepCap trims the inboxes of userIDs to the model's cap, if it has one.
func (m *Model) keepCap(userIDs ...int64) {
	if m.cap > 0 {
		for _, u := range userIDs {
			m.Trim(context.Background(), u, m.cap)
		}
	}
}

func (m *Model) inbox(userID int64) map[feed.Entry]bool {
	ib := m.inboxes[userID]
	if ib == nil {
		ib = map[feed.Entry]bool{}
		m.inboxes[userID] = ib
	}
	return ib
}

// Deliver implements feed.Inbox.
func (m *Model) Deliver(_ context.Context, e feed.Entry, userIDs []int64) error {
	for _, u := range userIDs {
		m.inbox(u)[e] = true
	}
	m.keepCap(userIDs...)
	return nil
}

// Add implements feed.Inbox.
func (m *Model) Add(_ context.Context, userID int64, entries []feed.Entry) error {
	for _, e := range entries {
		m.inbox(userID)[e] = true
	}
	m.keepCap(userID)
	return nil
}

// Remove implements feed.Inbox.
func (m *Model) Remove(_ context.Context, e feed.Entry, userIDs []int64) error {
	for _, u := range userIDs {
		delete(m.inbox(u), e)
	}
	return nil
}

// Clear implements feed.Inbox.
func (m *Model) Clear(_ context.Context, userID int64) error {
	delete(m.inboxes, userID)
	return nil
}

// All returns userID's whole inbox in feed order.
func (m *Model) All(userID int64) []feed.Entry {
	out := make([]feed.Entry, 0, len(m.inboxes[userID]))
	for e := range m.inboxes[userID] {
		out = append(out, e)
	}
	SortEntries(out)
	return out
}

// Page implements feed.Inbox.
func (m *Model) Page(_ context.Context, userID int64, b feed.Bound, offset, limit int) ([]feed.Entry, error) {
	out := []feed.Entry{}
	for _, e := range m.All(userID) {
		if !b.Admits(e) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// Trim implements feed.Inbox.
func (m *Model) Trim(_ context.Context, userID int64, cap int) error {
	for i, e := range m.All(userID) {
		if i >= cap {
			delete(m.inboxes[userID], e)
		}
	}
	return nil
}

// SortEntries sorts entries in feed order: score descending, then post id
// descending (numerically).
func SortEntries(entries []feed.Entry) {
	slices.SortFunc(entries, feed.CompareEntries)
}

// Restore implements feed.Inbox: the model is never lost.
func (m *Model) Restore(ctx context.Context, userID int64, entries []feed.Entry) error {
	return m.Add(ctx, userID, entries)
}
