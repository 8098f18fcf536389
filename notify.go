package feed

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Grouped notifications: what others did to a user's posts and account,
// one entry per group ("Ana, Bo and 3 others liked your post").
//
// A like, a follow, a comment, a repost, a quote or a moderation decision
// is recorded by the store in the same transaction as the action itself
// (NotifySettings says how), as an event of one kind on one target: the
// post for likes, comments, reposts and moderation, the quote for quotes,
// the answered comment for replies, the user for follows. Events join the group of their kind and target
// that is open; a group closes when its first event is older than
// NotifySettings.Window, and the next event opens a new one. A group keeps
// the exact count of its distinct actors (a row per actor, so a like costs
// the same whatever the group's size), and its three newest actors are
// read by index.
//
// Every kind is recorded through one path in each store (notifyAdd), which
// applies the rules of NotifySettings.Step: in particular, the same actor
// doing the same to the same target again within RenotifyAfter (a like
// taken back and given again, an unfollow and a follow) counts once,
// makes nothing unread, and does not reopen a group the user dismissed;
// its notice only shows the group again as it was before the retraction.
// A retraction (unlike, unfollow, a block or a mute) marks the actor's row
// retracted and a dismissal marks the group dismissed, rather than
// deleting them, so that the next event finds what the user was told;
// neither shows.

// Kinds of notification groups.
const (
	NotifyLike       = "like"       // someone liked your post
	NotifyFollow     = "follow"     // someone followed you
	NotifyModeration = "moderation" // your post was hidden or restored
	NotifyComment    = "comment"    // someone commented on your post
	NotifyReply      = "reply"      // someone replied to your comment
	NotifyRepost     = "repost"     // someone reposted your post
	NotifyQuote      = "quote"      // someone quoted your post (the target is the quote)
)

// Actions of a moderation group.
const (
	ModerationHidden   = "hidden"
	ModerationRestored = "restored"
)

// Defaults and limits of notifications.
const (
	DefaultNotifyWindow    = 24 * time.Hour
	DefaultNotifyRetention = 90 * 24 * time.Hour
	// DefaultRenotifyAfter is how long an actor's event on a target
	// counts once: the same actor doing the same to the same target again
	// within it (a like taken back and given again, an unfollow and a
	// follow) tells the user nothing new.
	DefaultRenotifyAfter = 24 * time.Hour
	// DefaultNotifyKeep is how many groups a user keeps; the oldest go
	// when a new one is made.
	DefaultNotifyKeep = 1000
	// NotifyActorsShown is how many of a group's newest actors it shows.
	NotifyActorsShown = 3
)

// NotifySettings tell a store how to record notifications. The zero value
// records them with the defaults.
type NotifySettings struct {
	Off       bool          // record none (reads still answer, with what is kept)
	Window    time.Duration // a group's span from its first event; DefaultNotifyWindow if zero
	Retention time.Duration // groups whose latest event is older go; DefaultNotifyRetention if zero
	Keep      int           // groups kept per user; DefaultNotifyKeep if zero
	// Renotify is how long an actor's event on a target counts once
	// (DefaultRenotifyAfter if zero): see notifyAdd in the stores and
	// docs/API.md, "Notifications".
	Renotify time.Duration
}

// GroupWindow is s.Window or its default.
func (s NotifySettings) GroupWindow() time.Duration { return orDefault(s.Window, DefaultNotifyWindow) }

// RetentionPeriod is s.Retention or its default.
func (s NotifySettings) RetentionPeriod() time.Duration {
	return orDefault(s.Retention, DefaultNotifyRetention)
}

// RenotifyAfter is s.Renotify or its default.
func (s NotifySettings) RenotifyAfter() time.Duration {
	return orDefault(s.Renotify, DefaultRenotifyAfter)
}

// KeepGroups is s.Keep or its default.
func (s NotifySettings) KeepGroups() int {
	if s.Keep > 0 {
		return s.Keep
	}
	return DefaultNotifyKeep
}

