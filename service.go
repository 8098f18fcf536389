package feed

import (
	"crypto/rand"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/feedd/feedd/rank"
)

// Defaults of the feed's shape, defined once: the command's flags, the
// stores and the jobs all use these.
const (
	// DefaultInboxCap is how many entries an inbox keeps, as Mastodon's and
	// Twitter's timelines do.
	DefaultInboxCap = 800
	// DefaultBackfill is how many of an author's newest posts a new
	// follower gets in their inbox (never more than the inbox cap).
	DefaultBackfill = 200
)

// Service holds the business rules of feedd on top of the store interfaces.
// Every backend combination runs the same Service; every store field is
// required.
type Service struct {
	Users   UserStore
	Auth    AuthStore
	Posts   PostStore
	Follows FollowStore
	Social  SocialStore
	Inbox   Inbox
	Outbox  Outbox
	// SessionPages, when set, reads a session and an inbox page in one
	// round trip (ScrollFeedAs, TimelineAs); it must be the Auth and Inbox
	// stores' own (redis.SessionPages). nil: two round trips.
	SessionPages SessionPager
	Codes        CodeSender
	// Rates counts the abuse limits of Limits; nil: no limits (tests).
	Rates  RateStore
	Limits LoginLimits
	// WriteLimits are the per-user limits the API counts with CountWrite
	// (writelimit.go); the zero value: none.
	WriteLimits WriteLimits
	// Secret keys the stored hashes of login codes. Processes sharing a
	// database must share it; empty: a random key of this process.
	Secret []byte
	// Filters, Ranks and Snapshots serve the content filters and the
	// ranked timeline (filter.go, rank.go).
	Filters   FilterStore
	Ranks     RankStore
	Snapshots SnapshotStore
	// Rank is the ranked timeline's model; rank.Default() if nil.
	Rank *rank.Settings
	// Comments serves comments (comment.go); nil: the comment routes
	// answer ENOTFOUND.
	Comments CommentStore
	// Notify serves the notification groups (notify.go); nil: the
	// notification reads answer ENOTFOUND.
	Notify NotifyStore
	// Markers keeps where users stopped reading (marker.go); nil: the
	// marker routes answer ENOTFOUND.
	Markers MarkerStore
	// Push keeps Web Push subscriptions and sends them (push.go); nil:
	// the push routes answer ENOTFOUND.
	Push *Push
	// Reposts serves reposts, quotes and show_reposts (repost.go); nil:
	// their routes answer ENOTFOUND and feeds show no repost.
	Reposts RepostStore
	// Media, Blobs and Images store and serve uploaded images (media.go);
	// any nil: uploads are refused and posts name no uploads.
	Media       MediaStore
	Blobs       BlobStore
	Images      ImageProcessor
	MediaLimits MediaSettings
	// ReportThreshold: a post reported by this many distinct users is
	// hidden from all but its author; DefaultReportThreshold if zero.
	ReportThreshold int
	// ReportMinAge: only reports by accounts at least this old when they
	// report count toward ReportThreshold (0: any age).
	ReportMinAge time.Duration
	// ReportLimit bounds the reports one user files (off: no limit).
	ReportLimit Limit
	// ActiveWindow: a user not seen for this long is skipped by fan-out, and
	// their inbox is regenerated when they come back (0: nobody is skipped).
	ActiveWindow time.Duration
	// Tokens verifies the tokens of the app's own login, and Identities
	// links their users (identity.go); nil Tokens: such tokens are refused.
	Tokens     TokenVerifier
	Identities IdentityStore
	// PhoneLoginOff turns the phone-code login off (SendCode and Login
	// refuse with EFORBIDDEN).
	PhoneLoginOff bool
	// APIKeys, AppIssuer and ServerLimit serve the server API
	// (serverapi.go): its keys, the issuer of the users it names by the
	// app's references, and each key's budget of work.
	APIKeys     APIKeyStore
	AppIssuer   string
	ServerLimit Limit
	// Accounts exports and erases users' data (account.go).
	Accounts AccountStore
	// PullThreshold: a user followed by at least this many is put in pull
	// mode by the follow that crosses it (0: never). Leaving pull mode is the
	// follow job's work (fanout).
	PullThreshold int

	Now      func() time.Time // defaults to time.Now
	Rand     io.Reader        // defaults to crypto/rand.Reader
	PageSize int              // default compatible page size; DefaultPageSize if zero
	InboxCap int              // entries a rebuilt inbox holds; DefaultInboxCap if zero
	Log      *slog.Logger
	Observe  Observer // told of rebuilds, degraded reads, codes sent; nil: nobody
	Trace    *Tracer  // logs each post's commit (--trace-posts); nil: nothing

	touched  sync.Map // user id -> time.Time of this process's last Touch
	keysUsed sync.Map // API key id -> time.Time of this process's last TouchAPIKey

	secretOnce sync.Once
	key        []byte // Secret, or the process's random key
}

func (s *Service) inboxCap() int { return InboxCapOr(s.InboxCap) }

func (s *Service) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return DefaultPageSize
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) rand() io.Reader {
	if s.Rand != nil {
		return s.Rand
	}
	return rand.Reader
}

func validID(name string, id int64) error {
	if id <= 0 {
		return Errorf(EINVALID, "%s must be a positive integer", name)
	}
	return nil
}
