package feed

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Rules of login codes and sessions.
const (
	CodeTTL         = 2 * time.Minute  // a code is good for this long
	CodeResendAfter = 60 * time.Second // a phone gets at most one code this often, by default (LoginLimits.CodeResendAfter)
	CodeMaxTries    = 5                // wrong tries that burn a code
	SessionTTL      = 30 * time.Minute // idle time that ends a session
	// TouchInterval is how often a user's activity time is written
	// (TouchDue): activity matters by the day (ActiveWindow), not by the
	// request.
	TouchInterval = time.Hour
)

// AuthStore persists login codes and sessions. Codes and tokens reach it
// only as hashes.
type AuthStore interface {
	// SaveCode stores a new code for phone, replacing any older one.
	// ResendTooSoon (ECONFLICT, with the wait) if the previous code, used,
	// burned or not, was sent less than resendAfter ago.
	SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error
	// ConsumeCode checks codeHash against phone's live code and deletes the
	// code when it matches. A mismatch counts a try; the code is burned after
	// maxTries, and a burned code still holds the resend rule (SaveCode)
	// until resendAfter has passed since it was sent. EINVALID when there is
	// no live code or it does not match.
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
	// EndSessions ends every session of userID (a revocation, an
	// erasure). Idempotent.
	EndSessions(ctx context.Context, userID int64) error
}

// ResendTooSoon is AuthStore.SaveCode's refusal of a code asked for less
// than resendAfter after the phone's last one was sent: ECONFLICT, with
// wait, the time until a new code may be sent, as its RetryAfter, so that a
// phone kept waiting by others' requests is told when to try again.
func ResendTooSoon(resendAfter, wait time.Duration) *Error {
	return &Error{Code: ECONFLICT, RetryAfter: max(wait, time.Millisecond),
		Message: fmt.Sprintf("a code was sent less than %d seconds ago; wait before asking again", int(resendAfter.Seconds()))}
}

// CodeSender delivers login codes to a phone.
type CodeSender interface {
	// SendCode delivers code, good until expires, to phone. An error means
	// the code may not have reached the phone: the service then deletes it.
	SendCode(ctx context.Context, phone, code string, expires time.Time) error
}

// codeRefusal is the one answer to a login with a wrong, expired, burned or
// never requested code: telling them apart would tell an attacker that a
// code is pending.
const codeRefusal = "the code is wrong or has expired; ask for a new code"

// codeHash is the stored form of a login code: HMAC-SHA256 keyed with
// Service.Secret, a key that is not in the database, so a copy of the
// database does not give the 10^6 possible codes away.
func (s *Service) codeHash(phone, code string) string {
	m := hmac.New(sha256.New, s.secretKey())
	io.WriteString(m, phone)
	m.Write([]byte{0})
	io.WriteString(m, code)
	return hex.EncodeToString(m.Sum(nil))
}

// secretKey is Service.Secret, or without one a random key of this process
// (codes live two minutes; several processes sharing codes must share a
// Secret).
func (s *Service) secretKey() []byte {
	s.secretOnce.Do(func() {
		s.key = s.Secret
		if len(s.key) == 0 {
			s.key = make([]byte, 32)
			if _, err := io.ReadFull(rand.Reader, s.key); err != nil {
				panic(err)
			}
		}
	})
	return s.key
}

