package http

// Moderation for the admin listener: the list of reported posts, and
// hiding and restoring a post. These handlers check no user: whoever
// reaches the admin listener is an admin, so they must never be mounted on
// the public API (AdminRoutes returns them for the admin listener to mount).
// Responses are in the native format.

import (
	"context"
	"net/http"
	"strconv"

	feed "github.com/feedd/feedd"
)

// V1ReportedPost is a post in the moderation list.
type V1ReportedPost struct {
	PostID     int64  `json:"post_id"`
	AuthorID   int64  `json:"author_id"`
	Title      string `json:"title"`
	Reports    int    `json:"reports"`
	LastReason string `json:"last_reason"`
	Hidden     bool   `json:"hidden"`
}

// AdminRoutes returns the moderation handlers keyed by their mux pattern:
//
//	GET  /admin/reports?limit=&cursor=   reported or hidden posts, newest first
//	POST /admin/posts/{id}/hide          hide a post from everyone but its author
//	POST /admin/posts/{id}/restore       show it again and clear its reports
//	GET  /admin/comments/reports         reported or hidden comments, newest first
//	POST /admin/comments/{id}/hide       hide a comment from everyone but its author
//	POST /admin/comments/{id}/restore    show it again and clear its reports
//	DELETE /admin/comments/{id}          delete a comment (as its author would)
func (s *Server) AdminRoutes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /admin/reports":             s.adminReports(),
		"POST /admin/posts/{id}/hide":    s.adminModerate(true),
		"POST /admin/posts/{id}/restore": s.adminModerate(false),
		"GET /admin/comments/reports":    s.adminReportedComments(),
		"POST /admin/comments/{id}/hide": s.adminComment(func(ctx context.Context, id int64) error {
			return s.Service.ModerateComment(ctx, id, true)
		}),
		"POST /admin/comments/{id}/restore": s.adminComment(func(ctx context.Context, id int64) error {
			return s.Service.ModerateComment(ctx, id, false)
		}),
		"DELETE /admin/comments/{id}": s.adminComment(s.Service.AdminDeleteComment),
	}
}

func (s *Server) adminReports() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := queryLimit(r, feed.MaxReportedLimit)
		var before int64
		if err == nil {
			before, err = queryAfter(r)
		}
		var list []feed.ReportedPost
		var next int64
		if err == nil {
			list, next, err = s.Service.Reported(r.Context(), before, limit)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		page := V1Page[V1ReportedPost]{Data: make([]V1ReportedPost, len(list))}
		for i, p := range list {
			page.Data[i] = V1ReportedPost{PostID: p.PostID, AuthorID: p.AuthorID, Title: p.Title,
				Reports: p.Reports, LastReason: p.LastReason, Hidden: p.Hidden}
		}
		if next > 0 {
			c := strconv.FormatInt(next, 10)
			page.NextCursor = &c
		}
		s.v1JSON(w, http.StatusOK, page)
	})
}

func (s *Server) adminModerate(hide bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = s.Service.Moderate(r.Context(), id, hide)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
