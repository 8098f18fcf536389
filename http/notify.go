package http

import (
	"context"
	"net/http"

	feed "github.com/feedd/feedd"
)

// The notification routes of the native API (docs/API.md, "Notifications").

// V1Notification is a notification group as its user sees it.
type V1Notification struct {
	Key    string   `json:"key"`
	Kind   string   `json:"kind"`
	Count  int      `json:"count"`
	Actors []V1User `json:"actors"`
	Post   *V1Post  `json:"post"`
	// Comment is a reply group's answered comment (the caller's own); null
	// for the other kinds.
	Comment *V1NotifiedComment `json:"comment"`
	// Action is a moderation group's last decision: hidden or restored.
	Action   string `json:"action,omitempty"`
	LatestAt string `json:"latest_at"`
	Unread   bool   `json:"unread"`
}

// V1NotifiedComment is the comment a reply group answers.
type V1NotifiedComment struct {
	ID   int64  `json:"id"`
	Text string `json:"text"`
}

// V1NotificationGone is the data of a stream's notification event for a
// group that no longer exists (its last actor retracted, dismissed, its
// post deleted).
type V1NotificationGone struct {
	Key     string `json:"key"`
	Removed bool   `json:"removed"`
}

// V1Count is a count.
type V1Count struct {
	Count int `json:"count"`
}

// NewV1Notification renders a hydrated group.
func NewV1Notification(v *feed.NotifyView) V1Notification {
	n := V1Notification{
		Key: feed.NotifyKey(v.ID), Kind: v.Kind, Count: v.Count, Actors: v1Users(v.Actors),
		Action: v.Action, LatestAt: v.LatestAt.UTC().Format(timeLayout), Unread: v.Unread,
	}
	if v.Post != nil {
		p := NewV1Post(*v.Post)
		n.Post = &p
	}
	if v.Comment != nil {
		n.Comment = &V1NotifiedComment{ID: v.Comment.ID, Text: v.Comment.Text}
	}
	return n
}

// v1Notifications serves a page of the caller's groups, newest activity
// first, under the opaque cursor of the timeline.
func (s *Server) v1Notifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := queryLimit(r, feed.MaxTimelineLimit)
		var after *feed.Cursor
		if err == nil {
			after, err = queryCursor(r)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		page, err := s.Service.Notifications(r.Context(), userID(r), after, limit)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		out := V1Page[V1Notification]{Data: make([]V1Notification, len(page.List))}
		for i := range page.List {
			out.Data[i] = NewV1Notification(&page.List[i])
		}
		if page.Next != nil {
			c := feed.EncodeCursor(*page.Next)
			out.NextCursor = &c
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}

func (s *Server) v1UnreadNotifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := s.Service.UnreadNotifications(r.Context(), userID(r))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1Count{Count: n})
	})
}

// v1ReadNotifications marks the caller's groups read: all of them up to
// now (no body), or those up to the latest activity of the group named by
// {"key": ...}.
func (s *Server) v1ReadNotifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Key *string `json:"key"`
		}
		var id int64
		var err error
		if r.ContentLength != 0 {
			err = v1Decode(r, &in)
		}
		if err == nil && in.Key != nil {
			id, err = feed.ParseNotifyKey(*in.Key)
		}
		if err == nil {
			err = s.Service.MarkNotificationsRead(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) v1DismissNotification() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := feed.ParseNotifyKey(r.PathValue("key"))
		if err == nil {
			err = s.Service.DismissNotification(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// latestNotifications marks, in a batch of a stream's events, the last
// notification event of each group: a burst of likes of one post is one
// read and one event per batch, not one per like.
func latestNotifications(batch []feed.Event) map[int]bool {
	last := map[int64]int{}
	for i, ev := range batch {
		if ev.Kind == feed.EventNotification {
			last[ev.Entry.PostID] = i
		}
	}
	out := make(map[int]bool, len(last))
	for _, i := range last {
		out[i] = true
	}
	return out
}

// streamNotification sends group groupID of uid as a notification event:
// the group as the list shows it, or {"key", "removed": true} when it is
// gone.
func (s *Server) streamNotification(ctx context.Context, uid int64, out *sse, groupID int64) error {
	v, err := s.Service.NotificationGroup(ctx, uid, groupID)
	if feed.ErrorCode(err) == feed.ENOTFOUND {
		return out.event("notification", "", V1NotificationGone{Key: feed.NotifyKey(groupID), Removed: true})
	} else if err != nil {
		return err
	}
	return out.event("notification", "", NewV1Notification(v))
}
