package feed

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// The server API (/v1/server/, docs/integrating.md): the app's backend
// names its users by its own references (refs), which are the subjects of
// its users' identities under s.AppIssuer, the issuer of its tokens, so
// that a user the backend made and the same user signing in with the app's
// token are one feedd user. It acts for any user; its calls are counted
// against the budget of their API key (ChargeAPIKey). Every batch is all
// or nothing per item: each item has its result, and a bad item changes
// nothing but its own refusal.

// Limits of the server API's batches.
const (
	// FollowBatchMax is the most pairs one follow or unfollow call takes.
	FollowBatchMax = 10000
	// followChunk is how many pairs one transaction makes (SetFollows),
	// so that a big batch does not hold the writer for long.
	followChunk = 500
)

// UserUpsert is one user of an upsert: the app's reference and the
// profile to give it (an empty field leaves the user's as it is).
type UserUpsert struct {
	Ref string
	Profile
}

// RefPair is one follow or unfollow of a batch, by refs.
type RefPair struct {
	Follower, Followee string
}

// validGivenProfile refuses a profile the app gives that feedd would have
// to change: a name that is not a clean nick name (cleanName) of at most
// MaxNickName characters, a picture that is not an image feedd shows.
func validGivenProfile(p Profile) error {
	if p.Name != "" && (cleanName(p.Name) != p.Name) {
		return Errorf(EINVALID, "name must be at most %d characters, without control characters, angle brackets or surrounding spaces", MaxNickName)
	}
	if p.Picture != "" && (len(p.Picture) > MaxImages || !ValidImage(p.Picture)) {
		return Errorf(EINVALID, "picture must be a /path or an http(s):// URL without quotes, angle brackets or spaces")
	}
	return nil
}

// UpsertUsers links the users of the app's refs, creating those not seen
// before, and gives each the profile of its item. At most LinkBatch
// items; each has its Link (Err: EINVALID for a bad ref or profile, or a
// ref given twice).
func (s *Service) UpsertUsers(ctx context.Context, items []UserUpsert) ([]Link, error) {
	if len(items) == 0 || len(items) > LinkBatch {
		return nil, Errorf(EINVALID, "users must hold 1 to %d users", LinkBatch)
	}
	links := make([]Link, len(items))
	var subjects []string
	var profiles []Profile
	var at []int
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		err := validSubject("ref", it.Ref)
		if err == nil {
			err = validGivenProfile(it.Profile)
		}
		if err == nil && seen[it.Ref] {
			err = Errorf(EINVALID, "ref %q is given twice in this batch", it.Ref)
		}
		if err != nil {
			links[i].Err = err
			continue
		}
		seen[it.Ref] = true
		subjects, profiles, at = append(subjects, it.Ref), append(profiles, it.Profile), append(at, i)
	}
	if len(subjects) > 0 {
		got, err := s.Identities.LinkIdentities(ctx, s.AppIssuer, subjects, profiles, s.newNickName, s.now())
		if err != nil {
			return nil, err
		}
		for j, l := range got {
			links[at[j]] = l
		}
	}
	return links, nil
}

// UserOfRef returns the user of the app's ref. ENOTFOUND if none.
func (s *Service) UserOfRef(ctx context.Context, ref string) (int64, error) {
	if err := validSubject("ref", ref); err != nil {
		return 0, err
	}
	m, err := s.Identities.IdentityUsers(ctx, s.AppIssuer, []string{ref})
	if err != nil {
		return 0, err
	}
	if id, ok := m[ref]; ok {
		return id, nil
	}
	return 0, errNoRef(ref)
}

func errNoRef(ref string) error { return Errorf(ENOTFOUND, "no user has ref %q", ref) }

