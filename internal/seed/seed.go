// Package seed fills a feedd database with a believable demo community for
// `feedd seed`: users with names, a follow graph where a few are popular
// and most are not, and posts spread over the last days, some of them
// liked. Everything goes through feed.Service, as the API's requests do, so
// fan-out runs and every timeline is what it would be in use.
package seed

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	feed "github.com/feedd/feedd"
)

// Defaults of Options: a community that takes seconds to make.
const (
	DefaultUsers   = 60
	DefaultFollows = 12
	DefaultPosts   = 8
)

// FirstPhone is the phone number of the first demo user, the one to log in
// as; user i has FirstPhone + i - 1.
const FirstPhone = 19900000001

// Options says how big the community is.
type Options struct {
	Users   int // users (at least 2)
	Follows int // users each user follows (less than Users)
	Posts   int // posts each user publishes on average
	// Span is how far back the posts go (default 72 h); the newest is now.
	Span time.Duration
	// Rand seeds the choices (0: a fixed seed, so every run makes the same
	// community).
	Rand uint64
	// Progress gets a progress bar on a terminal, progress lines otherwise
	// (nil: none).
	Progress io.Writer
	// Wait bounds the wait for fan-out to fill the demo user's timeline
	// (default 2 minutes).
	Wait time.Duration
}

// Result is what was made.
type Result struct {
	Users, Follows, Posts, Likes int
	// Phone, UserID and NickName are the demo user's: log in with Phone.
	Phone    string
	UserID   int64
	NickName string
	// Timeline is how many posts the demo user's timeline holds.
	Timeline int
}

// Validate returns an error describing the first problem of o.
func (o Options) Validate() error {
	switch {
	case o.Users < 2 || o.Users > 1_000_000:
		return fmt.Errorf("--users must be from 2 to 1000000")
	case o.Follows < 0 || o.Follows >= o.Users:
		return fmt.Errorf("--follows must be from 0 to --users - 1")
	case o.Posts < 0 || o.Posts > 10_000:
		return fmt.Errorf("--posts must be from 0 to 10000")
	}
	return nil
}

// Phone returns the phone number of demo user i (from 1).
func Phone(i int) string { return fmt.Sprint(FirstPhone + i - 1) }

