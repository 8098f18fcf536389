package feed

import (
	"context"
	"slices"
)

// Gathering the facts See decides from (visibility.go): a constant number
// of store calls for a whole page, then See for each item.

// postScenes reads what See needs to decide on posts for viewerID (0:
// anonymous): which are hidden by moderation, and the viewer's relations
// to their authors. Two store calls, whatever the number of posts.
func (s *Service) postScenes(ctx context.Context, viewerID int64, posts []*Post) ([]Scene, error) {
	ids := make([]int64, 0, len(posts))
	authors := make([]int64, 0, len(posts))
	for _, p := range posts {
		ids = append(ids, p.ID)
		authors = append(authors, p.UserID)
	}
	hidden, err := s.Filters.Hidden(ctx, ids)
	if err != nil {
		return nil, err
	}
	rel, err := s.relations(ctx, viewerID, authors)
	if err != nil {
		return nil, err
	}
	out := make([]Scene, len(posts))
	for i, p := range posts {
		out[i] = Scene{Post: p, PostHidden: hidden[p.ID], Rel: rel}
	}
	return out, nil
}

// relations is SocialStore.Relations of viewerID (none for an anonymous
// viewer) to userIDs, duplicates removed.
func (s *Service) relations(ctx context.Context, viewerID int64, userIDs []int64) (map[int64]Relation, error) {
	if viewerID <= 0 || len(userIDs) == 0 {
		return map[int64]Relation{}, nil
	}
	ids := slices.Clone(userIDs)
	slices.Sort(ids)
	return s.Social.Relations(ctx, viewerID, slices.Compact(ids))
}

// postScene reads post id and what See needs of it for viewerID, and asks
// See: ENOTFOUND when there is no such post or it is Unseen.
func (s *Service) postScene(ctx context.Context, viewerID, id int64) (Scene, error) {
	if err := validID("id", id); err != nil {
		return Scene{}, err
	}
	p, err := s.Posts.Post(ctx, id)
	if err != nil {
		return Scene{}, err
	}
	scenes, err := s.postScenes(ctx, viewerID, []*Post{p})
	if err != nil {
		return Scene{}, err
	}
	if See(Viewer{ID: viewerID}, scenes[0]).Sight == Unseen {
		return Scene{}, ErrNotFound("post")
	}
	return scenes[0], nil
}

// seenUsers returns the users among ids that viewerID is shown (See of a
// user alone: not Unseen), in order. One store call.
func (s *Service) seenUsers(ctx context.Context, viewerID int64, ids []int64) ([]int64, error) {
	rel, err := s.relations(ctx, viewerID, ids)
	if err != nil || len(rel) == 0 {
		return ids, err
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool {
		return See(Viewer{ID: viewerID}, Scene{User: id, Rel: rel}).Sight == Unseen
	}), nil
}

// Sights holds what See needs to decide on a set of posts and users for one
// viewer, read at once (ReadSights): a notification's post and actors, a
// push's. Post and User ask See.
type Sights struct {
	Viewer Viewer
	Posts  map[int64]*Post // those that exist, by id
	Hidden map[int64]bool  // hidden by moderation
	Rel    map[int64]Relation
}

// ReadSights reads, for viewerID, the posts postIDs, which of them
// moderation hid, and the viewer's relations to their authors and to
// userIDs: three store calls whatever the numbers.
func (s *Service) ReadSights(ctx context.Context, viewerID int64, postIDs, userIDs []int64) (*Sights, error) {
	x := &Sights{Viewer: Viewer{ID: viewerID}, Posts: map[int64]*Post{}, Hidden: map[int64]bool{}}
	var err error
	if len(postIDs) > 0 {
		if x.Posts, err = s.Posts.Posts(ctx, postIDs); err != nil {
			return nil, err
		}
		if x.Hidden, err = s.Filters.Hidden(ctx, postIDs); err != nil {
			return nil, err
		}
	}
	users := slices.Clone(userIDs)
	for _, p := range x.Posts {
		users = append(users, p.UserID)
	}
	if x.Rel, err = s.relations(ctx, viewerID, users); err != nil {
		return nil, err
	}
	return x, nil
}

// Post is See's Sight of post id (Unseen when it does not exist).
func (x *Sights) Post(id int64) Sight {
	p := x.Posts[id]
	if p == nil {
		return Unseen
	}
	return See(x.Viewer, Scene{Post: p, PostHidden: x.Hidden[id], Rel: x.Rel}).Sight
}

// User is See's Sight of a reference to user id.
func (x *Sights) User(id int64) Sight { return See(x.Viewer, Scene{User: id, Rel: x.Rel}).Sight }
