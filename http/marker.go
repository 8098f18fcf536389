package http

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	feed "github.com/feedd/feedd"
)

// The markers of the native API (docs/API.md, "Markers"): where the
// caller stopped reading, in Mastodon's shape.

// V1Marker is one timeline's marker. LastReadID is a post id (an integer)
// for the timeline and a notification key (a string) for the
// notifications.
type V1Marker struct {
	LastReadID any    `json:"last_read_id"`
	Version    int64  `json:"version"`
	UpdatedAt  string `json:"updated_at"`
}

// V1Markers are the caller's markers, by timeline; one not set is absent.
type V1Markers struct {
	Timeline      *V1Marker `json:"timeline,omitempty"`
	Notifications *V1Marker `json:"notifications,omitempty"`
}

// NewV1Markers renders markers.
func NewV1Markers(ms map[string]feed.Marker) V1Markers {
	var out V1Markers
	for t, m := range ms {
		v := &V1Marker{LastReadID: m.LastReadID, Version: m.Version, UpdatedAt: m.UpdatedAt.UTC().Format(timeLayout)}
		switch t {
		case feed.MarkerTimeline:
			out.Timeline = v
		case feed.MarkerNotifications:
			v.LastReadID = feed.NotifyKey(m.LastReadID)
			out.Notifications = v
		}
	}
	return out
}

func (s *Server) v1Markers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms, err := s.Service.UserMarkers(r.Context(), userID(r))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, NewV1Markers(ms))
	})
}

// v1MarkerWrite is one timeline's part of POST /v1/markers.
type v1MarkerWrite struct {
	LastReadID json.RawMessage `json:"last_read_id"`
	Version    *int64          `json:"version"`
}

// v1SetMarkers moves the caller's markers: {"timeline": {"last_read_id":
// ID}, "notifications": {"last_read_id": KEY}}, either or both, each with
// the "version" it read to move it anywhere (without, only forward). It
// answers the markers written and tells the caller's live streams.
func (s *Server) v1SetMarkers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Timeline      *v1MarkerWrite `json:"timeline"`
			Notifications *v1MarkerWrite `json:"notifications"`
		}
		err := v1Decode(r, &in)
		var writes []feed.MarkerWrite
		for _, p := range []struct {
			name string
			in   *v1MarkerWrite
		}{{feed.MarkerTimeline, in.Timeline}, {feed.MarkerNotifications, in.Notifications}} {
			if err != nil || p.in == nil {
				continue
			}
			wr := feed.MarkerWrite{Timeline: p.name}
			if p.in.Version != nil {
				wr.Version, wr.HasVersion = *p.in.Version, true
			}
			wr.LastReadID, err = markerID(p.name, p.in.LastReadID)
			writes = append(writes, wr)
		}
		var ms map[string]feed.Marker
		if err == nil {
			ms, err = s.Service.SetMarkers(r.Context(), userID(r), writes)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.publishMarker(r.Context(), userID(r))
		s.v1JSON(w, http.StatusOK, NewV1Markers(ms))
	})
}

// markerID parses a marker's last_read_id: a post id (an integer, or its
// decimal string as Mastodon's clients send it) for the timeline, a
// notification key for the notifications.
func markerID(timeline string, raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, feed.Errorf(feed.EINVALID, "%s.last_read_id is required", timeline)
	}
	var str string
	strErr := json.Unmarshal(raw, &str)
	if timeline == feed.MarkerNotifications {
		if strErr != nil {
			return 0, feed.Errorf(feed.EINVALID, "notifications.last_read_id must be a notification key")
		}
		return feed.ParseNotifyKey(str)
	}
	var id int64
	if strErr == nil {
		n, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return 0, feed.Errorf(feed.EINVALID, "timeline.last_read_id must be a post id")
		}
		return n, nil
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return 0, feed.Errorf(feed.EINVALID, "timeline.last_read_id must be a post id")
	}
	return id, nil
}

// publishMarker tells userID's live streams that a marker moved; best
// effort, as every live event is: a stream that misses it reads the
// markers when it reconnects.
func (s *Server) publishMarker(ctx context.Context, userID int64) {
	if s.Streams == nil || s.Streams.Events == nil {
		return
	}
	if err := s.Streams.Events.Publish(context.WithoutCancel(ctx), feed.MarkerEvent(userID)); err != nil {
		s.Log.Warn("marker event", "user_id", userID, "error", err)
	}
}

// streamMarkers sends the caller's markers as a marker event.
func (s *Server) streamMarkers(ctx context.Context, uid int64, out *sse) error {
	ms, err := s.Service.UserMarkers(ctx, uid)
	if err != nil {
		return err
	}
	return out.event("marker", "", NewV1Markers(ms))
}
