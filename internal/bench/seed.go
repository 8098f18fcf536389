package bench

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
	feedhttp "github.com/feedd/feedd/http"
)

// SeedHandler is the tutorial's read path of the follow feed (hmdp's
// BlogServiceImpl.queryBlogOfFollow), written on feedd's stores for the
// benchmark only: the range query on the caller's inbox, then one SQL query
// for the posts, then for each post one query for its author and one for
// whether the caller liked it, and the same JSON as feedd's handler.
//
// With rdb, the range query is the tutorial's ZREVRANGEBYSCORE on the
// caller's sorted set of the tutorial's own (seedKey; Read copies there
// what feedd's fan-out put in the caller's inbox, whatever feedd's layout,
// since the tutorial knows only plain sorted sets); without, it
// is feedd's database inbox's Page. The caller is authenticated as feedd's
// handler does it (Service.Authenticate), so the two paths differ only in
// how a page is read and hydrated. The cursor is the tutorial's, with the
// skip carried over a page that ties entirely (feed.NextCursor): as cheap as
// the published bug, and it cannot loop.
func SeedHandler(svc *feed.Service, rdb *goredis.Client, prefix string) http.Handler {
	return &seedRead{svc: svc, rdb: rdb, prefix: prefix}
}

type seedRead struct {
	svc    *feed.Service
	rdb    *goredis.Client
	prefix string
}

type seedEnvelope struct {
	Success  bool   `json:"success"`
	ErrorMsg string `json:"errorMsg,omitempty"`
	Data     any    `json:"data,omitempty"`
}

func (h *seedRead) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(seedEnvelope{ErrorMsg: msg})
}

func (h *seedRead) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tok := strings.TrimSpace(r.Header.Get("Authorization"))
	userID, err := h.svc.Authenticate(ctx, tok)
	if err != nil {
		h.fail(w, http.StatusUnauthorized, "login required")
		return
	}
	max, err := strconv.ParseInt(r.URL.Query().Get("lastId"), 10, 64)
	if err != nil || max <= 0 {
		h.fail(w, http.StatusOK, "lastId must be a positive integer")
		return
	}
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	size := cmp.Or(h.svc.PageSize, 10)

	// 1. The range query.
	var entries []feed.Entry
	if h.rdb != nil {
		zs, err := h.rdb.ZRevRangeByScoreWithScores(ctx, seedKey(h.prefix, userID), &goredis.ZRangeBy{
			Max: strconv.FormatInt(max, 10), Min: "0", Offset: int64(offset), Count: int64(size),
		}).Result()
		if err != nil {
			h.fail(w, http.StatusInternalServerError, "internal error")
			return
		}
		for _, z := range zs {
			id, _ := strconv.ParseInt(z.Member.(string), 10, 64)
			entries = append(entries, feed.Entry{PostID: id, Score: int64(z.Score)})
		}
	} else {
		entries, err = h.svc.Inbox.Page(ctx, userID, feed.AtMost(max), offset, size)
		if err != nil {
			h.fail(w, http.StatusInternalServerError, "internal error")
			return
		}
	}
	if len(entries) == 0 {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(seedEnvelope{Success: true})
		return
	}
	minTime, next := feed.NextCursor(entries, max, offset)
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.PostID
	}

	// 2. One query for the posts, in inbox order.
	posts, err := h.svc.Posts.Posts(ctx, ids)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, "internal error")
		return
	}
	list := make([]feedhttp.Blog, 0, len(ids))
	for _, id := range ids {
		p := posts[id]
		if p == nil {
			continue
		}
		// 3. For each post, its author and the caller's like.
		v := feed.PostView{Post: p}
		if v.Author, err = h.svc.Users.User(ctx, p.UserID); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
			h.fail(w, http.StatusInternalServerError, "internal error")
			return
		}
		liked, err := h.svc.Posts.LikedBy(ctx, userID, []int64{p.ID})
		if err != nil {
			h.fail(w, http.StatusInternalServerError, "internal error")
			return
		}
		v.IsLike = liked[p.ID]
		list = append(list, feedhttp.NewBlog(v))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(seedEnvelope{Success: true, Data: feedhttp.ScrollResult{List: list, MinTime: minTime, Offset: next}})
}
