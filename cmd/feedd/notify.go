package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync/atomic"

	feed "github.com/feedd/feedd"
)

// declareNotifyFlags declares the flags of grouped notifications
// (feed.NotifySettings), with their FEED_* fallbacks.
func declareNotifyFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	c.notifyOn = true
	fs.BoolVar(&c.notifyOn, "notify", true, help("record notifications of likes, follows and moderation (false: none are recorded; the routes still answer)", "FEED_NOTIFY"))
	fromEnv("notify", "FEED_NOTIFY")
	fs.DurationVar(&c.notify.Window, "notify-group-window", feed.DefaultNotifyWindow, help("notifications of one kind on one target join one group until its first is this old", "FEED_NOTIFY_GROUP_WINDOW"))
	fromEnv("notify-group-window", "FEED_NOTIFY_GROUP_WINDOW")
	fs.DurationVar(&c.notify.Retention, "notify-retention", feed.DefaultNotifyRetention, help("notification groups whose latest event is older are removed (each user keeps the newest 1000 at most)", "FEED_NOTIFY_RETENTION"))
	fromEnv("notify-retention", "FEED_NOTIFY_RETENTION")
	fs.DurationVar(&c.notify.Renotify, "renotify-after", feed.DefaultRenotifyAfter, help("the same user doing the same to the same target again within this (a like taken back and given again, an unfollow and a follow) tells nobody anything new: it counts once, makes nothing unread and reopens no dismissed group", "FEED_RENOTIFY_AFTER"))
	fromEnv("renotify-after", "FEED_RENOTIFY_AFTER")
}

// validNotify checks the notification flags.
func (c *config) validNotify() error {
	if c.notify.Window <= 0 || c.notify.Retention <= 0 || c.notify.Renotify <= 0 {
		return fmt.Errorf("--notify-group-window, --notify-retention and --renotify-after must be positive")
	}
	return nil
}

// notifySettings is what the stores record with.
func (c *config) notifySettings() feed.NotifySettings {
	s := c.notify
	s.Off = !c.notifyOn
	return s
}

// noticeBuffer bounds the notices waiting to be published.
const noticeBuffer = 4096

// publishNotices returns the stores' Notified hook: it queues the notices
// of a committed transaction (it is called under SQLite's write turn, so it
// must not wait on a broker) and one goroutine publishes them as live
// events until ctx ends. What is queued when it looks is published once
// per group, in order of first appearance: a burst of likes of one post is
// one event per round, not one per like. Live events are best effort: a
// notice that finds the queue full is dropped (the group is stored; a
// client sees it at its next read), and the drops are logged once a round.
func publishNotices(ctx context.Context, events feed.EventService, log *slog.Logger) func([]feed.Notice) {
	q := make(chan feed.Notice, noticeBuffer)
	var dropped atomic.Int64
	go func() {
		for {
			var round []feed.Notice
			select {
			case <-ctx.Done():
				return
			case n := <-q:
				round = append(round, n)
			}
			seen := map[feed.Notice]bool{round[0]: true}
			for more := true; more && len(round) < noticeBuffer; {
				select {
				case n := <-q:
					if !seen[n] {
						seen[n] = true
						round = append(round, n)
					}
				default:
					more = false
				}
			}
			for _, n := range round {
				if err := events.Publish(ctx, feed.NoticeEvent(n)); err != nil && ctx.Err() == nil {
					log.Warn("publish notification event", "user_id", n.UserID, "error", err)
				}
			}
			if k := dropped.Swap(0); k > 0 {
				log.Warn("notification events dropped: the queue was full", "dropped", k)
			}
		}
	}()
	return func(ns []feed.Notice) {
		for _, n := range ns {
			select {
			case q <- n:
			default:
				dropped.Add(1)
			}
		}
	}
}
