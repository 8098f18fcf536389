package http

import (
	"net/http"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/web"
)

// routes is the whole HTTP surface of feedd in one place.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// A request's body is read (s.body, body.go) only once the request is
	// admitted (shedding, below) and authenticated: after auth and v1, and
	// on the logins, which need none.
	auth := func(h http.Handler) http.Handler { return s.requireUser(s.body(h)) }
	opt, anon := s.optionalUser, s.anonymousBody

	mux.Handle("GET /healthz", s.handleHealthz())
	mux.Handle("GET /readyz", s.handleReadyz())

	// Compatible API (docs/API.md).
	mux.Handle("POST /user/code", s.handleSendCode())
	mux.Handle("POST /user/login", anon(s.handleLogin()))
	mux.Handle("POST /user/logout", auth(s.endStreams(s.handleLogout())))
	mux.Handle("GET /user/me", auth(s.handleMe()))
	mux.Handle("GET /user/{id}", auth(s.handleUser()))
	mux.Handle("GET /user/info/{id}", auth(s.handleUserInfo()))

	mux.Handle("POST /blog", auth(s.perUser(feed.WritePost, s.handlePublish())))
	mux.Handle("GET /blog/{id}", auth(s.handleBlog()))
	mux.Handle("DELETE /blog/{id}", auth(s.perUser(feed.WriteDelete, s.handleDeleteBlog())))
	mux.Handle("PUT /blog/like/{id}", auth(s.perUser(feed.WriteLike, s.handleLike())))
	mux.Handle("GET /blog/likes/{id}", auth(s.handleLikers()))
	mux.Handle("GET /blog/of/me", auth(s.handleBlogsOfMe()))
	mux.Handle("GET /blog/of/user", auth(s.handleBlogsOfUser()))
	mux.Handle("GET /blog/hot", opt(s.handleHot()))
	mux.Handle("GET /blog/of/follow", s.handleFollowFeed()) // authenticates itself, as auth would

	mux.Handle("PUT /follow/{id}/{isFollow}", auth(s.perUser(feed.WriteFollow, s.handleFollow())))
	mux.Handle("GET /follow/or/not/{id}", auth(s.handleIsFollowing()))
	mux.Handle("GET /follow/common/{id}", auth(s.handleCommonFollows()))

	// Photos (media.go): uploads read their bodies themselves, after the
	// login and the per-user limit.
	mux.Handle("POST /upload/blog", s.requireUser(s.perUser(feed.WriteMedia, s.handleUpload())))
	mux.Handle("GET /upload/blog/delete", auth(s.perUser(feed.WriteMedia, s.handleDeleteUpload())))
	mux.Handle("GET /imgs/{path...}", s.handleImage())

	// Native API (openapi.json): REST resources, snake_case JSON, HTTP statuses.
	v1 := func(h http.Handler) http.Handler { return s.v1RequireUser(s.body(h)) }
	mux.Handle("GET /v1/openapi.json", s.v1OpenAPI())
	mux.Handle("POST /v1/auth/code", anon(s.v1SendCode()))
	mux.Handle("POST /v1/auth/login", anon(s.v1Login()))
	mux.Handle("DELETE /v1/auth/session", v1(s.endStreams(s.v1Logout())))
	mux.Handle("GET /v1/me", v1(s.v1Me()))
	mux.Handle("GET /v1/users/{id}", v1(s.v1UserProfile()))
	mux.Handle("GET /v1/users/{id}/followers", v1(s.v1UserList(feed.FollowersList)))
	mux.Handle("GET /v1/users/{id}/following", v1(s.v1UserList(feed.FollowingList)))
	mux.Handle("GET /v1/users/{id}/posts", v1(s.v1UserPosts()))
	mux.Handle("POST /v1/posts", v1(s.perUser(feed.WritePost, s.v1Publish())))
	mux.Handle("GET /v1/posts/{id}", v1(s.v1Post()))
	mux.Handle("DELETE /v1/posts/{id}", v1(s.perUser(feed.WriteDelete, s.v1DeletePost())))
	mux.Handle("PUT /v1/posts/{id}/like", v1(s.perUser(feed.WriteLike, s.v1SetLike(true))))
	mux.Handle("DELETE /v1/posts/{id}/like", v1(s.perUser(feed.WriteLike, s.v1SetLike(false))))
	mux.Handle("GET /v1/posts/{id}/likes", v1(s.v1Likers()))
	mux.Handle("PUT /v1/posts/{id}/repost", v1(s.perUser(feed.WriteRepost, s.v1Repost(true))))
	mux.Handle("DELETE /v1/posts/{id}/repost", v1(s.perUser(feed.WriteRepost, s.v1Repost(false))))
	mux.Handle("PATCH /v1/posts/{id}", v1(s.perUser(feed.WriteEdit, s.v1PatchPost())))
	mux.Handle("POST /v1/posts/{id}/comments", v1(s.perUser(feed.WriteComment, s.v1AddComment())))
	mux.Handle("GET /v1/posts/{id}/comments", v1(s.v1PostComments()))
	mux.Handle("GET /v1/comments/{id}", v1(s.v1Comment()))
	mux.Handle("GET /v1/comments/{id}/replies", v1(s.v1CommentReplies()))
	mux.Handle("DELETE /v1/comments/{id}", v1(s.perUser(feed.WriteDelete, s.v1DeleteComment())))
	mux.Handle("PUT /v1/comments/{id}/like", v1(s.perUser(feed.WriteLike, s.v1SetCommentLike(true))))
	mux.Handle("DELETE /v1/comments/{id}/like", v1(s.perUser(feed.WriteLike, s.v1SetCommentLike(false))))
	mux.Handle("PUT /v1/comments/{id}/hidden", v1(s.perUser(feed.WriteDelete, s.v1HideComment(true))))
	mux.Handle("DELETE /v1/comments/{id}/hidden", v1(s.perUser(feed.WriteDelete, s.v1HideComment(false))))
	mux.Handle("POST /v1/comments/{id}/report", v1(s.v1ReportComment()))
	mux.Handle("GET /v1/timeline", s.v1Timeline()) // authenticates itself, as v1 would
	mux.Handle("GET /v1/timeline/stream", v1(s.v1TimelineStream()))
	mux.Handle("PUT /v1/following/{id}", v1(s.perUser(feed.WriteFollow, s.v1Follow(true))))
	mux.Handle("DELETE /v1/following/{id}", v1(s.perUser(feed.WriteFollow, s.v1Follow(false))))
	mux.Handle("GET /v1/mutes", v1(s.v1UserList(feed.MutedList)))
	mux.Handle("PUT /v1/mutes/{id}", v1(s.perUser(feed.WriteMute, s.v1Mute(true))))
	mux.Handle("DELETE /v1/mutes/{id}", v1(s.perUser(feed.WriteMute, s.v1Mute(false))))
	mux.Handle("GET /v1/blocks", v1(s.v1UserList(feed.BlockedList)))
	mux.Handle("PUT /v1/blocks/{id}", v1(s.perUser(feed.WriteBlock, s.v1Block(true))))
	mux.Handle("DELETE /v1/blocks/{id}", v1(s.perUser(feed.WriteBlock, s.v1Block(false))))
	mux.Handle("GET /v1/muted-words", v1(s.v1MutedWords()))
	mux.Handle("PUT /v1/muted-words/{word}", v1(s.perUser(feed.WriteMutedWord, s.v1SetMutedWord(true))))
	mux.Handle("DELETE /v1/muted-words/{word}", v1(s.perUser(feed.WriteMutedWord, s.v1SetMutedWord(false))))
	mux.Handle("POST /v1/posts/{id}/report", v1(s.v1Report()))
	mux.Handle("POST /v1/media", s.v1RequireUser(s.perUser(feed.WriteMedia, s.v1Upload())))
	mux.Handle("GET /v1/media/{id}", v1(s.v1Media()))
	mux.Handle("PATCH /v1/media/{id}", v1(s.perUser(feed.WriteMedia, s.v1PatchMedia())))
	mux.Handle("DELETE /v1/media/{id}", v1(s.perUser(feed.WriteMedia, s.v1DeleteMedia())))
	mux.Handle("GET /v1/notifications", v1(s.v1Notifications()))
	mux.Handle("GET /v1/notifications/unread-count", v1(s.v1UnreadNotifications()))
	mux.Handle("POST /v1/notifications/read", v1(s.perUser(feed.WriteNotification, s.v1ReadNotifications())))
	mux.Handle("DELETE /v1/notifications/{key}", v1(s.perUser(feed.WriteNotification, s.v1DismissNotification())))
	mux.Handle("GET /v1/markers", v1(s.v1Markers()))
	mux.Handle("POST /v1/markers", v1(s.perUser(feed.WriteNotification, s.v1SetMarkers())))
	mux.Handle("GET /v1/push/key", v1(s.v1PushKey()))
	mux.Handle("GET /v1/push/subscriptions", v1(s.v1PushSubscriptions()))
	mux.Handle("POST /v1/push/subscriptions", v1(s.perUser(feed.WriteNotification, s.v1Subscribe())))
	mux.Handle("DELETE /v1/push/subscriptions/{id}", v1(s.perUser(feed.WriteNotification, s.v1Unsubscribe())))
	mux.Handle("GET /v1/auth/methods", s.v1AuthMethods())

	// Server API (openapi.json, "server"): the app's backend, with an API key.
	srv := func(h http.Handler) http.Handler { return s.serverKey(s.serverBody(h)) }
	mux.Handle("POST /v1/server/users", srv(s.serverUpsertUsers()))
	mux.Handle("GET /v1/server/users/{ref}", srv(s.serverUser()))
	mux.Handle("DELETE /v1/server/users/{ref}", srv(s.serverErase()))
	mux.Handle("GET /v1/server/users/{ref}/timeline", srv(s.serverTimeline()))
	mux.Handle("GET /v1/server/users/{ref}/export", srv(s.serverExport()))
	mux.Handle("POST /v1/server/users/{ref}/revoke", srv(s.serverRevoke()))
	mux.Handle("POST /v1/server/follows", srv(s.serverFollows(true)))
	mux.Handle("POST /v1/server/unfollows", srv(s.serverFollows(false)))
	mux.Handle("POST /v1/server/posts", srv(s.serverPublish()))
	mux.Handle("GET /v1/server/posts/{foreign_id}", srv(s.serverPost()))
	mux.Handle("DELETE /v1/server/posts/{foreign_id}", srv(s.serverDeletePost()))
	mux.Handle("GET /v1/server/erasures/{id}", srv(s.serverErasure()))
	mux.Handle("/v1/", s.v1NotFound())

	// Single sign-on of feedd's own page (sso.go).
	mux.Handle("GET /auth/sso/start", s.ssoStart())
	mux.Handle("GET /auth/sso/callback", s.ssoCallback())

	// feedd's own web page (web/): the document at exactly / and its
	// assets under /assets/; every other unknown path stays a JSON 404.
	page := web.Handler(s.handleNotFound())
	mux.Handle("GET /{$}", page)
	mux.Handle("GET "+web.Prefix, page)

	for pattern, h := range s.Extra {
		mux.Handle(pattern, h)
	}
	mux.Handle("/", s.handleNotFound())
	// Cross-origin requests and /v1 bodies that are not JSON are refused
	// before anything else (guard.go); limitBody answers an oversized body
	// in the compatible envelope; v1LimitBody answers /v1 requests first,
	// in the native format; holdBody keeps every body unread until a body
	// step reads it.
	return s.harden(mux, s.crossOrigin(s.v1JSONBody(s.shedding(s.v1LimitBody(s.limitBody(holdBody(recordRoute(mux))))))), "/", "/v1/")
}