// Run makes the community with svc and waits until fan-out has filled the
// demo user's timeline. Running it again on the same database finds the
// users it made and adds follows and posts.
func Run(ctx context.Context, svc *feed.Service, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Rand, 0x66656564))
	now := time.Now()
	res := &Result{}

	// Users.
	bar := newBar(o.Progress, o.Users, "users")
	ids := make([]int64, o.Users)
	for i := range o.Users {
		u, err := svc.Users.FindOrCreateUser(ctx, Phone(i+1), nickName(rng, i), now)
		if err != nil {
			return nil, fmt.Errorf("create user %d: %w", i+1, err)
		}
		ids[i] = u.ID
		if i == 0 {
			res.Phone, res.UserID, res.NickName = Phone(1), u.ID, u.NickName
		}
		bar.add()
	}
	bar.done()
	res.Users = o.Users

	// Follows: a few are popular (preferential attachment: a user is picked
	// as often as they are already followed, plus one).
	bar = newBar(o.Progress, o.Users*o.Follows, "follows")
	picks := make([]int, 0, o.Users*(o.Follows+1))
	for i := range o.Users {
		picks = append(picks, i)
	}
	following := make([]map[int]bool, o.Users)
	for i := range o.Users {
		following[i] = map[int]bool{}
		for len(following[i]) < o.Follows {
			j := picks[rng.IntN(len(picks))]
			if len(following[i]) > o.Follows/2 || rng.IntN(4) == 0 {
				j = rng.IntN(o.Users) // and some of anyone
			}
			if j == i || following[i][j] {
				continue
			}
			if err := svc.Follow(ctx, ids[i], ids[j], true); err != nil {
				return nil, fmt.Errorf("follow: %w", err)
			}
			following[i][j] = true
			picks = append(picks, j)
			res.Follows++
			bar.add()
		}
	}
	bar.done()

	// Posts, oldest first, at times spread over Span: the service's clock
	// is set to each post's time as it is published.
	total := o.Users * o.Posts
	span := o.Span
	if span <= 0 {
		span = 72 * time.Hour
	}
	clock := svc.Now
	defer func() { svc.Now = clock }()
	bar = newBar(o.Progress, total, "posts")
	var posts []int64
	demoSees := 0 // posts the demo user's timeline will hold
	for k := range total {
		author := rng.IntN(o.Users)
		at := now.Add(-span + time.Duration(int64(span)*int64(k+1)/int64(total)))
		svc.Now = func() time.Time { return at }
		p, err := svc.Publish(ctx, ids[author], post(rng))
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		posts = append(posts, p.ID)
		if author == 0 || following[0][author] {
			demoSees++
		}
		res.Posts++
		bar.add()
	}
	bar.done()
	svc.Now = clock

	// Likes: each post gets some, more for the authors with more followers.
	if len(posts) > 0 {
		n := total * 2
		bar = newBar(o.Progress, n, "likes")
		for range n {
			if err := svc.SetLike(ctx, ids[rng.IntN(o.Users)], posts[rng.IntN(len(posts))], true); err != nil {
				return nil, fmt.Errorf("like: %w", err)
			}
			res.Likes++ // a repeated like changes nothing; counted as made
			bar.add()
		}
		bar.done()
	}

	// Fan-out runs in the background: wait until the demo user's timeline
	// holds what it should (an inbox keeps at most InboxCap).
	want := min(demoSees, cmp.Or(max(svc.InboxCap, 0), feed.DefaultInboxCap))
	bar = newBar(o.Progress, want, "fan-out")
	wait := o.Wait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	for {
		n, err := timelineLen(ctx, svc, res.UserID, want)
		if err != nil {
			return nil, err
		}
		bar.set(n)
		res.Timeline = n
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			bar.done()
			return res, fmt.Errorf("fan-out has delivered %d of %d posts to the demo user's timeline after %v; are workers running (--workers, or a feedd worker)?", n, want, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	bar.done()
	return res, nil
}

// timelineLen counts userID's timeline, up to max posts.
func timelineLen(ctx context.Context, svc *feed.Service, userID int64, max int) (int, error) {
	n := 0
	var after *feed.Cursor
	for n < max {
		page, err := svc.Timeline(ctx, userID, after, feed.MaxTimelineLimit)
		if err != nil {
			return 0, err
		}
		n += len(page.List)
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	return n, nil
}

// bar is a progress bar on a terminal, or plain lines (at each quarter)
// elsewhere.
type bar struct {
	pb     *progressbar.ProgressBar
	w      io.Writer
	label  string
	total  int
	n      int
	shown  int
	closed bool
}

func newBar(w io.Writer, total int, label string) *bar {
	b := &bar{w: w, label: label, total: total}
	if w == nil {
		return b
	}
	if f, ok := w.(*os.File); ok && total > 0 && term.IsTerminal(int(f.Fd())) {
		b.pb = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(fmt.Sprintf("%-8s", label)),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return b
}

func (b *bar) add() { b.set(b.n + 1) }

func (b *bar) set(n int) {
	b.n = n
	switch {
	case b.w == nil || b.closed:
	case b.pb != nil:
		b.pb.Set(n)
	case b.total > 0 && n*4/b.total > b.shown && n < b.total:
		b.shown = n * 4 / b.total
		fmt.Fprintf(b.w, "%s: %d/%d\n", b.label, n, b.total)
	}
}

func (b *bar) done() {
	if b.w == nil || b.closed {
		return
	}
	b.closed = true
	if b.pb != nil {
		b.pb.Finish()
		return
	}
	fmt.Fprintf(b.w, "%s: %d/%d done\n", b.label, b.n, b.total)
}
