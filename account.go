package feed

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A user's data as a whole: its export as JSON, and its erasure with
// everything the user made, by a durable job whose progress can be read
// (docs/integrating.md, "Export and erasure").
//
// Both walk one list, DataKinds: a kind of data feedd keeps of a user is
// one entry there, with its case in the stores' ExportPage and ErasePage
// (or, for the kinds outside the database's tables, in eraseSome).

// DataKind is one kind of a user's data.
type DataKind struct {
	Name string
	// Export: the export carries the user's items of this kind, under
	// Name.
	Export bool
	// Erase: an erasure removes them, in the order of DataKinds.
	Erase bool
}

// DataKinds is every kind of a user's data, in the order an erasure
// removes them: first what signs the user in (so that nothing new is made
// as them), then their posts (out of every inbox they reached), then the
// user's row (so that nobody can follow, mute or block them any more),
// then the rest, notifications last (others' acts on what the user made
// notify until it is gone).
var DataKinds = []DataKind{
	{Name: "sessions", Erase: true},                    // sessions, tokens (revocation), phone login
	{Name: "identities", Export: true, Erase: true},    // the (issuer, subject) pairs linked to the user
	{Name: "posts", Export: true, Erase: true},         // with their comments, likes and inbox entries
	{Name: "reposts", Export: true, Erase: true},       // of others' posts, out of every inbox they reached
	{Name: "media", Erase: true},                       // uploads and the objects no one else's share
	{Name: "profile", Export: true, Erase: true},       // the user's row
	{Name: "comments", Export: true, Erase: true},      // on others' posts
	{Name: "likes", Export: true, Erase: true},         // of posts
	{Name: "comment_likes", Export: true, Erase: true}, // of comments
	{Name: "following", Export: true, Erase: true},     // the user's follows
	{Name: "followers", Export: true, Erase: true},     // others' follows of the user
	{Name: "mutes", Export: true, Erase: true},         // the user's; erased both ways
	{Name: "blocks", Export: true, Erase: true},        // the user's; erased both ways
	{Name: "muted_words", Export: true, Erase: true},   // the user's
	{Name: "reports", Export: true, Erase: true},       // of posts and comments, by the user
	{Name: "rank_snapshots", Erase: true},              // the ranked timeline's orders
	{Name: "markers", Export: true, Erase: true},       // where the user stopped reading
	{Name: "push_subscriptions", Erase: true},          // the user's browsers' Web Push endpoints
	{Name: "inbox", Erase: true},                       // the user's timeline
	{Name: "notifications", Export: true, Erase: true}, // the user's, and the user's part in others'
}

// Batches of exports and erasures.
const (
	// ExportBatch is how many items of a kind one ExportPage reads.
	ExportBatch = 500
	// EraseBatch is how many rows one ErasePage removes at most, in one
	// transaction.
	EraseBatch = 500
)

// ExportItem is one item of an export: a JSON object's fields. Times are
// time.Time (RFC 3339 in the JSON).
type ExportItem map[string]any

// Erasure is the progress of one user's erasure.
type Erasure struct {
	ID     int64
	UserID int64
	// Step is the kind of DataKinds under way ("" before the first);
	// Cursor where in it.
	Step   string
	Cursor string
	// Counts is how many items of each kind were removed.
	Counts     map[string]int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero until done
}

// Done reports whether the erasure finished.
func (e *Erasure) Done() bool { return !e.FinishedAt.IsZero() }

// AccountStore reads and erases a user's data by kind, and keeps the
// progress of erasures.
type AccountStore interface {
	// ExportPage returns at most limit items of kind (a DataKinds entry
	// with Export) of userID after the key after (0: from the first), in
	// key order, and the key of the last (0 when no more follow).
	ExportPage(ctx context.Context, kind string, userID, after int64, limit int) (items []ExportItem, next int64, err error)
	// ErasePage removes at most about limit of userID's rows of kind (a
	// DataKinds entry with Erase that lives in the database), with the
	// counts they moved, in one transaction, and returns how many it
	// removed and whether any may be left. Idempotent.
	ErasePage(ctx context.Context, kind string, userID int64, limit int, now time.Time) (n int, more bool, err error)
	// ErasePost deletes post postID with its likes, reports and
	// notifications (its comments and inbox entries are the caller's),
	// and enqueues nothing. Idempotent.
	ErasePost(ctx context.Context, postID int64) error
	// StartErasure records the erasure of userID and, in the same
	// transaction, enqueues its EraseJob; when userID's erasure is
	// already under way it returns that one. ENOTFOUND if userID does not
	// exist and has no erasure under way.
	StartErasure(ctx context.Context, userID int64, now time.Time) (*Erasure, error)
	// Erasure returns erasure id; ENOTFOUND if there is none.
	Erasure(ctx context.Context, id int64) (*Erasure, error)
	// SaveErasure records e's step, cursor, counts and finish time.
	SaveErasure(ctx context.Context, e *Erasure, now time.Time) error
}