// FollowRefs makes each pair's follower follow (follow) or unfollow its
// followee, as Follow does. At most FollowBatchMax pairs; errs has each
// pair's refusal (EINVALID, ENOTFOUND, EFORBIDDEN) or nil.
func (s *Service) FollowRefs(ctx context.Context, pairs []RefPair, follow bool) (errs []error, err error) {
	if len(pairs) == 0 || len(pairs) > FollowBatchMax {
		return nil, Errorf(EINVALID, "pairs must hold 1 to %d pairs", FollowBatchMax)
	}
	errs = make([]error, len(pairs))
	refs := make([]string, 0, 2*len(pairs))
	for i, p := range pairs {
		if err := validSubject("follower", p.Follower); err != nil {
			errs[i] = err
		} else if err := validSubject("followee", p.Followee); err != nil {
			errs[i] = err
		} else if p.Follower == p.Followee {
			errs[i] = Errorf(EINVALID, "a user cannot follow themselves")
		} else {
			refs = append(refs, p.Follower, p.Followee)
		}
	}
	users, err := s.Identities.IdentityUsers(ctx, s.AppIssuer, refs)
	if err != nil {
		return nil, err
	}
	var changes []FollowChange
	var at []int
	for i, p := range pairs {
		if errs[i] != nil {
			continue
		}
		a, okA := users[p.Follower]
		b, okB := users[p.Followee]
		switch {
		case !okA:
			errs[i] = errNoRef(p.Follower)
		case !okB:
			errs[i] = errNoRef(p.Followee)
		default:
			changes, at = append(changes, FollowChange{FollowerID: a, FolloweeID: b, Follow: follow}), append(at, i)
		}
	}
	now := s.now()
	followed := map[int64]bool{}
	for start := 0; start < len(changes); start += followChunk {
		chunk := changes[start:min(start+followChunk, len(changes))]
		got, err := s.Follows.SetFollows(ctx, chunk, now)
		if err != nil {
			return nil, err
		}
		for j, e := range got {
			errs[at[start+j]] = e
			if e == nil && follow {
				followed[chunk[j].FolloweeID] = true
			}
		}
	}
	if s.PullThreshold > 0 {
		// As Follow does, after each follow: enter pull mode with the
		// follows that cross the threshold.
		for id := range followed {
			u, err := s.Users.User(ctx, id)
			if err != nil {
				return nil, err
			}
			if EntersPull(u.Mode, u.Fans, s.PullThreshold) {
				if err := s.Social.SetMode(ctx, id, PullMode); err != nil {
					return nil, err
				}
			}
		}
	}
	return errs, nil
}

// validForeignID refuses a foreign id feedd does not keep.
func validForeignID(id string) error {
	switch {
	case id == "":
		return Errorf(EINVALID, "foreign_id must not be empty")
	case len(id) > MaxSubject:
		return Errorf(EINVALID, "foreign_id must be at most %d bytes", MaxSubject)
	case !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return Errorf(EINVALID, "foreign_id must be UTF-8 text without control characters")
	}
	return nil
}

// PublishAs publishes a post of the user of ref under the app's foreignID,
// as Publish does. The same foreignID again returns the first post,
// whatever its content, and publishes nothing (created false), also under
// concurrent retries; ECONFLICT when it is another user's post.
func (s *Service) PublishAs(ctx context.Context, ref, foreignID string, in PostInput) (p *Post, created bool, err error) {
	if err := validForeignID(foreignID); err != nil {
		return nil, false, err
	}
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	userID, err := s.UserOfRef(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	now := s.now().Truncate(time.Millisecond)
	p = &Post{UserID: userID, ShopID: in.ShopID, Title: in.Title, Content: in.Content, Images: in.Images, CommentPolicy: in.CommentPolicy,
		CreatedAt: now, UpdatedAt: now, ForeignID: foreignID}
	created, err = s.Posts.CreateForeignPost(ctx, p)
	if err != nil {
		return nil, false, err
	}
	if !created && p.UserID != userID {
		return nil, false, Errorf(ECONFLICT, "foreign_id %q is another user's post", foreignID)
	}
	if created && s.Trace.Enabled() {
		s.Trace.Stage(p.ID, "committed", "author_id", userID)
	}
	return p, created, nil
}

// PostOfForeignID returns the post the app published under foreignID.
// ENOTFOUND if none.
func (s *Service) PostOfForeignID(ctx context.Context, foreignID string) (*Post, error) {
	if err := validForeignID(foreignID); err != nil {
		return nil, err
	}
	return s.Posts.PostByForeignID(ctx, foreignID)
}

// DeleteForeign deletes the post the app published under foreignID, as its
// author's delete would. ENOTFOUND if there is none.
func (s *Service) DeleteForeign(ctx context.Context, foreignID string) error {
	p, err := s.PostOfForeignID(ctx, foreignID)
	if err != nil {
		return err
	}
	return s.Posts.DeletePost(ctx, p.ID, p.UserID)
}
