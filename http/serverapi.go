package http

// The server API under /v1/server/ (docs/integrating.md, "The server
// API"): the app's backend, authenticated by an API key, names users by
// its own refs and acts for any of them. Each key has a budget of work
// (--server-limit-key): a request costs one unit, a batch one per item,
// an export exportCost.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	feed "github.com/feedd/feedd"
)

// serverPrefix is the path of the server API.
const serverPrefix = "/v1/server/"

// exportCost is what an export costs of its key's budget: it reads every
// item of the user.
const exportCost = 1000

type keyCtx int

const apiKeyKey keyCtx = 0

// apiKeyOf returns the request's API key (serverKey put it there).
func apiKeyOf(r *http.Request) *feed.APIKey {
	k, _ := r.Context().Value(apiKeyKey).(*feed.APIKey)
	return k
}

// serverKey authenticates the API key of a server API request (a bearer
// token), counts the request against the key's budget and puts the key in
// the request's context; 401 or 429 otherwise.
func (s *Server) serverKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := bearer(r)
		k, err := s.Service.AuthenticateAPIKey(r.Context(), tok)
		if err != nil {
			if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="feedd server API", error="invalid_token"`)
			}
			s.v1Fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiKeyKey, k)))
	})
}

// charge counts units more of the request's key's budget (the request
// itself was counted by serverKey); false, the refusal written, when over.
func (s *Server) charge(w http.ResponseWriter, r *http.Request, units int) bool {
	if err := s.Service.ChargeAPIKey(r.Context(), apiKeyOf(r), units); err != nil {
		s.v1Fail(w, r, err)
		return false
	}
	return true
}

// v1ItemError is a batch item's refusal.
type v1ItemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// itemError renders err as a batch item's refusal; a fault of the server
// (no code) is told as such, its detail logged.
func (s *Server) itemError(r *http.Request, err error) *v1ItemError {
	if err == nil {
		return nil
	}
	code := feed.ErrorCode(err)
	if code == feed.EINTERNAL {
		s.Log.Error("batch item failed", "path", r.URL.Path, "error", err)
		return &v1ItemError{Code: code, Message: "internal error"}
	}
	return &v1ItemError{Code: code, Message: feed.ErrorMessage(err)}
}

// V1ServerUser is a user as the server API shows it.
type V1ServerUser struct {
	Ref            string `json:"ref"`
	ID             int64  `json:"id"`
	NickName       string `json:"nick_name"`
	Icon           string `json:"icon"`
	FollowerCount  int    `json:"follower_count"`
	FollowingCount int    `json:"following_count"`
	CreatedAt      string `json:"created_at"`
}

// refOf returns the path's {ref} and its user; the refusal is written when
// there is none.
func (s *Server) refOf(w http.ResponseWriter, r *http.Request) (string, int64, bool) {
	ref := r.PathValue("ref")
	id, err := s.Service.UserOfRef(r.Context(), ref)
	if err != nil {
		s.v1Fail(w, r, err)
		return "", 0, false
	}
	return ref, id, true
}

func (s *Server) serverUpsertUsers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Users []struct {
				Ref     string `json:"ref"`
				Name    string `json:"name"`
				Picture string `json:"picture"`
			} `json:"users"`
		}
		if err := v1Decode(r, &in); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		// A batch over the limit is refused below, and costs nothing more.
		if n := len(in.Users); n <= feed.LinkBatch && !s.charge(w, r, n-1) {
			return
		}
		items := make([]feed.UserUpsert, len(in.Users))
		for i, u := range in.Users {
			items[i] = feed.UserUpsert{Ref: u.Ref, Profile: feed.Profile{Name: u.Name, Picture: u.Picture}}
		}
		links, err := s.Service.UpsertUsers(r.Context(), items)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		type result struct {
			Ref     string       `json:"ref"`
			ID      int64        `json:"id,omitempty"`
			Created bool         `json:"created"`
			Error   *v1ItemError `json:"error,omitempty"`
		}
		out := struct {
			Results []result `json:"results"`
		}{make([]result, len(links))}
		for i, l := range links {
			out.Results[i] = result{Ref: items[i].Ref, ID: l.UserID, Created: l.Created, Error: s.itemError(r, l.Err)}
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}

func (s *Server) serverUser() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, id, ok := s.refOf(w, r)
		if !ok {
			return
		}
		u, err := s.Service.User(r.Context(), id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1ServerUser{Ref: ref, ID: u.ID, NickName: u.NickName, Icon: u.Icon,
			FollowerCount: u.Fans, FollowingCount: u.Followee, CreatedAt: u.CreatedAt.UTC().Format(timeLayout)})
	})
}

// serverFollows makes (follow) or removes the follows of a batch of pairs.
func (s *Server) serverFollows(follow bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Pairs []struct {
				Follower string `json:"follower"`
				Followee string `json:"followee"`
			} `json:"pairs"`
		}
		if err := v1Decode(r, &in); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		// A batch over the limit is refused below, and costs nothing more.
		if n := len(in.Pairs); n <= feed.FollowBatchMax && !s.charge(w, r, n-1) {
			return
		}
		pairs := make([]feed.RefPair, len(in.Pairs))
		for i, p := range in.Pairs {
			pairs[i] = feed.RefPair{Follower: p.Follower, Followee: p.Followee}
		}
		errs, err := s.Service.FollowRefs(r.Context(), pairs, follow)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		type result struct {
			OK    bool         `json:"ok"`
			Error *v1ItemError `json:"error,omitempty"`
		}
		out := struct {
			Results []result `json:"results"`
		}{make([]result, len(errs))}
		for i, e := range errs {
			out.Results[i] = result{OK: e == nil, Error: s.itemError(r, e)}
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}

// V1ServerPost is a post of the server API: the native post, as its author
// sees it, with the app's foreign id.
type V1ServerPost struct {
	V1Post
	ForeignID string `json:"foreign_id"`
}

// serverPostView renders p as its author sees it.
func (s *Server) serverPostView(ctx context.Context, p *feed.Post) (V1ServerPost, error) {
	vs, err := s.Service.Hydrate(ctx, p.UserID, []*feed.Post{p})
	if err != nil {
		return V1ServerPost{}, err
	}
	return V1ServerPost{V1Post: NewV1Post(vs[0]), ForeignID: p.ForeignID}, nil
}

func serverPostPath(foreignID string) string {
	return serverPrefix + "posts/" + url.PathEscape(foreignID)
}

func (s *Server) serverPublish() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			v1PostFields
			User      string `json:"user"`
			ForeignID string `json:"foreign_id"`
		}
		if err := v1Decode(r, &in); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		post, err := in.input()
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		p, created, err := s.Service.PublishAs(r.Context(), in.User, in.ForeignID, post)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		v, err := s.serverPostView(r.Context(), p)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.Header().Set("Location", serverPostPath(p.ForeignID))
		status := http.StatusOK // the first post of this foreign id
		if created {
			status = http.StatusCreated
		}
		s.v1JSON(w, status, v)
	})
}

func (s *Server) serverPost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.Service.PostOfForeignID(r.Context(), r.PathValue("foreign_id"))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		v, err := s.serverPostView(r.Context(), p)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, v)
	})
}

func (s *Server) serverDeletePost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Service.DeleteForeign(r.Context(), r.PathValue("foreign_id")); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// serverTimeline reads the {ref} user's timeline as /v1/timeline would for
// them (server-side rendering).
func (s *Server) serverTimeline() http.Handler {
	read := s.v1TimelineOf(func(r *http.Request, after *feed.Cursor, limit int) (int64, *feed.Page, error) {
		page, err := s.Service.Timeline(r.Context(), userID(r), after, limit)
		return userID(r), page, err
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id, ok := s.refOf(w, r)
		if !ok {
			return
		}
		read.ServeHTTP(w, withUser(r, id))
	})
}

func (s *Server) serverRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id, ok := s.refOf(w, r)
		if !ok {
			return
		}
		if err := s.Service.RevokeUser(r.Context(), id); err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.endStreamsOf(r.Context(), id)
		w.WriteHeader(http.StatusNoContent)
	})
}

// serverExport writes the {ref} user's data as one JSON object, a field
// per kind (feed.DataKinds), streamed a page at a time. An error once the
// object has begun cuts the response short (the client sees invalid
// JSON), as no status can be sent any more.
func (s *Server) serverExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, id, ok := s.refOf(w, r)
		if !ok || !s.charge(w, r, exportCost-1) {
			return
		}
		rc := http.NewResponseController(w)
		began, kind, items := false, "", 0
		head := func() {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			ref, _ := json.Marshal(ref)
			fmt.Fprintf(w, `{"ref":%s,"user_id":%d,"exported_at":%q`, ref, id, time.Now().UTC().Format(timeLayout))
			began = true
		}
		err := s.Service.Export(r.Context(), id, func(k string, page []feed.ExportItem) error {
			if !began {
				head()
			}
			rc.SetWriteDeadline(time.Now().Add(30 * time.Second)) // each page has its own time
			if k != kind {
				if kind != "" {
					w.Write([]byte("]"))
				}
				fmt.Fprintf(w, ",%q:[", k)
				kind, items = k, 0
			}
			for _, it := range page {
				b, err := json.Marshal(it)
				if err != nil {
					return err
				}
				if items > 0 {
					w.Write([]byte(","))
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
				items++
			}
			return nil
		})
		if err != nil {
			if !began {
				s.v1Fail(w, r, err)
				return
			}
			s.Log.Error("export cut short", "user_id", id, "error", err)
			panic(http.ErrAbortHandler)
		}
		if !began {
			head()
		}
		if kind != "" {
			w.Write([]byte("]"))
		}
		w.Write([]byte("}\n"))
	})
}

// V1Erasure is the progress of a user's erasure.
type V1Erasure struct {
	ID     int64          `json:"id"`
	UserID int64          `json:"user_id"`
	State  string         `json:"state"` // running or done
	Step   *string        `json:"step"`  // the kind under way; null when done or not begun
	Counts map[string]int `json:"counts"`
	// Steps are the kinds an erasure removes, in order (feed.DataKinds).
	Steps      []string `json:"steps"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
	FinishedAt *string  `json:"finished_at"`
}

func newV1Erasure(e *feed.Erasure) V1Erasure {
	out := V1Erasure{ID: e.ID, UserID: e.UserID, State: "running", Counts: e.Counts,
		CreatedAt: e.CreatedAt.UTC().Format(timeLayout), UpdatedAt: e.UpdatedAt.UTC().Format(timeLayout)}
	if out.Counts == nil {
		out.Counts = map[string]int{}
	}
	for _, k := range feed.DataKinds {
		if k.Erase {
			out.Steps = append(out.Steps, k.Name)
		}
	}
	if e.Step != "" {
		out.Step = &e.Step
	}
	if e.Done() {
		out.State = "done"
		f := e.FinishedAt.UTC().Format(timeLayout)
		out.FinishedAt = &f
	}
	return out
}

func serverErasurePath(id int64) string {
	return serverPrefix + "erasures/" + strconv.FormatInt(id, 10)
}

// serverErase starts the erasure of the {ref} user (or finds the one under
// way) and answers 202 with its progress; the user's live streams end.
func (s *Server) serverErase() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id, ok := s.refOf(w, r)
		if !ok {
			return
		}
		e, err := s.Service.StartErasure(r.Context(), id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.endStreamsOf(r.Context(), id)
		w.Header().Set("Location", serverErasurePath(e.ID))
		s.v1JSON(w, http.StatusAccepted, newV1Erasure(e))
	})
}

func (s *Server) serverErasure() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		e, err := s.Service.Erasure(r.Context(), id)
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, newV1Erasure(e))
	})
}