// MAC returns the HMAC-SHA256 of parts (base64url) keyed with the
// service's secret: what feedd signs for itself to read back, such as a
// single sign-on's login cookie, which any process sharing the secret can
// check.
func (s *Service) MAC(parts ...string) string {
	m := hmac.New(sha256.New, s.secretKey())
	for _, p := range parts {
		io.WriteString(m, p)
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CountSSO counts a single sign-on started or finished by the client
// address of ctx against s.Limits.SSOPerClient; ETOOMANY over it.
func (s *Service) CountSSO(ctx context.Context) error {
	c := Client(ctx)
	if c == "" {
		return nil
	}
	return s.hit(ctx, "sso:client:"+c, s.Limits.SSOPerClient, 1, "sign-ins from your address")
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

func randomString(rnd io.Reader, n int, alphabet string) (string, error) {
	var b strings.Builder
	max := big.NewInt(int64(len(alphabet)))
	for i := 0; i < n; i++ {
		k, err := rand.Int(rnd, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(alphabet[k.Int64()])
	}
	return b.String(), nil
}

// SendCode creates a 6-digit one-time code for phone and sends it.
// EINVALID for a malformed phone, ECONFLICT (ResendTooSoon, with the wait)
// if asked again within s.Limits.CodeResendAfter of the last code sent,
// ETOOMANY over a limit of s.Limits (per client address of ctx, see
// WithClient; per phone; per phone and client address; in total),
// EUNAVAILABLE when the sender failed (the code is then deleted: the phone
// may ask again at once).
//
// The phone's quota, the client address's share of it and the total budget
// are reserved before the code is saved and given back when none is (a
// limit refuses, or the resend rule does): concurrent requests cannot
// overshoot them. Every code sent spends them for good, burned by wrong
// tries or not: the phone's quota is what reaches the phone, whoever asked,
// and it is shared by every client; one address (an IPv6 client: its /64)
// may spend only its share (CodePerPhoneClient) of it. A phone whose quota
// others spent, or whose last code others asked for, is refused with the
// time to wait (ETOOMANY's and ResendTooSoon's RetryAfter).
func (s *Service) SendCode(ctx context.Context, phone string) error {
	if s.PhoneLoginOff {
		return errPhoneLoginOff
	}
	if !ValidPhone(phone) {
		return Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	c := Client(ctx)
	if c != "" {
		if err := s.hit(ctx, "code:client:"+c, s.Limits.CodePerClient, 1, "code requests from your address"); err != nil {
			return err
		}
	}
	type quota struct {
		key   string
		limit Limit
		what  string
	}
	quotas := []quota{{codePhoneKey(phone), s.Limits.CodePerPhone, "codes for this phone"}}
	if c != "" {
		quotas = append(quotas, quota{codePhoneKey(phone) + ":client:" + c, s.Limits.CodePerPhoneClient, "codes for this phone from your address"})
	}
	quotas = append(quotas, quota{"code:total", s.Limits.CodeTotal, "code requests; the service is busy"})
	reserved := 0
	giveBack := func() {
		for _, q := range quotas[:reserved] {
			s.refund(ctx, q.key, q.limit)
		}
	}
	for _, q := range quotas {
		err := s.hit(ctx, q.key, q.limit, 1, q.what)
		if err == nil || ErrorCode(err) == ETOOMANY {
			reserved++ // counted, also when over the limit
		}
		if err != nil {
			giveBack()
			return err
		}
	}
	code, err := randomString(s.rand(), 6, "0123456789")
	if err != nil {
		giveBack()
		return err
	}
	now := s.now()
	hash := s.codeHash(phone, code)
	if err := s.Auth.SaveCode(ctx, phone, hash, now, CodeTTL, s.Limits.resendAfter()); err != nil {
		giveBack()
		return err
	}
	if err := s.Codes.SendCode(ctx, phone, code, now.Add(CodeTTL)); err != nil {
		s.log().Warn("send login code failed; code deleted", "error", err)
		// Leave no usable code: consuming it with its own hash deletes it,
		// and with it the resend rule, so the phone may ask again at once.
		if cerr := s.Auth.ConsumeCode(context.WithoutCancel(ctx), phone, hash, now, CodeMaxTries); cerr != nil {
			s.log().Error("delete unsent login code", "error", cerr)
		}
		return Errorf(EUNAVAILABLE, "could not send the code, try again")
	}
	s.observe().CodeSent()
	return nil
}

// codePhoneKey is the rate key of phone's quota of codes.
func codePhoneKey(phone string) string { return "code:phone:" + phone }

// Login checks a code and returns a new session token, creating the user on
// first login. EINVALID for a malformed phone or a wrong, expired, burned or
// missing code (one sentence for all). ETOOMANY when the client address of
// ctx is over s.Limits.FailsPerClient: the code is then not looked at, so
// such refusals do not count against the phone's code. Each login reserves
// a failure of its address before the code is checked and gives it back
// when the code matched, so concurrent wrong guesses cannot pass the limit.
// A code burned by wrong tries spent its unit of the phone's quota, and its
// resend wait still holds.
func (s *Service) Login(ctx context.Context, phone, code string) (string, error) {
	if s.PhoneLoginOff {
		return "", errPhoneLoginOff
	}
	if !ValidPhone(phone) {
		return "", Errorf(EINVALID, "phone must be an 11-digit mobile number")
	}
	client := Client(ctx)
	failKey := "login:fail:client:" + client
	if client != "" {
		if err := s.hit(ctx, failKey, s.Limits.FailsPerClient, 1, "failed logins from your address"); err != nil {
			if ErrorCode(err) == ETOOMANY {
				s.refund(ctx, failKey, s.Limits.FailsPerClient) // refused unseen: not a failure
			}
			return "", err
		}
	}
	now := s.now()
	if err := s.Auth.ConsumeCode(ctx, phone, s.codeHash(phone, code), now, CodeMaxTries); err != nil {
		if ErrorCode(err) != EINVALID {
			if client != "" {
				s.refund(ctx, failKey, s.Limits.FailsPerClient)
			}
			return "", err
		}
		return "", Errorf(EINVALID, codeRefusal)
	}
	if client != "" {
		s.refund(ctx, failKey, s.Limits.FailsPerClient)
	}
	u, err := s.Users.FindOrCreateUser(ctx, phone, s.newNickName(), now)
	if err != nil {
		return "", err
	}
	token, err := s.newSession(ctx, u.ID)
	if err != nil {
		return "", err
	}
	if _, err := s.touch(ctx, u.ID); err != nil {
		return "", err
	}
	return token, nil
}

// NewSessionToken returns a new session token for userID: the user's id, a
// dot, and 192 bits from random (base64url). Only HashSecret(token) is
// stored, so the id changes nothing about what a stolen database gives
// away; it lets a read name the user's inbox before the session is checked
// (TokenUser), the two then going to Redis in one round trip.
func NewSessionToken(userID int64, random io.Reader) (string, error) {
	raw := make([]byte, 24) // 192 bits
	if _, err := io.ReadFull(random, raw); err != nil {
		return "", err
	}
	return strconv.FormatInt(userID, 10) + "." + base64.RawURLEncoding.EncodeToString(raw), nil
}

// TokenUser returns the user id a token made by NewSessionToken names, and
// false for any other string (tokens issued before the id was part of them
// included). The id is a claim, not a proof: only the session of the whole
// token, looked up by its hash, says whose it is.
func TokenUser(token string) (int64, bool) {
	id, secret, ok := strings.Cut(token, ".")
	if !ok || secret == "" || len(id) > 19 {
		return 0, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
		return 0, false
	}
	return n, true
}

// errPhoneLoginOff refuses the phone-code login where it is turned off.
var errPhoneLoginOff = Errorf(EFORBIDDEN, "phone-code login is turned off on this server; sign in through your app")

// Authenticate returns the user id of a token and, for a session token,
// extends the session: a token of the app's login (a JWT, LooksLikeJWT)
// is verified by s.Tokens (identity.go), any other is a session's.
// EUNAUTHORIZED otherwise (a refusal of RefuseToken for a JWT).
func (s *Service) Authenticate(ctx context.Context, token string) (int64, error) {
	if token == "" {
		return 0, Errorf(EUNAUTHORIZED, "login required")
	}
	if LooksLikeJWT(token) {
		return s.authenticateToken(ctx, token)
	}
	id, err := s.Auth.Session(ctx, HashSecret(token), s.now(), SessionTTL)
	if err != nil {
		return 0, err
	}
	if _, err := s.touch(ctx, id); err != nil {
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
// here, before the request that brought them back reads it; regenerated
// says so (a page read before it is stale).
func (s *Service) touch(ctx context.Context, userID int64) (regenerated bool, err error) {
	now := s.now()
	if last, ok := s.touched.Load(userID); ok && now.Sub(last.(time.Time)) < TouchInterval && now.After(last.(time.Time)) {
		return false, nil
	}
	prev, err := s.Social.Touch(ctx, userID, now, TouchInterval)
	if err != nil {
		return false, err
	}
	s.touched.Store(userID, now)
	if Regenerates(prev, now, s.ActiveWindow) {
		s.log().Info("inactive user is back; regenerating the inbox", "user_id", userID, "last_active", prev)
		if err := s.RebuildInbox(ctx, userID); err != nil {
			s.log().Warn("regenerate inbox", "user_id", userID, "error", err)
		}
		return true, nil
	}
	return false, nil
}