// Validate refuses settings feedd cannot run with.
func (s NotifySettings) Validate() error {
	if s.Window < 0 || s.Retention < 0 || s.Keep < 0 || s.Renotify < 0 {
		return Errorf(EINVALID, "notification window, retention, groups kept and renotify window must not be negative")
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// NotifyFound is what a store reads, in an event's transaction, before it
// records actor A's event of a kind on a target for user U.
type NotifyFound struct {
	// Newest is the target's newest group of U that is not dismissed (0:
	// none); NewestFirst the time of its first event.
	Newest      int64
	NewestFirst time.Time
	// InNewest: A has a row in Newest; InNewestRetracted: that row is
	// retracted.
	InNewest, InNewestRetracted bool
	// Told is the group of A's newest row on the target whose time is
	// within RenotifyAfter (0: none, or no actor: moderation); ToldRetracted:
	// that row is retracted; ToldDismissed: that group is dismissed.
	Told                         int64
	ToldRetracted, ToldDismissed bool
}

// NotifyStep is what a store writes for an event (NotifySettings.Step).
type NotifyStep struct {
	// Skip: a repeat within the renotify window with nothing to show
	// again; nothing is written and no notice sent.
	Skip bool
	// Restore: a repeat whose row was retracted in a group that is not
	// dismissed: the row is shown again in Group (its time kept) and the
	// count moves by one; the group's LatestAt stays (nothing is unread),
	// and a notice says the group is shown again as it was, so that a
	// client that followed the retraction live shows it again.
	Restore bool
	// Group is the group the event joins; 0: a new one opens.
	Group int64
	// Added: the actor's row is new or was retracted, so the count moves
	// by one (otherwise the actor, already shown, is told again: a repeat
	// after the renotify window).
	Added bool
}

// Step decides what an event writes from what the store found at now.
func (s NotifySettings) Step(f NotifyFound, now time.Time) NotifyStep {
	if f.Told != 0 {
		if f.ToldRetracted && !f.ToldDismissed {
			return NotifyStep{Restore: true, Group: f.Told, Added: true}
		}
		return NotifyStep{Skip: true}
	}
	if f.Newest == 0 || now.Sub(f.NewestFirst) >= s.GroupWindow() {
		return NotifyStep{Added: true}
	}
	return NotifyStep{Group: f.Newest, Added: !f.InNewest || f.InNewestRetracted}
}

// TellCutoffs are the bounds, at now, of the rows a store reads into
// NotifyFound.Told: rows whose time is after told, in groups whose first
// event is after groups (a row joins its group within GroupWindow of the
// group's first event).
func (s NotifySettings) TellCutoffs(now time.Time) (told, groups time.Time) {
	told = now.Add(-s.RenotifyAfter())
	return told, told.Add(-s.GroupWindow())
}

// NotifyGroup is one group of a user's notifications, as the store keeps it.
type NotifyGroup struct {
	ID     int64
	UserID int64
	Kind   string
	PostID int64 // like, comment, repost and moderation groups: the post; quote groups: the quote; 0 for follows
	// CommentID is a reply group's target: the comment answered (0 for
	// the other kinds). Hydration sets PostID to its post.
	CommentID int64
	Count     int     // distinct actors (1 for a moderation group)
	ActorIDs  []int64 // the newest NotifyActorsShown actors, newest first
	Action    string  // moderation groups: ModerationHidden or ModerationRestored
	// LatestAt is the time of the latest event that joined the group. It
	// never moves back (a retraction leaves it), so a scroll by it shows
	// each group once.
	LatestAt time.Time
	Unread   bool // LatestAt is after the user's read marker
}

// Cursor is the group's position in its user's list: newest LatestAt
// first, then highest id, in the feed cursor's form.
func (g *NotifyGroup) Cursor() Cursor { return Cursor{Score: g.LatestAt.UnixMilli(), PostID: g.ID} }

// Notice says that a group of UserID was created, changed or removed. The
// stores hand notices to their Notified hook after the commit.
type Notice struct {
	UserID  int64
	GroupID int64
}

// NotifyStore reads and keeps users' notification groups; the writes are
// the stores' own, in the transactions of the actions (SetLike,
// ToggleLike, SetFollow, SetBlock, SetMute, SetHidden, DeletePost).
// Implementations: sqlite.DB, postgres.DB; feedtest.TestNotifications is
// the contract.
type NotifyStore interface {
	// Notifications returns at most limit of userID's groups within b
	// (Top or After a group's Cursor), by LatestAt then id, descending,
	// leaving out those older than the retention at now.
	Notifications(ctx context.Context, userID int64, b Bound, now time.Time, limit int) ([]NotifyGroup, error)
	// NotifyGroup returns one of userID's groups; ENOTFOUND if userID has
	// no such group (or it is past the retention at now).
	NotifyGroup(ctx context.Context, userID, groupID int64, now time.Time) (*NotifyGroup, error)
	// UnreadNotifications counts userID's unread groups within the
	// retention at now, and lists the post of each unread reply group
	// among them (posts of other users, which the Service checks userID
	// still sees).
	UnreadNotifications(ctx context.Context, userID int64, now time.Time) (n int, replyPosts []int64, err error)
	// MarkNotificationsRead moves userID's read marker to upTo (never
	// back): every group whose LatestAt is not after it is read.
	MarkNotificationsRead(ctx context.Context, userID int64, upTo time.Time) error
	// DismissNotification removes one of userID's groups. ENOTFOUND if
	// userID has no such group.
	DismissNotification(ctx context.Context, userID, groupID int64) error
}

// NotifyKey is a group's opaque key for clients.
func NotifyKey(groupID int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(groupID)^notifyKeyMask)
	return "n" + base64.RawURLEncoding.EncodeToString(b[:])
}

// notifyKeyMask keeps keys from reading as counters.
const notifyKeyMask = 0x5bd1e9955bd1e995

// ParseNotifyKey returns the group id of a key NotifyKey made. EINVALID if
// it is not one.
func ParseNotifyKey(key string) (int64, error) {
	bad := Errorf(EINVALID, "key is not a notification key this server returned")
	if len(key) != 12 || key[0] != 'n' {
		return 0, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(key[1:])
	if err != nil || len(b) != 8 {
		return 0, bad
	}
	id := int64(binary.BigEndian.Uint64(b) ^ notifyKeyMask)
	if id <= 0 {
		return 0, bad
	}
	return id, nil
}

// NotifyView is a group hydrated for its user.
type NotifyView struct {
	NotifyGroup
	Actors []*User   // the newest actors, newest first
	Post   *PostView // like, comment, reply and moderation groups; nil for follows
	// Comment is a reply group's answered comment (the user's own); nil
	// for the other kinds, or when it is gone.
	Comment *Comment
}

// NotifyPage is a page of groups and the cursor of the next (nil at the end).
type NotifyPage struct {
	List []NotifyView
	Next *Cursor
}

func (s *Service) notifyStore() (NotifyStore, error) {
	if s.Notify == nil {
		return nil, Errorf(ENOTFOUND, "notifications are not enabled")
	}
	return s.Notify, nil
}

// Notifications returns a page of userID's notification groups, newest
// activity first, after cursor after (nil: from the newest), at most limit
// (0: DefaultTimelineLimit). A group that gains an event moves to the
// top, so a scroll never shows it twice. Constant store calls per page
// whatever the groups' sizes: one for the groups with their newest
// actors, one for the actors' users, two for the posts.
func (s *Service) Notifications(ctx context.Context, userID int64, after *Cursor, limit int) (*NotifyPage, error) {
	st, err := s.notifyStore()
	if err != nil {
		return nil, err
	}
	limit, err = TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	b := Top()
	if after != nil {
		b = After(*after)
	}
	gs, err := st.Notifications(ctx, userID, b, s.now(), limit+1)
	if err != nil {
		return nil, err
	}
	page := &NotifyPage{}
	if len(gs) > limit {
		gs = gs[:limit]
		next := gs[limit-1].Cursor()
		page.Next = &next
	}
	page.List, err = s.hydrateNotify(ctx, userID, gs)
	return page, err
}

// NotificationGroup returns one of userID's groups hydrated; ENOTFOUND if
// it is gone, or hydrateNotify leaves it out (userID may no longer see its
// post).
func (s *Service) NotificationGroup(ctx context.Context, userID, groupID int64) (*NotifyView, error) {
	st, err := s.notifyStore()
	if err != nil {
		return nil, err
	}
	g, err := st.NotifyGroup(ctx, userID, groupID, s.now())
	if err != nil {
		return nil, err
	}
	vs, err := s.hydrateNotify(ctx, userID, []NotifyGroup{*g})
	if err != nil {
		return nil, err
	} else if len(vs) == 0 {
		return nil, ErrNotFound("notification")
	}
	return &vs[0], nil
}

// UnreadNotifications counts userID's unread groups that the list shows:
// those of a reply on a post userID may no longer see (hydrateNotify) are
// not counted.
func (s *Service) UnreadNotifications(ctx context.Context, userID int64) (int, error) {
	st, err := s.notifyStore()
	if err != nil {
		return 0, err
	}
	n, others, err := st.UnreadNotifications(ctx, userID, s.now())
	if err != nil || len(others) == 0 {
		return n, err
	}
	x, err := s.ReadSights(ctx, userID, others, nil)
	if err != nil {
		return 0, err
	}
	for _, id := range others {
		if x.Post(id) == Unseen {
			n--
		}
	}
	return n, nil
}

// MarkNotificationsRead marks userID's groups read: all of them up to now
// (groupID 0), or those up to the latest activity of group groupID
// (ENOTFOUND if userID has no such group). Idempotent; the marker never
// moves back.
func (s *Service) MarkNotificationsRead(ctx context.Context, userID, groupID int64) error {
	st, err := s.notifyStore()
	if err != nil {
		return err
	}
	upTo := s.now()
	if groupID != 0 {
		g, err := st.NotifyGroup(ctx, userID, groupID, upTo)
		if err != nil {
			return err
		}
		upTo = g.LatestAt
	}
	return st.MarkNotificationsRead(ctx, userID, upTo)
}

// DismissNotification removes group groupID of userID. ENOTFOUND if userID
// has no such group.
func (s *Service) DismissNotification(ctx context.Context, userID, groupID int64) error {
	st, err := s.notifyStore()
	if err != nil {
		return err
	}
	return st.DismissNotification(ctx, userID, groupID)
}

// hydrateNotify adds the actors' users and the posts (hydrated as the
// timeline's are) to groups, as See shows them to userID: a group whose
// post is gone or Unseen (its author blocks userID, moderation hid it: a
// reply group on another's post) is left out, and so are the actors See
// does not show in full. A constant number of store calls: the answered
// comments, the posts, their hiding, the relations to their authors and
// the actors, the users, and Hydrate's.
func (s *Service) hydrateNotify(ctx context.Context, userID int64, gs []NotifyGroup) ([]NotifyView, error) {
	var actorIDs, commentIDs []int64
	for _, g := range gs {
		actorIDs = append(actorIDs, g.ActorIDs...)
		if g.CommentID != 0 {
			commentIDs = append(commentIDs, g.CommentID)
		}
	}
	comments := map[int64]*Comment{}
	if len(commentIDs) > 0 && s.Comments != nil {
		var err error
		if comments, err = s.Comments.Comments(ctx, commentIDs); err != nil {
			return nil, err
		}
	}
	var postIDs []int64
	for i := range gs {
		if c := comments[gs[i].CommentID]; c != nil {
			gs[i].PostID = c.PostID
		}
		if gs[i].PostID != 0 {
			postIDs = append(postIDs, gs[i].PostID)
		}
	}
	x, err := s.ReadSights(ctx, userID, postIDs, actorIDs)
	if err != nil {
		return nil, err
	}
	users, err := s.Users.Users(ctx, actorIDs)
	if err != nil {
		return nil, err
	}
	var posts []*Post
	for id, p := range x.Posts {
		if x.Post(id) != Unseen {
			posts = append(posts, p)
		}
	}
	views := map[int64]*PostView{}
	if len(posts) > 0 {
		vs, err := s.Hydrate(ctx, userID, posts)
		if err != nil {
			return nil, err
		}
		for i := range vs {
			views[vs[i].ID] = &vs[i]
		}
	}
	out := make([]NotifyView, 0, len(gs))
	for _, g := range gs {
		if g.PostID != 0 && views[g.PostID] == nil {
			continue // its post is gone, or userID may no longer see it
		}
		v := NotifyView{NotifyGroup: g, Post: views[g.PostID], Comment: comments[g.CommentID], Actors: make([]*User, 0, len(g.ActorIDs))}
		for _, id := range g.ActorIDs {
			if u := users[id]; u != nil && x.User(id) == Shown {
				v.Actors = append(v.Actors, u)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// NoticeEvent is the live event of a notice: it reaches the streams of
// n.UserID, which read the group anew (it may be gone).
func NoticeEvent(n Notice) Event {
	return Event{Kind: EventNotification, Entry: Entry{PostID: n.GroupID}, Users: []int64{n.UserID}}
}
