package feed

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Web Push: notifications that reach a browser whose page is closed
// (RFC 8030, the message encrypted for the browser as RFC 8291 says and
// signed with the server's VAPID key, RFC 8292).
//
// A browser's PushSubscription is stored for its user with the kinds of
// notification it wants (its alerts). When a notification group opens
// (notify.go: one per group, so a burst of likes of one post is one push,
// and what the told-once rule skips is never pushed), the store enqueues a
// PushJob per subscription that wants the group's kind, in the same
// transaction. The job (DeliverPush) reads the group as the notification
// list shows it, so what the reader's mutes and blocks hide is not sent,
// nor a group read or gone meanwhile, and posts it to the endpoint; the
// push service's answer decides what follows: sent, retried after its
// Retry-After (429, 5xx), or the subscription removed (404, 410).

// Defaults and limits of Web Push.
const (
	// MaxPushSubscriptions is how many subscriptions one user keeps; a new
	// one replaces the oldest.
	MaxPushSubscriptions = 10
	// DefaultPushTTL is how long a push service keeps a message for a
	// browser that is offline; a job does not send a group older than it.
	DefaultPushTTL = 24 * time.Hour
	// MaxPushEndpoint bounds an endpoint URL's length.
	MaxPushEndpoint = 1024
	// pushBodyMax bounds the text of a message's body, in characters.
	pushBodyMax = 140
)

// NotifyKinds are the kinds of notification groups (notify.go): the keys
// of a push subscription's alerts.
var NotifyKinds = []string{NotifyLike, NotifyFollow, NotifyComment, NotifyReply, NotifyModeration}

// pushSentence is how a push message says what a group of each kind
// tells: "<actors> <sentence>". A kind without one is said by its name.
var pushSentence = map[string]string{
	NotifyLike:    "liked your post",
	NotifyFollow:  "followed you",
	NotifyComment: "commented on your post",
	NotifyReply:   "replied to your comment",
}

// pushUrgency is the RFC 8030 urgency of each kind's messages ("normal"
// for a kind not named): what can wait for a device on battery waits.
var pushUrgency = map[string]string{NotifyLike: "low", NotifyFollow: "low"}

// PushSubscription is one browser's subscription, as its PushSubscription
// object gives it.
type PushSubscription struct {
	ID       int64
	UserID   int64
	Endpoint string // the push service's URL for this browser
	P256dh   string // the browser's P-256 public key, base64url (65 bytes)
	Auth     string // the browser's authentication secret, base64url (16 bytes)
	// AlertsOff are the kinds not pushed; every other kind is, those
	// added to NotifyKinds later too.
	AlertsOff []string
	CreatedAt time.Time
}

// Alerts is the subscription's alerts: every kind of NotifyKinds, on or off.
func (p *PushSubscription) Alerts() map[string]bool {
	m := make(map[string]bool, len(NotifyKinds))
	for _, k := range NotifyKinds {
		m[k] = p.Alerted(k)
	}
	return m
}

// Alerted reports whether groups of kind are pushed.
func (p *PushSubscription) Alerted(kind string) bool { return !slices.Contains(p.AlertsOff, kind) }

// VAPIDKeys is the server's key pair that signs its pushes (RFC 8292): a
// P-256 private key and its uncompressed public key, base64url.
type VAPIDKeys struct {
	Private, Public string
}

// PushStore keeps push subscriptions and the VAPID keys. The stores
// enqueue PushJobs in the transactions that open notification groups.
// Implementations: sqlite.DB, postgres.DB; feedtest.TestPushStore is the
// contract.
type PushStore interface {
	// SavePushSubscription stores sub for sub.UserID and sets its ID and
	// CreatedAt. A subscription of the same endpoint, whoever's it was, is
	// replaced (a browser has one per server); beyond
	// MaxPushSubscriptions, the user's oldest go.
	SavePushSubscription(ctx context.Context, sub *PushSubscription) error
	// PushSubscriptions returns userID's subscriptions, oldest first.
	PushSubscriptions(ctx context.Context, userID int64) ([]PushSubscription, error)
	// PushSubscription returns subscription id; ENOTFOUND if there is none.
	PushSubscription(ctx context.Context, id int64) (*PushSubscription, error)
	// DeletePushSubscription removes subscription id of userID (of
	// anyone's when userID is 0); ENOTFOUND if there is none.
	DeletePushSubscription(ctx context.Context, userID, id int64) error
	// VAPIDKeys returns the stored VAPID keys; when there are none, it
	// stores gen's first. Every process of a database gets the same keys.
	VAPIDKeys(ctx context.Context, gen func() (VAPIDKeys, error)) (VAPIDKeys, error)
}

// ErrPushEndpoint is in the chain of a PushSender's error when the
// endpoint may not be posted to (not https, or not a public address): the
// same send would be refused again.
var ErrPushEndpoint = errors.New("push endpoint not allowed")

// PushMessage is one message to send.
type PushMessage struct {
	Payload []byte
	TTL     time.Duration
	Urgency string // RFC 8030: very-low, low, normal or high
	Topic   string // a pending message of the same topic is replaced
}

