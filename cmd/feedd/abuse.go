package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

// Login hardening of the command: checking the flags of abuse limits, code
// delivery and secrets, the webhook code sender, and the secret file of the
// embedded default.

// checkAbuse checks and parses the flags of this file's concern.
func (c *config) checkAbuse() error {
	c.proxies = nil
	for _, s := range strings.Split(c.trustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return fmt.Errorf("--trusted-proxies: %q is not a CIDR (e.g. 10.0.0.0/8)", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.proxies = append(c.proxies, p.Masked())
	}
	switch strings.ToUpper(c.synchronous) {
	case "FULL", "NORMAL":
		c.synchronous = strings.ToUpper(c.synchronous)
	default:
		return fmt.Errorf("--sqlite-synchronous must be FULL or NORMAL")
	}
	switch c.codeSender {
	case "", "log":
	case "webhook":
		u, err := url.Parse(c.webhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--code-sender webhook needs --code-webhook-url, an http(s) URL")
		}
		if u.Scheme != "https" && !loopbackHost(u.Hostname()) {
			return fmt.Errorf("--code-webhook-url must be https:// (plain http:// only to a loopback address): login codes cross the network")
		}
		if c.webhookSecret == "" {
			return fmt.Errorf("--code-sender webhook needs --code-webhook-secret")
		}
	default:
		return fmt.Errorf("--code-sender must be log or webhook")
	}
	if c.databaseURL != "" && c.cmd == "serve" {
		if c.codeSender == "" {
			return fmt.Errorf("with --database-url, set --code-sender (webhook for real deliveries, or log to write codes to the log)")
		}
		if c.secret == "" {
			return fmt.Errorf("with --database-url, set --secret (the key of stored login codes, the same in every process)")
		}
	}
	return nil
}

// loopbackHost reports whether host (no port) names this machine:
// localhost or a loopback IP address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// logSender is the default feed.CodeSender of the embedded default: it
// writes the code to the log, for local development and scripts reading
// --log-format json output.
type logSender struct{ log *slog.Logger }

func (s logSender) SendCode(ctx context.Context, phone, code string, expires time.Time) error {
	s.log.Info("login code", "phone", phone, "code", code)
	return nil
}

// webhookSender is the feed.CodeSender that POSTs each code to an HTTP
// endpoint (an SMS gateway's adapter): the JSON body {"phone","code",
// "expires_at"} with X-Feedd-Timestamp: <Unix seconds> and
// X-Feedd-Signature: sha256=<hex HMAC-SHA256 keyed with secret of the
// timestamp, ".", and the body>, so a receiver that refuses old timestamps
// cannot be replayed a captured request (docs/operations.md, "Login
// codes"). It follows no redirect (a 3xx is a failure: the code goes to
// the configured URL or nowhere), and the URL is https unless it is on
// loopback (checkAbuse). Any answer but 2xx within the timeout is a
// failure. It never writes the code anywhere else.
type webhookSender struct {
	url    string
	secret []byte
	client *http.Client
	now    func() time.Time
}

// webhookTimeout bounds one delivery.
const webhookTimeout = 5 * time.Second

func newWebhookSender(url, secret string) *webhookSender {
	return &webhookSender{url: url, secret: []byte(secret), now: time.Now, client: &http.Client{
		Timeout:       webhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// signBody is the X-Feedd-Signature value of body sent at timestamp (the
// X-Feedd-Timestamp value).
func signBody(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (s *webhookSender) SendCode(ctx context.Context, phone, code string, expires time.Time) error {
	body, err := json.Marshal(struct {
		Phone     string `json:"phone"`
		Code      string `json:"code"`
		ExpiresAt string `json:"expires_at"`
	}{phone, code, expires.UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Feedd-Timestamp", ts)
	req.Header.Set("X-Feedd-Signature", signBody(s.secret, ts, body))
	resp, err := s.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is configuration, not news; keep the cause
		}
		return fmt.Errorf("code webhook: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("code webhook answered %s: redirects are not followed", resp.Status)
	} else if resp.StatusCode/100 != 2 {
		return fmt.Errorf("code webhook answered %s", resp.Status)
	}
	return nil
}

// codeSender is the configured sender; the log sender says at start that
// codes go to the log.
func codeSender(c *config, log *slog.Logger) feed.CodeSender {
	if c.codeSender == "webhook" {
		log.Info("login codes are sent to the webhook", "url", c.webhookURL)
		return newWebhookSender(c.webhookURL, c.webhookSecret)
	}
	if c.cmd != "import" { // the import sends no code
		log.Warn("login codes are written to the log (--code-sender log): anyone who reads the log can log in as anyone")
	}
	return logSender{log}
}

// secretFile is the file of the embedded default's generated secret.
const secretFile = "secret"

// loadSecret returns --secret, or on SQLite the secret in the data
// directory's secret file, generated (0600) on first start.
func loadSecret(c *config) ([]byte, error) {
	if c.secret != "" {
		return []byte(c.secret), nil
	}
	if c.databaseURL != "" {
		return nil, nil // worker and migrate: no codes
	}
	path := filepath.Join(c.dataDir, secretFile)
	b, err := os.ReadFile(path)
	if err == nil && len(b) >= 32 {
		return bytes.TrimSpace(b), nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, raw); err != nil {
		return nil, err
	}
	secret := []byte(hex.EncodeToString(raw))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		f.Close()
		return nil, err
	}
	if _, err := f.Write(append(secret, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	return secret, f.Close()
}
