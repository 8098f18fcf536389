package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	feed "github.com/feedd/feedd"
)

// V1AroundPage is a page of the timeline read around a position
// (around=ID) or before a cursor (before=CURSOR).
type V1AroundPage struct {
	Data []V1Post `json:"data"`
	// NextCursor continues after the page (older), as cursor=; null at
	// the end.
	NextCursor *string `json:"next_cursor"`
	// PrevCursor continues before the page (newer), as before=; always
	// set.
	PrevCursor string `json:"prev_cursor"`
	// NewerCount is how many posts come before the page.
	NewerCount int `json:"newer_count"`
}

// v1TimelineAround serves GET /v1/timeline?around=ID (the page centred on
// a post: where the caller stopped reading) and ?before=CURSOR (the page
// of newer posts before a cursor), both chronological, with the cursors of
// both ways in the body and a Link header.
func (s *Server) v1TimelineAround() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := queryLimit(r, feed.MaxTimelineLimit)
		ranked, _, oerr := timelineOrder(r)
		if err == nil {
			err = oerr
		}
		if err == nil && ranked {
			err = feed.Errorf(feed.EINVALID, "around and before read the chronological timeline: leave out order=ranked")
		}
		around, hasAround, aerr := queryOne(r, "around")
		before, hasBefore, berr := queryOne(r, "before")
		_, hasCursor, _ := queryOne(r, "cursor")
		for _, e := range []error{aerr, berr} {
			if err == nil {
				err = e
			}
		}
		if err == nil && (hasAround && hasBefore || hasCursor) {
			err = feed.Errorf(feed.EINVALID, "give one of cursor, around and before")
		}
		var page *feed.AroundPage
		if err == nil && hasAround {
			var id int64
			if id, err = parseID("around", around); err == nil {
				page, err = s.Service.TimelineAround(r.Context(), userID(r), id, limit)
			}
		} else if err == nil {
			var c feed.Cursor
			if c, err = feed.DecodeCursor(before); err == nil {
				page, err = s.Service.TimelineBefore(r.Context(), userID(r), c, limit)
			}
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		if limit == 0 {
			limit = feed.DefaultTimelineLimit
		}
		out := V1AroundPage{Data: v1Posts(page.List), PrevCursor: feed.EncodeCursor(*page.Prev), NewerCount: page.Newer}
		prev := url.Values{"before": {out.PrevCursor}, "limit": {strconv.Itoa(limit)}}
		link := fmt.Sprintf(`</v1/timeline?%s>; rel="prev"`, prev.Encode())
		if page.Next != nil {
			c := feed.EncodeCursor(*page.Next)
			out.NextCursor = &c
			next := url.Values{"cursor": {c}, "limit": {strconv.Itoa(limit)}}
			link = fmt.Sprintf(`</v1/timeline?%s>; rel="next", `, next.Encode()) + link
		}
		w.Header().Set("Link", link)
		s.v1JSON(w, http.StatusOK, out)
	})
}