// PushResult is the push service's answer.
type PushResult struct {
	Status     int
	RetryAfter time.Duration // its Retry-After (0: none)
}

// PushSender posts encrypted messages to push services (push.Sender).
type PushSender interface {
	// CheckEndpoint returns EINVALID for an endpoint feedd may not post
	// to, as far as its URL tells (the address it resolves to is checked
	// when a message is sent).
	CheckEndpoint(endpoint string) error
	// Send encrypts m for sub and posts it to sub.Endpoint, signed with
	// keys; an error wrapping ErrPushEndpoint when the endpoint turns out
	// not to be allowed, another when no answer came.
	Send(ctx context.Context, sub *PushSubscription, keys VAPIDKeys, m PushMessage) (PushResult, error)
	// GenerateKeys makes a new VAPID key pair.
	GenerateKeys() (VAPIDKeys, error)
}

// Push is the Web Push side of a Service.
type Push struct {
	Store  PushStore
	Sender PushSender
	// TTL is the messages' time to live (DefaultPushTTL if zero).
	TTL time.Duration

	mu   sync.Mutex
	keys *VAPIDKeys
}

func (p *Push) ttl() time.Duration {
	if p.TTL > 0 {
		return p.TTL
	}
	return DefaultPushTTL
}

// Keys returns the VAPID keys, generated and stored on the first call
// against a new database, then kept in memory.
func (p *Push) Keys(ctx context.Context) (VAPIDKeys, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys != nil {
		return *p.keys, nil
	}
	k, err := p.Store.VAPIDKeys(ctx, p.Sender.GenerateKeys)
	if err != nil {
		return VAPIDKeys{}, err
	}
	p.keys = &k
	return k, nil
}

func (s *Service) push() (*Push, error) {
	if s.Push == nil {
		return nil, Errorf(ENOTFOUND, "web push is not enabled")
	}
	return s.Push, nil
}

// PushKey returns the public VAPID key browsers subscribe with
// (applicationServerKey), base64url.
func (s *Service) PushKey(ctx context.Context) (string, error) {
	p, err := s.push()
	if err != nil {
		return "", err
	}
	k, err := p.Keys(ctx)
	return k.Public, err
}

// PushInput is a subscription as a browser's PushSubscription.toJSON()
// gives it, with the alerts asked for: kinds of NotifyKinds, each on or
// off (a kind not named is on).
type PushInput struct {
	Endpoint     string
	P256dh, Auth string
	Alerts       map[string]bool
}

