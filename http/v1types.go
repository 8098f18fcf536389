package http

import (
	"strings"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// The /v1 API's resources, as their JSON shows them (the OpenAPI document's
// schemas: V1User, V1Profile, V1Me, V1Post, V1Page).

// V1User is a user as lists and posts show them.
type V1User struct {
	ID       int64  `json:"id"`
	NickName string `json:"nick_name"`
	Icon     string `json:"icon"`
}

func v1User(u *feed.User) V1User { return V1User{ID: u.ID, NickName: u.NickName, Icon: u.Icon} }

func v1Users(us []*feed.User) []V1User {
	out := make([]V1User, len(us))
	for i, u := range us {
		out[i] = v1User(u)
	}
	return out
}

// V1Profile is another user's profile, as its viewer sees it.
type V1Profile struct {
	V1User
	City           string `json:"city"`
	Introduce      string `json:"introduce"`
	FollowerCount  int    `json:"follower_count"`
	FollowingCount int    `json:"following_count"`
	FollowedByMe   bool   `json:"followed_by_me"`
	CreatedAt      string `json:"created_at"`
}

// V1Me is the caller's own account.
type V1Me struct {
	V1User
	Phone          string `json:"phone"`
	City           string `json:"city"`
	Introduce      string `json:"introduce"`
	FollowerCount  int    `json:"follower_count"`
	FollowingCount int    `json:"following_count"`
	CreatedAt      string `json:"created_at"`
}

// V1Post is a post hydrated for its viewer. Content is the text as the
// author sent it (native clients render text themselves).
type V1Post struct {
	ID      int64    `json:"id"`
	Author  V1User   `json:"author"`
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Images  []string `json:"images"`
	// Media are the uploads the post shows, in order.
	Media        []V1Media `json:"media"`
	ShopID       *int64    `json:"shop_id"`
	LikeCount    int       `json:"like_count"`
	CommentCount int       `json:"comment_count"`
	LikedByMe    bool      `json:"liked_by_me"`
	// CommentPolicy is who may comment: everyone, following or nobody.
	CommentPolicy string `json:"comment_policy"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	// Rank is the post's score and features, in a ranked timeline asked
	// with explain=true only.
	Rank *rank.Rank `json:"rank,omitempty"`
	// Reposts and quotes (docs/API.md, "Reposts and quotes").
	RepostCount  int           `json:"repost_count"`
	QuoteCount   int           `json:"quote_count"`
	RepostedByMe bool          `json:"reposted_by_me"`
	RepostedBy   *V1RepostedBy `json:"reposted_by"`
	QuotePolicy  string        `json:"quote_policy"`
	QuoteOf      *int64        `json:"quote_of"`
	// Quote is the quoted post, or its tombstone; null when the post is no
	// quote, and in a post that is itself embedded in a quote.
	Quote *V1Quote `json:"quote"`
}

// V1RepostedBy says who of the people the caller follows (or the caller)
// reposted a post: the first, when, and how many more.
type V1RepostedBy struct {
	User   V1User `json:"user"`
	At     string `json:"at"`
	Others int    `json:"others"`
}

// V1Quote is the post a quote embeds: state shown with the post, or
// deleted or unavailable with a null post (a tombstone).
type V1Quote struct {
	ID    int64   `json:"id"`
	State string  `json:"state"`
	Post  *V1Post `json:"post"`
}

// NewV1Post renders a hydrated post.
func NewV1Post(v feed.PostView) V1Post {
	p := V1Post{
		ID: v.ID, Author: V1User{ID: v.UserID}, Title: v.Title, Content: v.Content,
		Images: splitImages(v.Images), Media: v1MediaList(v.Media), LikeCount: v.Liked, CommentCount: v.Comments, LikedByMe: v.IsLike,
		CommentPolicy: v.CommentPolicy.String(),
		CreatedAt:     v.CreatedAt.UTC().Format(timeLayout), UpdatedAt: v.UpdatedAt.UTC().Format(timeLayout),
		RepostCount: v.Reposts, QuoteCount: v.Quotes, RepostedByMe: v.Reposted, QuotePolicy: v.QuotePolicy.String(),
	}
	if v.Author != nil {
		p.Author = v1User(v.Author)
	}
	if v.ShopID > 0 {
		p.ShopID = &v.ShopID
	}
	if v.QuoteOf > 0 {
		p.QuoteOf = &v.QuoteOf
	}
	if r := v.RepostedBy; r != nil && r.User != nil {
		p.RepostedBy = &V1RepostedBy{User: v1User(r.User), At: r.At.UTC().Format(timeLayout), Others: r.Others}
	}
	if q := v.Quote; q != nil {
		p.Quote = &V1Quote{ID: q.ID, State: q.State}
		if q.Post != nil {
			embedded := NewV1Post(*q.Post)
			embedded.Quote = nil // one level
			p.Quote.Post = &embedded
		}
	}
	return p
}

func v1Posts(vs []feed.PostView) []V1Post {
	out := make([]V1Post, len(vs))
	for i, v := range vs {
		out[i] = NewV1Post(v)
	}
	return out
}

// splitImages turns the stored comma-separated image list into an array.
func splitImages(s string) []string {
	out := []string{}
	for _, im := range strings.Split(s, ",") {
		if im = strings.TrimSpace(im); im != "" {
			out = append(out, im)
		}
	}
	return out
}

// V1Page is one page of a collection. NextCursor is null on the last page.
type V1Page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}
