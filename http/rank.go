package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// v1RankedTimeline serves GET /v1/timeline?order=ranked: a page of the
// caller's ranked timeline under a ranked cursor, the next page's URL in a
// Link header, and with explain each post's rank.
func (s *Server) v1RankedTimeline(w http.ResponseWriter, r *http.Request, limit int, explain bool) {
	var after *rank.Cursor
	if v, ok, err := queryOne(r, "cursor"); err != nil {
		s.v1Fail(w, r, err)
		return
	} else if ok {
		c, err := feed.DecodeRankCursor(v)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		after = &c
	}
	page, err := s.Service.RankedTimeline(r.Context(), userID(r), after, limit)
	if err != nil {
		s.v1Fail(w, r, err)
		return
	}
	out := V1Page[V1Post]{Data: v1Posts(page.List)}
	if explain {
		for i, v := range page.List {
			out.Data[i].Rank = v.Rank
		}
	}
	if page.Next != nil {
		c := rank.EncodeCursor(*page.Next)
		out.NextCursor = &c
		next := url.Values{"order": {"ranked"}, "cursor": {c}, "limit": {strconv.Itoa(limit)}}
		if explain {
			next.Set("explain", "true")
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, r.URL.EscapedPath(), next.Encode()))
	}
	s.v1JSON(w, http.StatusOK, out)
}
