package feed

import (
	"context"
	"io"
	"time"
)

// User is an account, created on first login.
type User struct {
	ID        int64
	Mode      Mode // how the user's posts reach followers (push or pull)
	ActiveAt  time.Time
	Phone     string
	NickName  string
	Icon      string
	City      string
	Introduce string
	Fans      int // live count of followers
	Followee  int // live count of users this user follows
	CreatedAt time.Time
}

// NewNickName returns the nickname an account gets at signup: "user_" and
// ten letters and digits drawn from rnd.
func NewNickName(rnd io.Reader) (string, error) {
	s, err := randomString(rnd, 10, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	return "user_" + s, err
}

// UserStore persists users.
type UserStore interface {
	// FindOrCreateUser returns the user with that phone, creating it with
	// nickName if there is none.
	FindOrCreateUser(ctx context.Context, phone, nickName string, now time.Time) (*User, error)
	// User returns one user; ENOTFOUND if there is none.
	User(ctx context.Context, id int64) (*User, error)
	// Users returns the users that exist among ids, by id.
	Users(ctx context.Context, ids []int64) (map[int64]*User, error)
}

// User returns one user; ENOTFOUND if there is none.
func (s *Service) User(ctx context.Context, id int64) (*User, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	return s.Users.User(ctx, id)
}

// usersInOrder returns the users among ids that exist, in the order of ids.
func (s *Service) usersInOrder(ctx context.Context, ids []int64) ([]*User, error) {
	m, err := s.Users.Users(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*User, 0, len(ids))
	for _, id := range ids {
		if u := m[id]; u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}
