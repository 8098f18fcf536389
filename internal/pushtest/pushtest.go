// Package pushtest is a Web Push service on loopback for feedd's tests
// and benchmarks. It holds a subscription's keys as a browser does,
// decrypts what it is sent as the browser would (RFC 8291, aes128gcm:
// RFC 8188's records), checks the VAPID authorization (RFC 8292) with
// golang-jwt, and answers each message as the test tells it (201, 410,
// 429 with Retry-After ...).
package pushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Browser is a subscriber's keys: its P-256 key pair and its 16-byte
// authentication secret.
type Browser struct {
	Key  *ecdh.PrivateKey
	Auth []byte
}

// NewBrowser makes fresh keys.
func NewBrowser() (*Browser, error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	auth := make([]byte, 16)
	if _, err := rand.Read(auth); err != nil {
		return nil, err
	}
	return &Browser{Key: k, Auth: auth}, nil
}

// P256dh is the public key as PushSubscription.toJSON() gives it.
func (b *Browser) P256dh() string { return b64(b.Key.PublicKey().Bytes()) }

// AuthSecret is the auth secret as PushSubscription.toJSON() gives it.
func (b *Browser) AuthSecret() string { return b64(b.Auth) }

func b64(p []byte) string { return base64.RawURLEncoding.EncodeToString(p) }

// Decrypt reads an aes128gcm message body sent to b: the header (salt,
// record size, the sender's public key), then one record, as RFC 8291,
// section 3.4, derives its key and nonce.
func (b *Browser) Decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("key id of %d bytes, want a 65-byte P-256 key", idlen)
	}
	senderKey, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	record := body[21+idlen:]
	if rs < 18 || len(record) > int(rs) {
		return nil, fmt.Errorf("record of %d bytes with a record size of %d: want one record", len(record), rs)
	}
	secret, err := b.Key.ECDH(senderKey)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), b.Key.PublicKey().Bytes()...), senderKey.Bytes()...)
	ikm, err := hkdf.Key(sha256.New, secret, b.Auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	// The last record: the data, its delimiter 0x02, then zero padding.
	end := bytes.LastIndexFunc(plain, func(r rune) bool { return r != 0 })
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// Message is one push the service received.
type Message struct {
	Header  http.Header
	Payload []byte // decrypted
	// Claims are the VAPID JWT's, checked: aud the endpoint's origin, exp
	// within 24 hours, sub a mailto: or https: URL.
	Claims jwt.RegisteredClaims
	// Err says what was wrong with the message (nil: nothing).
	Err error
	At  time.Time
}

// Reply is what the service answers a message.
type Reply struct {
	Status     int    // 0: 201
	RetryAfter string // the Retry-After header, if any
}

// Server is a push service with one subscriber, Browser, at URL+"/push"
// (and URL+"/push/ANYTHING", the same browser's keys: more endpoints for a
// benchmark).
type Server struct {
	*httptest.Server
	Browser *Browser
	// VAPIDKey is the application server's public key (base64url) the
	// messages must be signed with; empty: any (the k= of each message).
	VAPIDKey string
	// Decrypt: read each message (else it is only counted and answered);
	// SetDecrypt changes it while the server runs.
	Decrypt bool

	mu       sync.Mutex
	replies  []Reply // answered in order; then 201
	messages []Message
	arrived  chan struct{}
}

// NewServer starts a push service on 127.0.0.1 with a new subscriber.
func NewServer() (*Server, error) {
	b, err := NewBrowser()
	if err != nil {
		return nil, err
	}
	s := &Server{Browser: b, Decrypt: true, arrived: make(chan struct{}, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// Endpoint is the subscriber's endpoint URL.
func (s *Server) Endpoint() string { return s.URL + "/push" }

// SetDecrypt turns the reading of each message on or off.
func (s *Server) SetDecrypt(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Decrypt = on
}

// Count is how many messages arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.messages)
}

// Script queues the replies to the next messages, in order.
func (s *Server) Script(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, rs...)
}

// Messages returns the messages received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Wait returns once n messages have arrived, or after timeout with what
// has.
func (s *Server) Wait(n int, timeout time.Duration) []Message {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if ms := s.Messages(); len(ms) >= n {
			return ms
		}
		select {
		case <-s.arrived:
		case <-deadline.C:
			return s.Messages()
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<10))
	m := Message{Header: r.Header.Clone(), At: time.Now(), Err: err}
	if r.Method != http.MethodPost || (r.URL.Path != "/push" && !strings.HasPrefix(r.URL.Path, "/push/")) {
		m.Err = fmt.Errorf("%s %s, want a POST under /push", r.Method, r.URL.Path)
	}
	s.mu.Lock()
	decrypt := s.Decrypt
	s.mu.Unlock()
	if m.Err == nil && decrypt {
		m.Claims, m.Err = s.checkVAPID(r)
		if m.Err == nil {
			m.Err = checkHeaders(r.Header)
		}
		if m.Err == nil {
			m.Payload, m.Err = s.Browser.Decrypt(body)
		}
	}
	s.mu.Lock()
	reply := Reply{Status: http.StatusCreated}
	if len(s.replies) > 0 {
		reply, s.replies = s.replies[0], s.replies[1:]
	}
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	if m.Err != nil {
		reply = Reply{Status: http.StatusBadRequest}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status == 0 {
		reply.Status = http.StatusCreated
	}
	w.WriteHeader(reply.Status)
}

// checkHeaders checks what RFC 8030 and 8291 ask of a message's header.
func checkHeaders(h http.Header) error {
	switch {
	case h.Get("Content-Encoding") != "aes128gcm":
		return fmt.Errorf("content encoding %q, want aes128gcm", h.Get("Content-Encoding"))
	case h.Get("TTL") == "":
		return errors.New("no TTL")
	}
	return nil
}

// checkVAPID checks the Authorization header, "vapid t=JWT, k=KEY"
// (RFC 8292, section 3): the JWT is ES256, signed by KEY, whose audience
// is the endpoint's origin, that expires within 24 hours, and whose
// subject is a mailto: or https: URL.
func (s *Server) checkVAPID(r *http.Request) (jwt.RegisteredClaims, error) {
	var claims jwt.RegisteredClaims
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "vapid ")
	if !ok {
		return claims, errors.New("the Authorization header is not vapid")
	}
	var token, key string
	for p := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch k {
		case "t":
			token = v
		case "k":
			key = v
		}
	}
	if s.VAPIDKey != "" && key != s.VAPIDKey {
		return claims, fmt.Errorf("k=%s, want the server's key %s", key, s.VAPIDKey)
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return claims, fmt.Errorf("k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return claims, fmt.Errorf("k: %w", err)
	}
	origin := "http://" + r.Host
	if r.TLS != nil {
		origin = "https://" + r.Host
	}
	_, err = jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(origin), jwt.WithExpirationRequired())
	if err != nil {
		return claims, fmt.Errorf("vapid JWT: %w", err)
	}
	if exp := claims.ExpiresAt.Time; time.Until(exp) > 24*time.Hour {
		return claims, fmt.Errorf("vapid JWT expires in %v, more than 24 h", time.Until(exp))
	}
	u, err := url.Parse(claims.Subject)
	if err != nil || !((u.Scheme == "mailto" && u.Opaque != "") || (u.Scheme == "https" && u.Host != "")) {
		return claims, fmt.Errorf("vapid JWT subject %q is not a mailto: or https: URL", claims.Subject)
	}
	return claims, nil
}
