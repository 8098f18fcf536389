package feed

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// An app's own users (docs/integrating.md, "Put feedd behind your app"):
// a user is linked to identities of other systems, each an (issuer,
// subject) pair: the issuer and subject of the app's tokens (TokenVerifier),
// of a single sign-on provider's ID tokens, or the app's own reference of
// a user given to the server API. The first sight of an identity creates
// its user, with no phone; its profile (name, picture) follows what the
// identity says each time it changes.

// Limits of the identities and profiles an app gives.
const (
	// MaxSubject bounds an issuer, a subject and a server API reference.
	MaxSubject = 255
	// MaxNickName bounds a name taken from a token or the server API (the
	// tutorial's nick_name is 32 characters).
	MaxNickName = 32
	// LinkBatch is the most users one upsert of the server API links.
	LinkBatch = 1000
)

// Identity is a user's identity in another system.
type Identity struct {
	Issuer  string
	Subject string
}

// Profile is what an identity says of its user; an empty field says
// nothing (the user's keeps its value, or a new user gets a default).
type Profile struct {
	Name    string
	Picture string
}

// TokenClaims are what a verified token says.
type TokenClaims struct {
	Identity
	// IssuedAt is the token's iat: a token issued at or before its user's
	// revocation is refused (RevokeUser).
	IssuedAt time.Time
	Profile
}

// TokenVerifier verifies the tokens of an app's own login (JWTs signed by
// its keys; package jwtauth).
type TokenVerifier interface {
	// Verify returns the claims of token when its signature, issuer,
	// audience and times are good; otherwise a refusal made by
	// RefuseToken, which says why.
	Verify(ctx context.Context, token string) (*TokenClaims, error)
}

// tokenRefusal is a token refused for a reason the client is told: unlike
// a missing or ended session, the reason helps the app's developer fix
// their tokens, and tells an attacker nothing they did not send.
type tokenRefusal struct{ err *Error }

func (t *tokenRefusal) Error() string { return t.err.Error() }
func (t *tokenRefusal) Unwrap() error { return t.err }

// RefuseToken returns the refusal of a token: EUNAUTHORIZED with the
// message "the token is refused: " and the reason.
func RefuseToken(reason string) error {
	return &tokenRefusal{Errorf(EUNAUTHORIZED, "the token is refused: %s", reason)}
}

// IsTokenRefusal reports whether err is a refusal made by RefuseToken,
// whose message the HTTP layer passes on as it is.
func IsTokenRefusal(err error) bool {
	var t *tokenRefusal
	return errors.As(err, &t)
}

// LooksLikeJWT reports whether token has the shape of a JWT (three
// base64url parts, the header a JSON object): such a token is verified as
// one, never looked up as a session.
func LooksLikeJWT(token string) bool {
	return strings.HasPrefix(token, "eyJ") && strings.Count(token, ".") == 2
}

// Link is the result of linking one identity (IdentityStore.LinkIdentities).
type Link struct {
	UserID  int64
	Created bool // the user was made by this link
	// RevokedAt is the user's last revocation (zero: never).
	RevokedAt time.Time
	// Err is this identity's refusal (EINVALID, ENOTFOUND); the others of
	// the batch are linked all the same.
	Err error
}

// IdentityStore persists identities and revocations.
type IdentityStore interface {
	// LinkIdentities returns the user of each identity of issuer (given by
	// subject in subjects, with the profile of the same index), creating
	// the ones not seen before (with a name of newName when the profile
	// gives none), and makes each user's name and picture those of the
	// profile where it gives them and they differ. One transaction,
	// each identity in its own savepoint: a failure of one leaves the
	// others linked (its Link.Err). Links are in the order of subjects.
	// Concurrent links of one identity make one user.
	LinkIdentities(ctx context.Context, issuer string, subjects []string, profiles []Profile, newName func() string, now time.Time) ([]Link, error)
	// IdentityUsers returns the users of the identities of issuer that
	// exist among subjects, by subject. It creates nothing.
	IdentityUsers(ctx context.Context, issuer string, subjects []string) (map[string]int64, error)
	// Revoke records that userID's sessions and tokens end at now
	// (users.revoked_at). ENOTFOUND if there is no such user.
	Revoke(ctx context.Context, userID int64, now time.Time) error
}

