package feed

import (
	"context"
	"slices"
	"time"
)

// Markers: where a user stopped reading, kept on the server so that every
// device of the user opens at the same place (Mastodon's markers API).
// A marker names the last item read of one timeline, and keeps its
// position there, so that it still means a place when the item is gone.
//
// Every write makes a new version. A write that names the version it
// read replaces the marker when that is still the stored version, and is
// refused with ECONFLICT otherwise; a write that names none may only move
// the marker forward (to a newer item). Either way two devices never move
// each other backwards by accident.

// Timelines a marker is kept for.
const (
	MarkerTimeline      = "timeline"      // the follow timeline: the last post read
	MarkerNotifications = "notifications" // the notifications: the last group read
)

// MarkerTimelines are the timelines a marker may be set for.
var MarkerTimelines = []string{MarkerTimeline, MarkerNotifications}

// Marker is where a user stopped reading one timeline.
type Marker struct {
	Timeline string
	// LastReadID is a post id (MarkerTimeline) or a notification group id
	// (MarkerNotifications).
	LastReadID int64
	// Position is where LastReadID stood when the marker was set: the
	// post's timeline entry, or the group's cursor (Cursor) then.
	Position  Entry
	Version   int64 // 1 for the first write, one more for each write
	UpdatedAt time.Time
}

// MarkerPut is one marker write: M replaces the stored marker of
// M.Timeline when its version is Prev (0: no marker stored).
type MarkerPut struct {
	M    Marker
	Prev int64
}

// MarkerStore keeps users' markers. Implementations: sqlite.DB,
// postgres.DB; feedtest.TestMarkers is the contract.
type MarkerStore interface {
	// Markers returns userID's markers by timeline (none set: empty).
	Markers(ctx context.Context, userID int64) (map[string]Marker, error)
	// PutMarkers writes every put of userID in one transaction, each
	// only if its timeline's stored version is its Prev: ECONFLICT (and
	// nothing written) otherwise. Writing the notifications marker also
	// sets the notifications' read time to its position's time
	// (NotifyStore.UnreadNotifications counts the groups after it), back
	// as well as forward.
	PutMarkers(ctx context.Context, userID int64, puts []MarkerPut) error
}

// MarkerWrite is what a client asks of one marker: move it to the item
// LastReadID; with HasVersion, only if its version is still Version.
type MarkerWrite struct {
	Timeline   string
	LastReadID int64
	Version    int64
	HasVersion bool
}

func (s *Service) markerStore() (MarkerStore, error) {
	if s.Markers == nil {
		return nil, Errorf(ENOTFOUND, "markers are not enabled")
	}
	return s.Markers, nil
}

// UserMarkers returns userID's markers by timeline.
func (s *Service) UserMarkers(ctx context.Context, userID int64) (map[string]Marker, error) {
	st, err := s.markerStore()
	if err != nil {
		return nil, err
	}
	return st.Markers(ctx, userID)
}

// SetMarkers applies writes (at most one per timeline) for userID and
// returns the markers written. All or nothing: EINVALID for an unknown
// timeline or a bad id, ENOTFOUND when the item is not one userID can
// see, ECONFLICT when a write names a version that is no longer the
// stored one, or names none and would move its marker back. A write that
// names no version and the item already marked changes nothing.
func (s *Service) SetMarkers(ctx context.Context, userID int64, writes []MarkerWrite) (map[string]Marker, error) {
	st, err := s.markerStore()
	if err != nil {
		return nil, err
	}
	if len(writes) == 0 {
		return nil, Errorf(EINVALID, "name at least one of the timelines %v", MarkerTimelines)
	}
	seen := map[string]bool{}
	for _, w := range writes {
		if !markerTimeline(w.Timeline) {
			return nil, Errorf(EINVALID, "timeline must be one of %v", MarkerTimelines)
		}
		if seen[w.Timeline] {
			return nil, Errorf(EINVALID, "timeline %s named twice", w.Timeline)
		}
		seen[w.Timeline] = true
		if err := validID("last_read_id", w.LastReadID); err != nil {
			return nil, err
		}
	}
	cur, err := st.Markers(ctx, userID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := map[string]Marker{}
	var puts []MarkerPut
	for _, w := range writes {
		pos, err := s.markerPosition(ctx, userID, w.Timeline, w.LastReadID)
		if err != nil {
			return nil, err
		}
		old, had := cur[w.Timeline]
		switch {
		case w.HasVersion && w.Version != old.Version:
			return nil, Errorf(ECONFLICT, "the %s marker is at version %d, not %d: read it again", w.Timeline, old.Version, w.Version)
		case !w.HasVersion && had && old.LastReadID == w.LastReadID:
			out[w.Timeline] = old // already there
			continue
		case !w.HasVersion && had && old.Position.Before(pos):
			return nil, Errorf(ECONFLICT, "the %s marker is at a newer item (%d, version %d): send its version to move it back", w.Timeline, old.LastReadID, old.Version)
		}
		m := Marker{Timeline: w.Timeline, LastReadID: w.LastReadID, Position: pos, Version: old.Version + 1, UpdatedAt: now}
		puts = append(puts, MarkerPut{M: m, Prev: old.Version})
		out[w.Timeline] = m
	}
	if len(puts) > 0 {
		if err := st.PutMarkers(ctx, userID, puts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// markerPosition is where item id stands in userID's timeline: a post
// userID may see, at its entry; one of userID's notification groups, at
// its cursor.
func (s *Service) markerPosition(ctx context.Context, userID int64, timeline string, id int64) (Entry, error) {
	if timeline == MarkerNotifications {
		st, err := s.notifyStore()
		if err != nil {
			return Entry{}, err
		}
		g, err := st.NotifyGroup(ctx, userID, id, s.now())
		if err != nil {
			return Entry{}, err
		}
		return g.Cursor(), nil
	}
	p, err := s.shownPost(ctx, userID, id)
	if err != nil {
		return Entry{}, err
	}
	return p.Entry(), nil
}

func markerTimeline(t string) bool { return slices.Contains(MarkerTimelines, t) }

// MarkerEvent is the live event of a marker change of userID: it reaches
// userID's streams, which read the markers anew.
func MarkerEvent(userID int64) Event {
	return Event{Kind: EventMarker, Users: []int64{userID}}
}
