package http

// The content filters of the native API: the caller's muted words, and
// reports of posts.

import (
	"context"
	"net/http"

	feed "github.com/feedd/feedd"
)

// V1MutedWords is the caller's muted words.
type V1MutedWords struct {
	Data []string `json:"data"`
}

func (s *Server) v1MutedWords() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		words, err := s.Service.MutedWords(r.Context(), userID(r))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1MutedWords{Data: words})
	})
}

// v1SetMutedWord mutes or unmutes the {word} path value (percent-decoded).
func (s *Server) v1SetMutedWord(mute bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.Service.SetMutedWord(r.Context(), userID(r), r.PathValue("word"), mute); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) v1Report() http.Handler { return s.v1ReportOf(s.Service.Report) }

// v1ReportOf serves a report of the {id} resource with report: a post's
// or a comment's.
func (s *Server) v1ReportOf(report func(ctx context.Context, userID, id int64, reason string) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		var in struct {
			Reason string `json:"reason"`
		}
		if err == nil {
			err = v1Decode(r, &in)
		}
		if err == nil {
			err = report(r.Context(), userID(r), id, in.Reason)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// timelineOrder parses the order and explain parameters of /v1/timeline.
func timelineOrder(r *http.Request) (ranked, explain bool, err error) {
	order, _, err := queryOne(r, "order")
	if err != nil {
		return false, false, err
	}
	switch order {
	case "", "chronological":
	case "ranked":
		ranked = true
	default:
		return false, false, feed.Errorf(feed.EINVALID, "order must be chronological or ranked")
	}
	ex, _, err := queryOne(r, "explain")
	switch {
	case err != nil:
		return false, false, err
	case ex != "" && ex != "true" && ex != "false":
		return false, false, feed.Errorf(feed.EINVALID, "explain must be true or false")
	case ex == "true" && !ranked:
		return false, false, feed.Errorf(feed.EINVALID, "explain=true needs order=ranked")
	}
	return ranked, ex == "true", nil
}
