package http

import "net/http"

// routes is the whole HTTP surface of feedd in one place.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	auth, opt := s.requireUser, s.optionalUser

	mux.Handle("GET /healthz", s.handleHealthz())

	// Compatible API (../shared/API.md).
	mux.Handle("POST /user/code", s.handleSendCode())
	mux.Handle("POST /user/login", s.handleLogin())
	mux.Handle("POST /user/logout", auth(s.handleLogout()))
	mux.Handle("GET /user/me", auth(s.handleMe()))
	mux.Handle("GET /user/{id}", auth(s.handleUser()))
	mux.Handle("GET /user/info/{id}", auth(s.handleUserInfo()))

	mux.Handle("POST /blog", auth(s.handlePublish()))
	mux.Handle("GET /blog/{id}", auth(s.handleBlog()))
	mux.Handle("DELETE /blog/{id}", auth(s.handleDeleteBlog()))
	mux.Handle("PUT /blog/like/{id}", auth(s.handleLike()))
	mux.Handle("GET /blog/likes/{id}", auth(s.handleLikers()))
	mux.Handle("GET /blog/of/me", auth(s.handleBlogsOfMe()))
	mux.Handle("GET /blog/of/user", auth(s.handleBlogsOfUser()))
	mux.Handle("GET /blog/hot", opt(s.handleHot()))
	mux.Handle("GET /blog/of/follow", auth(s.handleFollowFeed()))

	mux.Handle("PUT /follow/{id}/{isFollow}", auth(s.handleFollow()))
	mux.Handle("GET /follow/or/not/{id}", auth(s.handleIsFollowing()))
	mux.Handle("GET /follow/common/{id}", auth(s.handleCommonFollows()))

	for pattern, h := range s.Extra {
		mux.Handle(pattern, h)
	}
	mux.Handle("/", s.handleNotFound())
	return s.limitBody(mux)
}
