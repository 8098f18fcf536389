package feed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"math/big"
	"regexp"
	"strings"
	"time"
)

// Rules of login codes and sessions.
const (
	CodeTTL         = 2 * time.Minute  // a code is good for this long
	CodeResendAfter = 60 * time.Second // a phone gets at most one code this often
	CodeMaxTries    = 5                // wrong tries that burn a code
	SessionTTL      = 30 * time.Minute // idle time that ends a session
	// touchInterval is how often a user's activity time is written:
	// activity matters by the day (ActiveWindow), not by the request.
	touchInterval = time.Hour
)

// AuthStore persists login codes and sessions. Codes and tokens reach it
// only as hashes.
type AuthStore interface {
	// SaveCode stores a new code for phone, replacing any older one.
	// ECONFLICT if the previous code was saved less than resendAfter ago.
	SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error
	// ConsumeCode checks codeHash against phone's live code and deletes the
	// code when it matches. A mismatch counts a try; the code is burned after
	// maxTries. EINVALID when there is no live code or it does not match.
	ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error
	// CreateSession stores a session that expires at expires. now is the
	// caller's clock: stores that sweep expired sessions judge by it.
	CreateSession(ctx context.Context, tokenHash string, userID int64, now, expires time.Time) error
	// Session returns the user of a live session and slides its expiry to
	// now+ttl (implementations may skip the write when little time passed).
	// EUNAUTHORIZED when there is no live session.
	Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error)
	// DeleteSession ends a session. Idempotent.
	DeleteSession(ctx context.Context, tokenHash string) error
}

// CodeSender delivers login codes to a phone.
type CodeSender interface {
	SendCode(ctx context.Context, phone, code string) error
}

var phoneRE = regexp.MustCompile(`^1[3-9][0-9]{9}$`)

// ValidPhone reports whether phone is an 11-digit mainland China mobile number.
func ValidPhone(phone string) bool { return phoneRE.MatchString(phone) }

// HashSecret returns the stored form of a token or code.
func HashSecret(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Service) randomString(n int, alphabet string) (string, error) {
	var b strings.Builder
	max := big.NewInt(int64(len(alphabet)))
	for i := 0; i < n; i++ {
		k, err := rand.Int(s.rand(), max)
		if err != nil {
			return "", err
		}
		b.WriteByte(alphabet[k.Int64()])
	}
	return b.String(), nil
}

// SendCode creates a 6-digit one-time code for phone and sends it.
// EINVALID for a malformed phone, ECONFLICT if asked again within a minute.
func (s *Service) SendCode(ctx context.Context, phone string) error {
	if !ValidPhone(phone) {
		return Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	code, err := s.randomString(6, "0123456789")
	if err != nil {
		return err
	}
	if err := s.Auth.SaveCode(ctx, phone, HashSecret(phone, code), s.now(), CodeTTL, CodeResendAfter); err != nil {
		return err
	}
	if err := s.Codes.SendCode(ctx, phone, code); err != nil {
		return err
	}
	s.observe().CodeSent()
	return nil
}

// Login checks a code and returns a new session token, creating the user on
// first login. EINVALID for a malformed phone or a wrong, expired or burned code.
func (s *Service) Login(ctx context.Context, phone, code string) (string, error) {
	if !ValidPhone(phone) {
		return "", Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	now := s.now()
	if err := s.Auth.ConsumeCode(ctx, phone, HashSecret(phone, code), now, CodeMaxTries); err != nil {
		return "", err
	}
	nick, err := s.randomString(10, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	if err != nil {
		return "", err
	}
	u, err := s.Users.FindOrCreateUser(ctx, phone, "user_"+nick, now)
	if err != nil {
		return "", err
	}
	raw := make([]byte, 24) // 192 bits
	if _, err := io.ReadFull(s.rand(), raw); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	if err := s.Auth.CreateSession(ctx, HashSecret(token), u.ID, now, now.Add(SessionTTL)); err != nil {
		return "", err
	}
	if err := s.touch(ctx, u.ID); err != nil {
		return "", err
	}
	return token, nil
}

// Authenticate returns the user id of a live session token and extends the
// session. EUNAUTHORIZED otherwise.
func (s *Service) Authenticate(ctx context.Context, token string) (int64, error) {
	if token == "" {
		return 0, Errorf(EUNAUTHORIZED, "login required")
	}
	id, err := s.Auth.Session(ctx, HashSecret(token), s.now(), SessionTTL)
	if err != nil {
		return 0, err
	}
	if err := s.touch(ctx, id); err != nil {
		return 0, err
	}
	return id, nil
}

// Logout ends the session of token.
func (s *Service) Logout(ctx context.Context, token string) error {
	return s.Auth.DeleteSession(ctx, HashSecret(token))
}

// touch records that userID is active. A user back after more than
// ActiveWindow was skipped by fan-out meanwhile: their inbox is regenerated
// here, before the request that brought them back reads it.
func (s *Service) touch(ctx context.Context, userID int64) error {
	now := s.now()
	if last, ok := s.touched.Load(userID); ok && now.Sub(last.(time.Time)) < touchInterval && now.After(last.(time.Time)) {
		return nil
	}
	prev, err := s.Social.Touch(ctx, userID, now, touchInterval)
	if err != nil {
		return err
	}
	s.touched.Store(userID, now)
	if s.ActiveWindow > 0 && now.Sub(prev) > s.ActiveWindow {
		s.log().Info("inactive user is back; regenerating the inbox", "user_id", userID, "last_active", prev)
		if err := s.RebuildInbox(ctx, userID); err != nil {
			s.log().Warn("regenerate inbox", "user_id", userID, "error", err)
		}
	}
	return nil
}