// Export writes every item of userID's data to write, kind by kind in the
// order of DataKinds, a page of items at a time. ENOTFOUND if there is no
// such user.
func (s *Service) Export(ctx context.Context, userID int64, write func(kind string, items []ExportItem) error) error {
	if err := validID("id", userID); err != nil {
		return err
	}
	if _, err := s.Users.User(ctx, userID); err != nil {
		return err
	}
	for _, k := range DataKinds {
		if !k.Export {
			continue
		}
		var after int64
		for {
			items, next, err := s.Accounts.ExportPage(ctx, k.Name, userID, after, ExportBatch)
			if err != nil {
				return err
			}
			if err := write(k.Name, items); err != nil {
				return err
			}
			if next == 0 {
				break
			}
			after = next
		}
	}
	return nil
}

// StartErasure starts the erasure of userID (or returns the one under
// way): the user's sessions and tokens end at once, and a durable job
// removes the rest (EraseWork). ENOTFOUND if there is no such user.
func (s *Service) StartErasure(ctx context.Context, userID int64) (*Erasure, error) {
	if err := validID("id", userID); err != nil {
		return nil, err
	}
	e, err := s.Accounts.StartErasure(ctx, userID, s.now())
	if err != nil {
		return nil, err
	}
	if e.Step == "" {
		// Signed out at once, before the job's first step does it again.
		if err := s.RevokeUser(ctx, userID); err != nil && ErrorCode(err) != ENOTFOUND {
			return nil, err
		}
	}
	return e, nil
}

// Erasure returns the progress of erasure id. ENOTFOUND if none.
func (s *Service) Erasure(ctx context.Context, id int64) (*Erasure, error) {
	if err := validID("id", id); err != nil {
		return nil, err
	}
	return s.Accounts.Erasure(ctx, id)
}

// EraseWork works erasure id (the erase job) for about budget: it runs
// the steps of DataKinds from where the erasure stands, recording its
// progress after each batch, and reports whether it finished. Each batch
// is idempotent, so work cut off anywhere is simply done again.
func (s *Service) EraseWork(ctx context.Context, id int64, budget time.Duration) (done bool, err error) {
	e, err := s.Accounts.Erasure(ctx, id)
	if err != nil || e.Done() {
		return err == nil, err
	}
	if e.Counts == nil {
		e.Counts = map[string]int{}
	}
	start := time.Now()
	i := slices.IndexFunc(DataKinds, func(k DataKind) bool { return k.Name == e.Step })
	for i = max(i, 0); i < len(DataKinds); i++ {
		k := DataKinds[i]
		if !k.Erase {
			continue
		}
		if e.Step != k.Name {
			e.Step, e.Cursor = k.Name, ""
		}
		for {
			n, cursor, more, err := s.eraseSome(ctx, e.UserID, k.Name, e.Cursor)
			if err != nil {
				return false, err
			}
			e.Counts[k.Name] += n
			e.Cursor = cursor
			if err := s.Accounts.SaveErasure(ctx, e, s.now()); err != nil {
				return false, err
			}
			if !more {
				break
			}
			if time.Since(start) > budget {
				return false, nil
			}
		}
	}
	e.Step, e.Cursor, e.FinishedAt = "", "", s.now()
	if err := s.Accounts.SaveErasure(ctx, e, e.FinishedAt); err != nil {
		return false, err
	}
	s.log().Info("user erased", "user_id", e.UserID, "erasure_id", e.ID, "counts", e.Counts)
	return true, nil
}

