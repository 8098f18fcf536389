// Package redis is everything Redis does for feedd: the inboxes of the follow
// feed (one sorted set per user) and the login codes and sessions, with
// native expiry. Every type takes a goredis.UniversalClient, so one code path
// serves a single node, Sentinel and Cluster.
//
// Key layout (Prefix is the deployment's, or a test's, namespace):
//
//	{Prefix}feed:{<userID>}       sorted set, LayoutSortedSet: score = post time (ms),
//	                              member = decimal post id, plus the sentinel member "-" at
//	                              score -inf (see Inbox)
//	{Prefix}feed:{<userID>}:head  sorted set, LayoutPacked (the default): the head, score =
//	                              post time (ms), member = the 14-byte packed entry, plus the
//	                              sentinel "-" and the member "=" (the body below exists), both
//	                              at -inf
//	{Prefix}feed:{<userID>}:packed  string, LayoutPacked: the body, a 12-byte header and
//	                              a ring of 14-byte entries in feed order (see LayoutPacked,
//	                              PackedHeaderSize, PackedEntrySize)
//	{Prefix}outbox:{<authorID>}   sorted set like an inbox: the author's own newest posts
//	{Prefix}code:{<phone>}        hash: hash, sent, expires, tries (ms times); PEXPIRE'd
//	{Prefix}session:{<tokenHash>} hash: user, expires (ms); PEXPIRE'd
//	{Prefix}rate:{<key>}          hash: n, ends (ms): an abuse-limit counter and its window; PEXPIRE'd
//	{Prefix}rank:{<userID>}:<id>  string: a ranked snapshot's items (JSON); PEXPIRE'd
//
// The braces are Redis Cluster hash tags: every key names one entity, and
// every script touches one key, so each runs on the node that owns the key.
package redis

import (
	"strconv"
)

// The key builders below are the only place the layout is spelled out:
// anything else that names a key (tests, benchmarks) calls them.

// InboxKey is the key of userID's inbox (a sorted set) under prefix.
func InboxKey(prefix string, userID int64) string {
	return prefix + "feed:{" + strconv.FormatInt(userID, 10) + "}"
}

// PackedHeadKey is the key of the head of userID's packed inbox (a sorted
// set whose members are packed entries, see LayoutPacked) under prefix:
// InboxKey and ":head". Its body is BodyKey, of the same hash tag.
func PackedHeadKey(prefix string, userID int64) string {
	return InboxKey(prefix, userID) + ":head"
}

// OutboxKey is the key of authorID's own posts (a sorted set, see Outbox)
// under prefix.
func OutboxKey(prefix string, authorID int64) string {
	return prefix + "outbox:{" + strconv.FormatInt(authorID, 10) + "}"
}

// CodeKey is the key of phone's live login code (a hash) under prefix.
func CodeKey(prefix, phone string) string {
	return prefix + "code:{" + phone + "}"
}

// SessionKey is the key of the session whose token hashes to tokenHash (a
// hash) under prefix.
func SessionKey(prefix, tokenHash string) string {
	return prefix + "session:{" + tokenHash + "}"
}

// RateKey is the key of the abuse-limit counter of key (a hash) under
// prefix.
func RateKey(prefix, key string) string {
	return prefix + "rate:{" + key + "}"
}