// cleanName makes a name given by a token or the app a feedd nick name:
// control and bidirectional characters dropped, spaces trimmed, at most
// MaxNickName characters. "" when nothing is left.
func cleanName(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if RefusedInTitle(r) || r == '\n' || r == '\t' || r == '<' || r == '>' || !unicode.IsPrint(r) && r != ' ' {
			return -1
		}
		return r
	}, s))
	if utf8.RuneCountInString(s) > MaxNickName {
		s = strings.TrimSpace(string([]rune(s)[:MaxNickName]))
	}
	return s
}

// cleanProfile returns the profile a token says, with what feedd cannot
// show dropped: a name made a nick name (cleanName), a picture that is not
// an image feedd shows (ValidImage) or too long.
func cleanProfile(p Profile) Profile {
	p.Name = cleanName(p.Name)
	if p.Picture != "" && (len(p.Picture) > MaxImages || !ValidImage(p.Picture)) {
		p.Picture = ""
	}
	return p
}

// validSubject refuses a subject (or a server API reference) feedd does
// not keep: empty, longer than MaxSubject bytes, not UTF-8, or with
// control characters.
func validSubject(what, s string) error {
	switch {
	case s == "":
		return Errorf(EINVALID, "%s must not be empty", what)
	case len(s) > MaxSubject:
		return Errorf(EINVALID, "%s must be at most %d bytes", what, MaxSubject)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return Errorf(EINVALID, "%s must be UTF-8 text without control characters", what)
	}
	return nil
}

// newNickName returns the name of a user made without one, as a phone
// login names its users.
func (s *Service) newNickName() string {
	nick, err := NewNickName(s.rand())
	if err != nil {
		return "user"
	}
	return nick
}

// authenticateToken returns the user of a token of the app's login
// (TokenVerifier), linking its identity on first sight and keeping the
// user's profile in step with the token's claims. A token issued at or
// before its user's revocation is refused.
func (s *Service) authenticateToken(ctx context.Context, token string) (int64, error) {
	if s.Tokens == nil || s.Identities == nil {
		return 0, Errorf(EUNAUTHORIZED, "login required")
	}
	c, err := s.Tokens.Verify(ctx, token)
	if err != nil {
		return 0, err
	}
	return s.linkClaims(ctx, c, true)
}

// linkClaims returns the user of verified claims, linked as
// authenticateToken says; checkIssued refuses claims issued at or before
// the user's revocation.
func (s *Service) linkClaims(ctx context.Context, c *TokenClaims, checkIssued bool) (int64, error) {
	if err := validSubject("the token's subject", c.Subject); err != nil {
		return 0, RefuseToken(ErrorMessage(err))
	}
	links, err := s.Identities.LinkIdentities(ctx, c.Issuer, []string{c.Subject}, []Profile{cleanProfile(c.Profile)}, s.newNickName, s.now())
	if err != nil {
		return 0, err
	}
	l := links[0]
	if l.Err != nil {
		return 0, l.Err
	}
	if checkIssued && !l.RevokedAt.IsZero() && c.IssuedAt.UnixMilli() <= l.RevokedAt.UnixMilli() {
		return 0, RefuseToken("it was issued before the user's sessions were revoked; get a new token")
	}
	if _, err := s.touch(ctx, l.UserID); err != nil {
		return 0, err
	}
	return l.UserID, nil
}

// SignIn returns a new session token for the user of claims verified by a
// single sign-on provider (http's SSO login), linking the identity as a
// token's would be.
func (s *Service) SignIn(ctx context.Context, c *TokenClaims) (string, error) {
	if s.Identities == nil {
		return "", Errorf(EUNAVAILABLE, "sign-in is not available")
	}
	id, err := s.linkClaims(ctx, c, false)
	if err != nil {
		return "", err
	}
	return s.newSession(ctx, id)
}

// newSession creates a session of userID and returns its token.
func (s *Service) newSession(ctx context.Context, userID int64) (string, error) {
	token, err := NewSessionToken(userID, s.rand())
	if err != nil {
		return "", err
	}
	now := s.now()
	if err := s.Auth.CreateSession(ctx, HashSecret(token), userID, now, now.Add(SessionTTL)); err != nil {
		return "", err
	}
	return token, nil
}

// RevokeUser ends everything userID is signed in with: their sessions
// end, and tokens issued at or before now are refused from now on
// (docs/integrating.md, "Revocation"). The caller ends the user's live
// streams (EventRevoke). Idempotent; ENOTFOUND if there is no such user.
func (s *Service) RevokeUser(ctx context.Context, userID int64) error {
	if err := validID("id", userID); err != nil {
		return err
	}
	if err := s.Identities.Revoke(ctx, userID, s.now()); err != nil {
		return err
	}
	return s.Auth.EndSessions(ctx, userID)
}
