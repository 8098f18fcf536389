package feed

import (
	"cmp"
	"time"
)

// The rules that decide how a post reaches its readers: push or pull per
// author, which followers a fan-out skips as inactive, when a returning
// user's inbox is regenerated, and how many posts a new follow copies.
// They are pure functions of counts and times, written once here: the
// fan-out workers (package fanout), the read path (read.go, auth.go) and
// `feedd bench capacity`'s simulation (docs/scaling.md) all call them, so the
// simulation counts what the service decides.

// EntersPull reports whether an author in mode with fans followers is put
// in pull mode under threshold (0: pull mode is off): a push-mode author
// whose audience reached the threshold. The follow that crosses it and
// the author's next post job both apply it.
func EntersPull(mode Mode, fans, threshold int) bool {
	return threshold > 0 && mode == PushMode && fans >= threshold
}

// StaysPull reports whether a pull-mode author with fans followers stays in
// pull mode: leaving it takes an audience below 9/10 of threshold, so an
// audience hovering at the line does not flap.
func StaysPull(fans, threshold int) bool { return fans*10 >= threshold*9 }

// Pushed reports whether posts of an author in mode are fanned out to the
// followers' inboxes (push mode, and while leaving pull mode); a pull-mode
// author's posts reach only their own inbox and their outbox.
func Pushed(mode Mode) bool { return mode != PullMode }

// Merged reports whether an author in mode is merged into their followers'
// feeds at read time (SocialStore.PullFollowees): pull mode, and while
// leaving it.
func Merged(mode Mode) bool { return mode != PushMode }

// ActiveSince is the activity horizon (ms) of a delivery made for time at
// (ms): followers last active before it are skipped by fan-out
// (SocialStore.ActiveFollowersAfter), 0 when window is 0 (nobody is).
func ActiveSince(at int64, window time.Duration) int64 {
	if window <= 0 {
		return 0
	}
	return at - window.Milliseconds()
}

// IsActive reports whether a user last active at lastActive (ms) is
// delivered to under the horizon since (ActiveSince): the test the stores'
// ActiveFollowersAfter queries make (active_at >= since).
func IsActive(lastActive, since int64) bool { return since == 0 || lastActive >= since }

// Regenerates reports whether a user last active at prev and seen at now
// was skipped by fan-out meanwhile, so their inbox is rebuilt before they
// read it: away for more than window (0: never).
func Regenerates(prev, now time.Time, window time.Duration) bool {
	return window > 0 && now.Sub(prev) > window
}

// TouchDue reports whether a user seen at now whose stored activity time
// is prev gets it rewritten (SocialStore.Touch with TouchInterval): at most
// one write per interval.
func TouchDue(prev, now time.Time) bool { return prev.Before(now.Add(-TouchInterval)) }

// InboxCapOr is the inbox cap in force for a setting of cap: cap, or
// DefaultInboxCap when it is not positive.
func InboxCapOr(cap int) int { return cmp.Or(max(cap, 0), DefaultInboxCap) }

// BackfillSize is how many of a followee's newest posts a new follow copies
// into the follower's inbox for the settings backfill and cap (each 0 or
// negative: its default): backfill, never more than the cap.
func BackfillSize(backfill, cap int) int {
	return min(cmp.Or(max(backfill, 0), DefaultBackfill), InboxCapOr(cap))
}
