package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/push"
)

// Web Push (docs/API.md, "Web Push"; docs/operations.md, "Markers and Web Push").

// pushFlags are the Web Push settings.
type pushFlags struct {
	on      bool
	subject string
	allow   string // comma-separated host:port
	ttl     time.Duration
}

// declarePushFlags declares the Web Push flags, with their FEED_*
// fallbacks.
func declarePushFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	fs.BoolVar(&c.push.on, "push", true, help("send Web Push notifications to the browsers that subscribe (false: the push routes answer 404 and no push is sent)", "FEED_PUSH"))
	fromEnv("push", "FEED_PUSH")
	fs.StringVar(&c.push.subject, "push-subject", "mailto:postmaster@localhost", help("mailto: or https: address that push services may contact about this server's pushes (the VAPID subject); set it to yours", "FEED_PUSH_SUBJECT"))
	fromEnv("push-subject", "FEED_PUSH_SUBJECT")
	fs.StringVar(&c.push.allow, "push-endpoint-allow", "", help("comma-separated host:port of push endpoints admitted though not https on a public address, over http or https (tests, a push service of your own network); empty: none", "FEED_PUSH_ENDPOINT_ALLOW"))
	fromEnv("push-endpoint-allow", "FEED_PUSH_ENDPOINT_ALLOW")
	fs.DurationVar(&c.push.ttl, "push-ttl", feed.DefaultPushTTL, help("how long a push service keeps a message for a browser that is offline; a notification older than this is not pushed", "FEED_PUSH_TTL"))
	fromEnv("push-ttl", "FEED_PUSH_TTL")
}

// validPush checks the Web Push flags.
func (c *config) validPush() error {
	if c.push.ttl <= 0 {
		return fmt.Errorf("--push-ttl must be positive")
	}
	if _, err := c.pushSender(); err != nil {
		return fmt.Errorf("--push-subject or --push-endpoint-allow: %w", err)
	}
	return nil
}

func (c *config) pushSender() (*push.Sender, error) {
	var allow []string
	for a := range strings.SplitSeq(c.push.allow, ",") {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	return push.New(c.push.subject, allow)
}

// newPush is the service's Web Push over store, nil when --push=false.
func (c *config) newPush(store feed.PushStore) (*feed.Push, error) {
	if !c.push.on {
		return nil, nil
	}
	sender, err := c.pushSender()
	if err != nil {
		return nil, err
	}
	return &feed.Push{Store: store, Sender: sender, TTL: c.push.ttl}, nil
}

// printPushKey is feedd push-key: the public VAPID key, made and stored
// if the database has none yet.
func printPushKey(ctx context.Context, a *app, stdout io.Writer) error {
	k, err := a.service.PushKey(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, k)
	return err
}
