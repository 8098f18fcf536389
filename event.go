package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Kinds of timeline events.
const (
	// EventPost: an entry landed in timelines.
	EventPost = "post"
	// EventDelete: the post of an entry was deleted.
	EventDelete = "delete"
	// EventNotification: a notification group of Users[0] was created,
	// changed or removed; Entry.PostID is the group's id (notify.go).
	EventNotification = "notification"
	// EventRevoke: the live streams of Users must end, because their own
	// act changed what they may show: a session ended (logout), or they
	// set or lifted a block. Their clients reconnect, authenticated and
	// filtered anew. What others do never revokes a user's streams.
	EventRevoke = "revoke"
	// EventMarker: a marker of Users[0] changed (marker.go); its streams
	// read the markers anew.
	EventMarker = "marker"
)

// Event tells live streams that an entry landed in, or left, timelines.
// It is a notification, not the post: a stream hydrates the entry for its
// own viewer, as the timeline read would.
//
// It reaches the streams of every user in Users (fan-out deliveries, an
// author's own post, deletes), and, when Author is set, of every user that
// follows Author in pull mode (a pull-mode author's post is in no inbox: it
// is merged at read time).
type Event struct {
	Kind   string
	Entry  Entry
	Users  []int64
	Author int64
}

// wireEvent is an Event between processes, kept short: one Publish may
// carry a thousand user ids.
type wireEvent struct {
	Kind   string  `json:"k"`
	Score  int64   `json:"s"`
	PostID int64   `json:"p"`
	Users  []int64 `json:"u,omitempty"`
	Author int64   `json:"a,omitempty"`
}

// EventService carries timeline events from where entries land (fan-out
// workers, in any process) to the live streams of the users whose
// timelines they land in (API processes). Delivery is best effort and at
// most once per subscription: a stream that misses events (a slow reader,
// a lost connection to the broker) is ended, and its client reconnects
// with Last-Event-ID to replay what it missed from the timeline itself.
//
// Implementations: inmem.Events (one process, the embedded default),
// redis.Events (Redis pub/sub), postgres.Events (LISTEN/NOTIFY).
type EventService interface {
	// Publish sends ev to the subscriptions it concerns. One call per
	// inbox write, whatever the number of users in ev.Users.
	Publish(ctx context.Context, ev Event) error
	// Subscribe returns the events of userID's timeline: those naming
	// userID, and those of the pull-mode authors in authors.
	Subscribe(ctx context.Context, userID int64, authors []int64) (Subscription, error)
}

// Subscription is one live stream's feed of events.
type Subscription interface {
	// Events yields the events in the order they were published. It is
	// closed when the subscription ends: Close was called, or events were
	// lost (the reader fell behind, the broker connection dropped), after
	// which Err says why.
	Events() <-chan Event
	// Err is nil until Events is closed for another reason than Close.
	Err() error
	// Close ends the subscription. Idempotent.
	Close()
}

// ErrEventsLost ends a subscription whose events could not all be delivered.
var ErrEventsLost = errors.New("live events were lost; reconnect with Last-Event-ID")

// MarshalEvent is the wire form of an event between processes: the JSON
// of wireEvent, written by hand (appendWireEvent) for the two kinds.
func MarshalEvent(ev Event) ([]byte, error) {
	if ev.Kind != EventPost && ev.Kind != EventDelete {
		return json.Marshal(wireEvent{Kind: ev.Kind, Score: ev.Entry.Score, PostID: ev.Entry.PostID, Users: ev.Users, Author: ev.Author})
	}
	return appendWireEvent(make([]byte, 0, 48+len(ev.Users)*8), ev), nil
}

// UnmarshalEvent parses the wire form of an event: the form MarshalEvent
// writes by a parser of its own (parseWireEvent), anything else as JSON.
func UnmarshalEvent(b []byte) (Event, error) {
	if ev, ok := parseWireEvent(b); ok {
		return ev, nil
	}
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, err
	}
	if w.Kind != EventPost && w.Kind != EventDelete && w.Kind != EventNotification && w.Kind != EventRevoke && w.Kind != EventMarker {
		return Event{}, fmt.Errorf("unknown event kind %q", w.Kind)
	}
	return Event{Kind: w.Kind, Entry: Entry{Score: w.Score, PostID: w.PostID}, Users: w.Users, Author: w.Author}, nil
}

// StreamCatchUp returns the entries of userID's timeline that come before
// c in feed order (newer than c), oldest first: what a stream that last
// sent c missed. It reads at most max entries' worth of the newest ones
// (the older are reported as dropped, and skipped: a stream cannot replay
// more than an inbox holds anyway).
func (s *Service) StreamCatchUp(ctx context.Context, userID int64, c Cursor, max int) (views []PostView, err error) {
	var after *Cursor
	for len(views) < max {
		page, err := s.Timeline(ctx, userID, after, min(MaxTimelineLimit, max-len(views)))
		if err != nil {
			return nil, err
		}
		for _, v := range page.List {
			if !v.FeedEntry.Before(c) {
				slices.Reverse(views)
				return views, nil
			}
			views = append(views, v)
		}
		if page.Next == nil || !page.Next.Before(c) {
			break
		}
		after = page.Next
	}
	slices.Reverse(views)
	return views, nil
}

// StreamViews hydrates entries for userID as their timeline would show
// them, in the order given, dropping those that no longer belong there
// (deleted, muted, blocked, unfollowed).
func (s *Service) StreamViews(ctx context.Context, userID int64, entries []Entry) ([]PostView, error) {
	return s.hydrateEntries(ctx, userID, entries)
}

// StreamAuthors returns the pull-mode authors userID follows: a stream
// subscribes to their posts, which are in no inbox.
func (s *Service) StreamAuthors(ctx context.Context, userID int64) ([]int64, error) {
	return s.Social.PullFollowees(ctx, userID)
}
