// Package feed is the domain of feedd: users, posts, follows, likes and the
// follow feed (timeline). It declares the types and the interfaces that the
// storage packages (sqlite, postgres, redis) implement, and Service, the
// business rules shared by every backend. It does no I/O of its own.
//
// A file per concern:
//
//	cursor.go   feed order, bounds, both cursors, page limits
//	read.go     reading a feed: inbox, outbox, merge, rebuild, hydrate
//	delivery.go the delivery rules: push or pull, who is skipped, rebuilds, backfills
//	auth.go     login codes and sessions
//	limit.go    abuse limits: RateStore, N/DURATION limits
//	post.go     posts and likes
//	social.go   follows, mutes, blocks, lists
//	user.go     users
//	job.go      the durable jobs stores enqueue
//	filter.go   muted words, reports and hidden posts (every timeline)
//	rank.go     the ranked timeline: candidates, snapshots, pages (the
//	            model itself is package rank)
//	event.go    live timeline events (EventService)
//	notify.go   grouped notifications (NotifyStore)
//	observe.go  hooks for metrics (Observer)
//	service.go  Service and the defaults
//	error.go    error codes
//	version.go  the release this source is, and the refusal of a newer database
package feed