// eraseSome removes a batch of userID's data of kind from cursor, and
// returns how many items it removed, the cursor after them, and whether
// more may be left.
func (s *Service) eraseSome(ctx context.Context, userID int64, kind, cursor string) (n int, next string, more bool, err error) {
	switch kind {
	case "sessions":
		if err := s.Auth.EndSessions(ctx, userID); err != nil {
			return 0, "", false, err
		}
	case "posts":
		return s.erasePosts(ctx, userID, cursor)
	case "reposts":
		return s.eraseReposts(ctx, userID)
	case "media":
		return 0, "", false, s.DeleteUserMedia(ctx, userID)
	case "inbox":
		if err := s.Outbox.Clear(ctx, userID); err != nil {
			return 0, "", false, err
		}
		return 0, "", false, s.Inbox.Clear(ctx, userID)
	}
	n, more, err = s.Accounts.ErasePage(ctx, kind, userID, EraseBatch, s.now())
	return n, "", more, err
}

// eraseReposts undoes a batch of userID's reposts as the user's undos
// would (RepostStore.SetRepost: counts, and the entries out of every
// inbox by the removal jobs).
func (s *Service) eraseReposts(ctx context.Context, userID int64) (int, string, bool, error) {
	if s.Reposts == nil {
		return 0, "", false, nil
	}
	items, _, err := s.Accounts.ExportPage(ctx, "reposts", userID, 0, EraseBatch)
	if err != nil {
		return 0, "", false, err
	}
	for _, it := range items {
		postID, _ := it["post_id"].(int64)
		if _, err := s.Reposts.SetRepost(ctx, userID, postID, false, s.now()); err != nil {
			return 0, "", false, err
		}
	}
	return len(items), "", len(items) == EraseBatch, nil
}

// erasePosts removes one batch of userID's posts: the cursor names the
// post under way and the last follower whose inbox it left
// ("post:follower"). A post leaves its author's outbox and inbox, then
// its followers' inboxes a page at a time, then goes (its count is 1),
// and its comments go last, a batch at a time (comments are purged only
// once their post is gone). Each step is found again from the cursor, so
// work cut off anywhere is done again, and nothing is left behind.
func (s *Service) erasePosts(ctx context.Context, userID int64, cursor string) (int, string, bool, error) {
	postID, after := parseEraseCursor(cursor)
	var p *Post
	if postID > 0 {
		got, err := s.Posts.Post(ctx, postID)
		switch {
		case ErrorCode(err) == ENOTFOUND:
			// Gone: its comments are left.
			if s.Comments != nil {
				n, err := s.Comments.PurgeComments(ctx, postID, PurgeBatch)
				if err != nil {
					return 0, cursor, false, err
				}
				if n == PurgeBatch {
					return 0, cursor, true, nil
				}
			}
			return 0, "", true, nil
		case err != nil:
			return 0, cursor, false, err
		}
		p = got
	} else {
		posts, err := s.Posts.PostsOfUserWithin(ctx, userID, Top(), 1)
		if err != nil || len(posts) == 0 {
			return 0, "", false, err
		}
		p, after = posts[0], 0
	}
	e := p.Entry()
	if after == 0 {
		if err := s.Outbox.Remove(ctx, userID, e); err != nil {
			return 0, cursor, false, err
		}
		if err := s.Inbox.Remove(ctx, e, []int64{userID}); err != nil {
			return 0, cursor, false, err
		}
	}
	const page = 1000
	ids, err := s.Follows.FollowersAfter(ctx, userID, after, page)
	if err != nil {
		return 0, cursor, false, err
	}
	if len(ids) > 0 {
		if err := s.Inbox.Remove(ctx, e, ids); err != nil {
			return 0, cursor, false, err
		}
	}
	if len(ids) == page {
		return 0, eraseCursor(p.ID, ids[len(ids)-1]), true, nil
	}
	if err := s.Accounts.ErasePost(ctx, p.ID); err != nil {
		return 0, cursor, false, err
	}
	return 1, eraseCursor(p.ID, 0), true, nil
}

func eraseCursor(postID, after int64) string {
	return strconv.FormatInt(postID, 10) + ":" + strconv.FormatInt(after, 10)
}

func parseEraseCursor(c string) (postID, after int64) {
	p, a, _ := strings.Cut(c, ":")
	postID, _ = strconv.ParseInt(p, 10, 64)
	after, _ = strconv.ParseInt(a, 10, 64)
	return postID, after
}

// MarshalExportItems is items as a JSON array (an empty one for none).
func MarshalExportItems(items []ExportItem) ([]byte, error) {
	if items == nil {
		items = []ExportItem{}
	}
	return json.Marshal(items)
}
