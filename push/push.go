// Package push sends Web Push messages for feedd: the message encrypted
// for the browser (RFC 8291, aes128gcm) and signed with the server's
// VAPID key (RFC 8292) by webpush-go, and posted (RFC 8030) only to
// push services on public addresses, so that nobody can make feedd post
// to the network it runs in by subscribing an endpoint there.
package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	feed "github.com/feedd/feedd"
)

var _ feed.PushSender = (*Sender)(nil)

// Timeouts of one push.
const (
	dialTimeout = 5 * time.Second
	sendTimeout = 20 * time.Second
)

// Sender posts push messages. The zero value is not usable: New makes one.
type Sender struct {
	subject string
	allow   map[string]bool // host:port, lower case
	client  *http.Client
}

// New returns a sender whose messages name subject (a mailto: or https:
// URL where the push service can reach the operator) and that also posts
// to the endpoints at allow (host:port), over http or https, whatever
// their address.
func New(subject string, allow []string) (*Sender, error) {
	if err := CheckSubject(subject); err != nil {
		return nil, err
	}
	s := &Sender{subject: subject, allow: map[string]bool{}}
	for _, a := range allow {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("push endpoint allowed %q: want host:port", a)
		}
		s.allow[strings.ToLower(net.JoinHostPort(host, port))] = true
	}
	public := &net.Dialer{Timeout: dialTimeout, Control: publicOnly}
	anyAddr := &net.Dialer{Timeout: dialTimeout}
	tr := &http.Transport{
		Proxy: nil, // a proxy would dial for us, past the address check
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if s.allow[strings.ToLower(addr)] {
				return anyAddr.DialContext(ctx, network, addr)
			}
			return public.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: sendTimeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
	s.client = &http.Client{
		Transport: tr,
		Timeout:   sendTimeout,
		// A push service answers; it does not send us elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s, nil
}

// CheckSubject refuses a VAPID subject that is not a mailto: or https:
// URL (RFC 8292, section 2.1).
func CheckSubject(subject string) error {
	u, err := url.Parse(subject)
	if err != nil || !((u.Scheme == "mailto" && u.Opaque != "") || (u.Scheme == "https" && u.Host != "")) {
		return fmt.Errorf("push subject %q: want a mailto: or https: URL", subject)
	}
	return nil
}

// CheckEndpoint implements feed.PushSender: an endpoint must be https,
// on a name or a public address, unless its host:port is allowed. The
// address a name resolves to is checked when it is dialled.
func (s *Sender) CheckEndpoint(endpoint string) error {
	if err := s.check(endpoint); err != nil {
		return feed.Errorf(feed.EINVALID, "endpoint: %v", err)
	}
	return nil
}

func (s *Sender) check(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return errors.New("not a URL")
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	case u.Scheme == "http":
		port = "80"
	}
	if s.allow[strings.ToLower(net.JoinHostPort(u.Hostname(), port))] && (u.Scheme == "https" || u.Scheme == "http") {
		return nil
	}
	if u.Scheme != "https" {
		return errors.New("must be an https URL")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		if !Public(a) {
			return fmt.Errorf("%s is not a public address", a)
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") {
		return fmt.Errorf("%s is not a public name", host)
	}
	return nil
}

// publicOnly is the Control of the dialer of endpoints not allowed by
// name: it refuses, before connecting, an address that is not public, so
// a name resolving to an internal address (DNS rebinding included) is
// never reached.
func publicOnly(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address", feed.ErrPushEndpoint, address)
	}
	return nil
}

// notPublic are the address blocks that are not public beyond what
// netip.Addr's methods say (IANA's special-purpose registries):
// shared, benchmarking, documentation and reserved ranges, and the IPv6
// prefixes that embed or translate an IPv4 address (NAT64, 6to4, Teredo),
// which could reach a private one.
var notPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "fec0::/10",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Public reports whether a is a public unicast address.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// GenerateKeys implements feed.PushSender.
func (s *Sender) GenerateKeys() (feed.VAPIDKeys, error) {
	priv, pub, err := webpush.GenerateVAPIDKeys()
	return feed.VAPIDKeys{Private: priv, Public: pub}, err
}

// Send implements feed.PushSender.
func (s *Sender) Send(ctx context.Context, sub *feed.PushSubscription, keys feed.VAPIDKeys, m feed.PushMessage) (feed.PushResult, error) {
	if err := s.check(sub.Endpoint); err != nil {
		return feed.PushResult{}, fmt.Errorf("%w: %v", feed.ErrPushEndpoint, err)
	}
	resp, err := webpush.SendNotificationWithContext(ctx, m.Payload, &webpush.Subscription{
		Endpoint: sub.Endpoint, Keys: webpush.Keys{Auth: sub.Auth, P256dh: sub.P256dh},
	}, &webpush.Options{
		HTTPClient: s.client,
		// webpush-go writes "mailto:" before a subject that is not https.
		Subscriber:      strings.TrimPrefix(s.subject, "mailto:"),
		TTL:             int(m.TTL / time.Second),
		Urgency:         webpush.Urgency(m.Urgency),
		Topic:           m.Topic,
		VAPIDPublicKey:  keys.Public,
		VAPIDPrivateKey: keys.Private,
	})
	if err != nil {
		return feed.PushResult{}, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // keeps the connection for the next push
	return feed.PushResult{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}, nil
}

// retryAfter parses a Retry-After header: seconds or an HTTP date; 0 if
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
