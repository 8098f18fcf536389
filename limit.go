package feed

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Abuse limits of login: how many codes are sent and how many logins fail,
// per client address, per phone and in total. The counts are fixed-window
// counters kept in a RateStore shared by every API process (Redis when
// configured, else the database), so the limits hold across processes.
//
// Fixed windows, each anchored at its key's first event: a counter starts
// at a key's first event and counts until Window has passed, then the next
// event starts a new window. Not sliding windows: one counter per key is
// one atomic upsert in every store (SQL) or one script on one key (Redis),
// with no per-event rows to keep and trim. Anchoring at the first event
// rather than at the epoch means a burst cannot straddle a boundary: of a
// burst shorter than Window, at most N get through. The price of fixed
// windows is that a client pacing itself can get up to 2N in a span of
// Window across two consecutive windows, which is acceptable for limits
// meant to stop floods, not to meter exactly.

// Limit is at most N events per Window; N == 0 turns the limit off.
type Limit struct {
	N      int
	Window time.Duration
}

// Off reports whether the limit is turned off.
func (l Limit) Off() bool { return l.N <= 0 || l.Window <= 0 }

// String formats l as ParseLimit reads it.
func (l Limit) String() string {
	if l.Off() {
		return "0"
	}
	return fmt.Sprintf("%d/%s", l.N, shortDuration(l.Window))
}

func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// ParseLimit reads a limit written N/DURATION ("10/10m", "10/24h"); "0"
// turns it off.
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return Limit{}, nil
	}
	ns, ds, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 0 {
		return Limit{}, fmt.Errorf("limit %q must be N/DURATION (e.g. 10/10m) or 0", s)
	}
	d, err := time.ParseDuration(ds)
	if err != nil || d <= 0 {
		return Limit{}, fmt.Errorf("limit %q must be N/DURATION with a positive duration (e.g. 10/10m)", s)
	}
	return Limit{N: n, Window: d}, nil
}

// Set and the String method make *Limit a flag.Value.
func (l *Limit) Set(s string) error {
	v, err := ParseLimit(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// LoginLimits are the abuse limits of login (the zero value: none).
type LoginLimits struct {
	CodePerClient  Limit // codes asked for per client address
	CodeTotal      Limit // codes sent in total
	CodePerPhone   Limit // codes sent per phone, burned or not (besides CodeResendAfter)
	FailsPerClient Limit // failed logins per client address
	// CodePerPhoneClient: codes sent to one phone at the request of one
	// client address, so that no address spends much of CodePerPhone.
	CodePerPhoneClient Limit
	// SSOPerClient: single sign-ons begun per client address.
	SSOPerClient Limit
	// CodeResendAfter is the least time between two codes of one phone,
	// whoever asks (feed.CodeResendAfter if zero).
	CodeResendAfter time.Duration
}

func (l LoginLimits) resendAfter() time.Duration { return cmp.Or(l.CodeResendAfter, CodeResendAfter) }

// DefaultLoginLimits are the limits the command starts with.
var DefaultLoginLimits = LoginLimits{
	CodePerClient:  Limit{10, 10 * time.Minute},
	CodeTotal:      Limit{600, time.Minute},
	CodePerPhone:   Limit{10, 24 * time.Hour},
	FailsPerClient: Limit{20, 10 * time.Minute},

	CodePerPhoneClient: Limit{3, 24 * time.Hour},
	SSOPerClient:       Limit{30, 10 * time.Minute},
	CodeResendAfter:    CodeResendAfter,
}

// RateStore counts events in fixed windows anchored at each key's first
// event.
type RateStore interface {
	// Count adds add to the counter of key and returns the count after the
	// addition and the end of the counter's window. A key without a
	// counter, or whose window ended at or before now, starts a window
	// [now, now+window) with the count add (a peek, add 0, stores nothing
	// and returns 0). A refund, add below 0, changes only a live window
	// and never takes its count below 0 (without one it stores nothing
	// and returns 0). Times are the caller's clock. Atomic under
	// concurrent calls from any process; counters of ended windows may be
	// dropped.
	Count(ctx context.Context, key string, window time.Duration, now time.Time, add int) (count int, ends time.Time, err error)
}

type clientKey struct{}

// WithClient returns ctx carrying the client's address, which the abuse
// limits count by (the HTTP layer sets it for every request).
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// Client returns the client address of ctx ("" when unknown).
func Client(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

// TooMany is the refusal of a request over a limit: it says to wait and for
// how long.
func TooMany(retryAfter time.Duration, what string) *Error {
	secs := int((retryAfter + time.Second - 1) / time.Second)
	secs = max(secs, 1)
	return &Error{Code: ETOOMANY, RetryAfter: time.Duration(secs) * time.Second,
		Message: fmt.Sprintf("too many %s; wait %d seconds before trying again", what, secs)}
}

// refund gives back one event of key counted against l by hit, when the
// window that counted it is still live. A failure is logged, not returned:
// the caller's answer does not depend on it.
func (s *Service) refund(ctx context.Context, key string, l Limit) {
	if l.Off() || s.Rates == nil {
		return
	}
	if _, _, err := s.Rates.Count(context.WithoutCancel(ctx), key, l.Window, s.now(), -1); err != nil {
		s.log().Warn("refund of a rate limit", "error", err)
	}
}

// hit counts one event (add 1) or peeks (add 0) against l for key and
// returns a TooMany refusal when the count is over l (for a peek: at l).
// Nothing is counted and nil is returned when l is off or the service has
// no RateStore.
func (s *Service) hit(ctx context.Context, key string, l Limit, add int, what string) error {
	if l.Off() || s.Rates == nil {
		return nil
	}
	now := s.now()
	n, ends, err := s.Rates.Count(ctx, key, l.Window, now, add)
	if err != nil {
		return err
	}
	if n > l.N || (add == 0 && n >= l.N) {
		return TooMany(ends.Sub(now), what)
	}
	return nil
}
