package http

import (
	"net/http"

	feed "github.com/feedd/feedd"
)

func (s *Server) handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Health != nil {
			if err := s.Health(r.Context()); err != nil {
				s.Log.Error("health check failed", "error", err)
				s.encode(w, http.StatusServiceUnavailable, envelope{ErrorMsg: "unavailable"})
				return
			}
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleNotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.encode(w, http.StatusNotFound, envelope{ErrorMsg: "no such endpoint"})
	})
}

func (s *Server) handleSendCode() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Service.SendCode(r.Context(), r.URL.Query().Get("phone")); err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleLogin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Phone string `json:"phone"`
			Code  string `json:"code"`
		}
		if err := decode(r, &in); err != nil {
			s.fail(w, r, err)
			return
		}
		tok, err := s.Service.Login(r.Context(), in.Phone, in.Code)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, tok)
	})
}

func (s *Server) handleLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Service.Logout(r.Context(), token(r)); err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleMe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.Service.User(r.Context(), userID(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, userDTO(u))
	})
}

// pathUser loads the user named by the {id} path value.
func (s *Server) pathUser(r *http.Request) (*feed.User, error) {
	id, err := parseID("id", r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return s.Service.User(r.Context(), id)
}

func (s *Server) handleUser() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.pathUser(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, userDTO(u))
	})
}

func (s *Server) handleUserInfo() http.Handler {
	type userInfo struct {
		UserID    int64  `json:"userId"`
		City      string `json:"city"`
		Introduce string `json:"introduce"`
		Fans      int    `json:"fans"`
		Followee  int    `json:"followee"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.pathUser(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, userInfo{UserID: u.ID, City: u.City, Introduce: u.Introduce, Fans: u.Fans, Followee: u.Followee})
	})
}

func (s *Server) handlePublish() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Title   string `json:"title"`
			Content string `json:"content"`
			Images  string `json:"images"`
			ShopID  int64  `json:"shopId"`
		}
		if err := decode(r, &in); err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := s.Service.Publish(r.Context(), userID(r), feed.PostInput{Title: in.Title, Content: in.Content, Images: in.Images, ShopID: in.ShopID})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, p.ID)
	})
}

func (s *Server) handleBlog() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := s.Service.Post(r.Context(), userID(r), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, NewBlog(*v))
	})
}

func (s *Server) handleDeleteBlog() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = s.Service.DeletePost(r.Context(), userID(r), id)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleLike() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			_, err = s.Service.ToggleLike(r.Context(), userID(r), id)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleLikers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		us, err := s.Service.Likers(r.Context(), userID(r), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, userDTOs(us))
	})
}

// current parses the page number; absent means 1.
func current(r *http.Request) (int, error) {
	n, err := queryInt(r, "current", 1)
	if err != nil || n < 1 {
		return 0, feed.Errorf(feed.EINVALID, "current must be a page number from 1")
	}
	return n, nil
}

func (s *Server) handleBlogsOfMe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := current(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		vs, err := s.Service.PostsOfUser(r.Context(), userID(r), userID(r), page)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, blogs(vs))
	})
}

func (s *Server) handleBlogsOfUser() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.URL.Query().Get("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		page, err := current(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		vs, err := s.Service.PostsOfUser(r.Context(), userID(r), id, page)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, blogs(vs))
	})
}

func (s *Server) handleHot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := current(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		vs, err := s.Service.HotPosts(r.Context(), userID(r), page)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, blogs(vs))
	})
}

// handleFollowFeed authenticates the request itself, as requireUser would
// (ScrollFeedAs: the session and the first inbox page in one round trip).
func (s *Server) handleFollowFeed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur, size, err := scrollQuery(r)
		if err != nil {
			if _, aerr := s.Service.Authenticate(r.Context(), token(r)); aerr != nil {
				s.failAuth(w, r, aerr)
			} else {
				s.fail(w, r, err)
			}
			return
		}
		id, page, err := s.Service.ScrollFeedAs(r.Context(), token(r), cur, size)
		if id == 0 && err != nil {
			s.failAuth(w, r, err)
			return
		}
		r = withUser(r, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if page == nil {
			s.ok(w, nil) // no data: the client stops scrolling
			return
		}
		s.ok(w, ScrollResult{List: blogs(page.List), MinTime: page.MinTime, Offset: page.Offset})
	})
}

func (s *Server) handleFollow() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var follow bool
		switch r.PathValue("isFollow") {
		case "true":
			follow = true
		case "false":
		default:
			s.fail(w, r, feed.Errorf(feed.EINVALID, "isFollow must be true or false"))
			return
		}
		if err := s.Service.Follow(r.Context(), userID(r), id, follow); err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, nil)
	})
}

func (s *Server) handleIsFollowing() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		yes, err := s.Service.IsFollowing(r.Context(), userID(r), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, yes)
	})
}

func (s *Server) handleCommonFollows() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		us, err := s.Service.CommonFollows(r.Context(), userID(r), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.ok(w, userDTOs(us))
	})
}

// scrollQuery parses the query of /blog/of/follow: lastId (required),
// offset and size (optional; size 0 is the default page size). The cursor's
// ranges are checked by the service (feed.ScrollCursor.Validate,
// feed.ValidPageSize).
func scrollQuery(r *http.Request) (feed.ScrollCursor, int, error) {
	lastID, err := parseID("lastId", r.URL.Query().Get("lastId"))
	if err != nil {
		return feed.ScrollCursor{}, 0, err
	}
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return feed.ScrollCursor{}, 0, err
	}
	size, err := queryInt(r, "size", 0)
	if err == nil && r.URL.Query().Has("size") && size == 0 {
		err = feed.Errorf(feed.EINVALID, "size must be an integer from 1 to %d", feed.MaxPageSize)
	}
	if err != nil {
		return feed.ScrollCursor{}, 0, err
	}
	return feed.ScrollCursor{LastID: lastID, Offset: offset}, size, nil
}
