package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	feed "github.com/feedd/feedd"
)

// SessionPages is feed.SessionPager on Redis: AuthStore's sessionScript
// and Inbox's page script in one pipeline, so one round trip (on a Cluster,
// one to each node owning either key, sent at once). Both scripts run as
// they do alone, each on its one key; the page is handed over only when the
// session is live and is the claimed user's.
type SessionPages struct {
	auth  *AuthStore
	inbox *Inbox
}

var _ feed.SessionPager = (*SessionPages)(nil)

// NewSessionPages returns the SessionPages of auth and inbox, which must
// share one client (a pipeline goes through one).
func NewSessionPages(auth *AuthStore, inbox *Inbox) (*SessionPages, error) {
	if auth.rdb != inbox.rdb {
		return nil, errors.New("redis: SessionPages needs the AuthStore and the Inbox on one client")
	}
	return &SessionPages{auth: auth, inbox: inbox}, nil
}

// SessionPage implements feed.SessionPager. A session missing from Redis is
// reported as EUNAUTHORIZED without asking AuthStore.Durable: the caller's
// AuthStore.Session does that. A Redis that does not hold the scripts yet
// (a restart, SCRIPT FLUSH) gets the two calls one after the other, which
// load them.
func (sp *SessionPages) SessionPage(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration, userID int64, b feed.Bound, offset, limit int) feed.SessionPage {
	if offset < 0 || limit <= 0 {
		id, err := sp.auth.Session(ctx, tokenHash, now, ttl)
		return feed.SessionPage{UserID: id, SessionErr: err, Entries: []feed.Entry{}}
	}
	script, keys, args := sp.inbox.pageCall(userID, b, offset+limit)
	var session, page *goredis.Cmd
	sp.auth.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		session = sessionScript.EvalSha(ctx, p, []string{SessionKey(sp.auth.prefix, tokenHash)}, sessionArgs(now, ttl)...)
		page = script.EvalSha(ctx, p, keys, args...)
		return nil
	})
	if isNoScript(session.Err()) || isNoScript(page.Err()) {
		id, err := sp.auth.Session(ctx, tokenHash, now, ttl)
		r := feed.SessionPage{UserID: id, SessionErr: err}
		if err == nil && id == userID {
			r.Entries, r.PageErr = sp.inbox.Page(ctx, userID, b, offset, limit)
		}
		return r
	}
	sres, err := session.StringSlice()
	id, err := sp.auth.sessionReply(ctx, tokenHash, now, ttl, sres, err)
	if err != nil || id != userID {
		return feed.SessionPage{UserID: id, SessionErr: err} // the page is dropped unread
	}
	pres, err := page.Slice()
	entries, err := sp.inbox.pageReply(userID, b, offset, limit, pres, err)
	return feed.SessionPage{UserID: id, Entries: entries, PageErr: err}
}