// SubscribePush stores a subscription for userID (replacing one of the
// same endpoint). EINVALID for an endpoint feedd may not post to, keys
// that are not a P-256 public key and a 16-byte secret, or an alert of an
// unknown kind.
func (s *Service) SubscribePush(ctx context.Context, userID int64, in PushInput) (*PushSubscription, error) {
	p, err := s.push()
	if err != nil {
		return nil, err
	}
	if err := checkEndpointURL(in.Endpoint); err != nil {
		return nil, err
	}
	if err := p.Sender.CheckEndpoint(in.Endpoint); err != nil {
		return nil, err
	}
	key, err := decodeKey(in.P256dh)
	if err != nil {
		return nil, Errorf(EINVALID, "keys.p256dh must be a P-256 public key, base64url")
	}
	if _, err := ecdh.P256().NewPublicKey(key); err != nil {
		return nil, Errorf(EINVALID, "keys.p256dh must be a P-256 public key, base64url")
	}
	if auth, err := decodeKey(in.Auth); err != nil || len(auth) != 16 {
		return nil, Errorf(EINVALID, "keys.auth must be 16 bytes, base64url")
	}
	sub := &PushSubscription{UserID: userID, Endpoint: in.Endpoint, P256dh: in.P256dh, Auth: in.Auth, CreatedAt: s.now()}
	for k, on := range in.Alerts {
		if !slices.Contains(NotifyKinds, k) {
			return nil, Errorf(EINVALID, "alerts: unknown kind %q (kinds: %s)", k, strings.Join(NotifyKinds, ", "))
		}
		if !on {
			sub.AlertsOff = append(sub.AlertsOff, k)
		}
	}
	slices.Sort(sub.AlertsOff)
	if err := p.Store.SavePushSubscription(ctx, sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// checkEndpointURL refuses an endpoint that is not an absolute http(s)
// URL of a reasonable length, without user info or fragment; the sender
// decides the rest (https, public addresses).
func checkEndpointURL(endpoint string) error {
	bad := Errorf(EINVALID, "endpoint must be the push service's https URL the browser gave (at most %d bytes)", MaxPushEndpoint)
	if len(endpoint) == 0 || len(endpoint) > MaxPushEndpoint {
		return bad
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return bad
	}
	return nil
}

// decodeKey decodes a key of a PushSubscription: base64url, padded or not.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// PushSubscriptions returns userID's subscriptions, oldest first.
func (s *Service) PushSubscriptions(ctx context.Context, userID int64) ([]PushSubscription, error) {
	p, err := s.push()
	if err != nil {
		return nil, err
	}
	return p.Store.PushSubscriptions(ctx, userID)
}

// UnsubscribePush removes subscription id of userID. ENOTFOUND if userID
// has no such subscription.
func (s *Service) UnsubscribePush(ctx context.Context, userID, id int64) error {
	p, err := s.push()
	if err != nil {
		return err
	}
	if err := validID("id", id); err != nil {
		return err
	}
	return p.Store.DeletePushSubscription(ctx, userID, id)
}

// PushOutcome is what became of a push job.
type PushOutcome int

// Outcomes of DeliverPush.
const (
	PushSent    PushOutcome = iota // the push service took the message
	PushSkipped                    // nothing to send: see DeliverPush
	PushGone                       // the endpoint is gone (404, 410): the subscription was removed
	PushRetry                      // try again later (429, 5xx, no answer)
	PushRefused                    // refused for good (another 4xx, an endpoint not allowed)
)

func (o PushOutcome) String() string {
	return [...]string{"sent", "skipped", "gone", "retry", "refused"}[o]
}

// PushPayload is the JSON a push message carries to the service worker
// (web/static/sw.js): a notification ready to show, tagged with its
// group's key so that a newer one of the group replaces it.
type PushPayload struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Count  int    `json:"count"`
	PostID int64  `json:"post_id,omitempty"`
	URL    string `json:"url"`
}

// DeliverPush runs PushJob j: it sends group j.GroupID of j.UserID to
// subscription j.SubscriptionID. Nothing is sent (PushSkipped) when the
// subscription is gone or no longer wants the kind, when the group is
// gone or shows nobody (its actors retracted, muted or blocked: the group
// is read as the notification list shows it), read already, or older
// than the messages' TTL. For PushRetry, retryAfter is the push service's
// Retry-After (0: none said). An error is the store's: retry.
func (s *Service) DeliverPush(ctx context.Context, j PushJob) (out PushOutcome, retryAfter time.Duration, err error) {
	p, err := s.push()
	if err != nil {
		return PushSkipped, 0, nil
	}
	sub, err := p.Store.PushSubscription(ctx, j.SubscriptionID)
	if ErrorCode(err) == ENOTFOUND || (err == nil && sub.UserID != j.UserID) {
		return PushSkipped, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	g, err := s.NotificationGroup(ctx, j.UserID, j.GroupID)
	if ErrorCode(err) == ENOTFOUND {
		return PushSkipped, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	if !sub.Alerted(g.Kind) || !g.Unread || s.now().Sub(g.LatestAt) > p.ttl() || (g.Kind != NotifyModeration && len(g.Actors) == 0) {
		return PushSkipped, 0, nil
	}
	keys, err := p.Keys(ctx)
	if err != nil {
		return 0, 0, err
	}
	payload, err := json.Marshal(PushPayloadOf(g))
	if err != nil {
		return 0, 0, err
	}
	urgency := pushUrgency[g.Kind]
	if urgency == "" {
		urgency = "normal"
	}
	res, err := p.Sender.Send(ctx, sub, keys, PushMessage{Payload: payload, TTL: p.ttl(), Urgency: urgency, Topic: NotifyKey(g.ID)})
	switch {
	case errors.Is(err, ErrPushEndpoint):
		return PushRefused, 0, nil
	case err != nil:
		return PushRetry, 0, nil
	case res.Status >= 200 && res.Status < 300:
		return PushSent, 0, nil
	case res.Status == 404 || res.Status == 410:
		if err := p.Store.DeletePushSubscription(ctx, 0, sub.ID); err != nil && ErrorCode(err) != ENOTFOUND {
			return 0, 0, err
		}
		return PushGone, 0, nil
	case res.Status == 429 || res.Status >= 500:
		return PushRetry, res.RetryAfter, nil
	}
	return PushRefused, 0, nil
}

// PushPayloadOf is the message of a hydrated group: "Ana and 2 others
// liked your post", with the post's title (or the comment answered) as
// its body.
func PushPayloadOf(g *NotifyView) PushPayload {
	p := PushPayload{Key: NotifyKey(g.ID), Kind: g.Kind, Count: g.Count, URL: "/"}
	if g.Post != nil {
		p.PostID = g.Post.ID
		p.Body = clip(g.Post.Title, pushBodyMax)
	}
	if g.Comment != nil {
		p.Body = clip(g.Comment.Text, pushBodyMax)
	}
	if g.Kind == NotifyModeration {
		p.Title = "Your post was " + g.Action + " by moderation"
		return p
	}
	names := ""
	if len(g.Actors) > 0 {
		names = g.Actors[0].NickName
	}
	switch others := g.Count - 1; {
	case others == 1 && len(g.Actors) > 1:
		names += " and " + g.Actors[1].NickName
	case others == 1:
		names += " and 1 other"
	case others > 1:
		names += fmt.Sprintf(" and %d others", others)
	}
	sentence, ok := pushSentence[g.Kind]
	if !ok {
		sentence = "(" + g.Kind + ")"
	}
	p.Title = names + " " + sentence
	return p
}

// clip cuts s to at most n characters, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
