package feed

import (
	"context"
	"encoding/base64"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// API keys of the server API (serverapi.go): the app's backend sends one as
// a bearer token. A key is shown once, when it is made (feedd apikey
// create); only its SHA-256 is kept, so a copy of the database gives no
// key away.

// APIKeyPrefix starts every API key, so that a key found in a log or a
// repository is recognised as feedd's.
const APIKeyPrefix = "fdk_"

// APIKey is a key of the server API, as listed (never the key itself).
type APIKey struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	UsedAt    time.Time // zero: never used (written at most hourly)
	RevokedAt time.Time // zero: live
}

// APIKeyStore persists API keys by their hash.
type APIKeyStore interface {
	// CreateAPIKey stores a live key named name whose key hashes to
	// keyHash. ECONFLICT if a live key has that name.
	CreateAPIKey(ctx context.Context, name, keyHash string, now time.Time) (*APIKey, error)
	// APIKeys lists every key, revoked ones too, by id.
	APIKeys(ctx context.Context) ([]*APIKey, error)
	// RevokeAPIKey revokes the live key named name. ENOTFOUND if none.
	RevokeAPIKey(ctx context.Context, name string, now time.Time) error
	// APIKeyByHash returns the live key whose key hashes to keyHash.
	// ENOTFOUND if none.
	APIKeyByHash(ctx context.Context, keyHash string) (*APIKey, error)
	// TouchAPIKey records that key id was used at now.
	TouchAPIKey(ctx context.Context, id int64, now time.Time) error
}

var apiKeyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CreateAPIKey makes a live key named name and returns it with the key
// itself, which is never shown again. EINVALID for a name that is not 1-64
// letters, digits, ".", "_" or "-"; ECONFLICT if a live key has the name.
func (s *Service) CreateAPIKey(ctx context.Context, name string) (key string, k *APIKey, err error) {
	if !apiKeyNameRE.MatchString(name) {
		return "", nil, Errorf(EINVALID, "a key's name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	raw := make([]byte, 32) // 256 bits
	if _, err := io.ReadFull(s.rand(), raw); err != nil {
		return "", nil, err
	}
	key = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	k, err = s.APIKeys.CreateAPIKey(ctx, name, HashSecret(key), s.now())
	return key, k, err
}

// ListAPIKeys lists every key, revoked ones too.
func (s *Service) ListAPIKeys(ctx context.Context) ([]*APIKey, error) { return s.APIKeys.APIKeys(ctx) }

// RevokeAPIKey revokes the live key named name: requests with it are
// refused from now on. ENOTFOUND if there is none.
func (s *Service) RevokeAPIKey(ctx context.Context, name string) error {
	return s.APIKeys.RevokeAPIKey(ctx, name, s.now())
}

// errAPIKey refuses a request whose API key is missing, malformed, unknown
// or revoked: one sentence for all.
var errAPIKey = Errorf(EUNAUTHORIZED, "a live API key is required (Authorization: Bearer "+APIKeyPrefix+"...)")

// AuthenticateAPIKey returns the live key of key, and counts one unit of
// its budget (ChargeAPIKey). EUNAUTHORIZED otherwise; ETOOMANY over the
// budget.
func (s *Service) AuthenticateAPIKey(ctx context.Context, key string) (*APIKey, error) {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) > 128 {
		return nil, errAPIKey
	}
	k, err := s.APIKeys.APIKeyByHash(ctx, HashSecret(key))
	if ErrorCode(err) == ENOTFOUND {
		return nil, errAPIKey
	} else if err != nil {
		return nil, err
	}
	now := s.now()
	if last, ok := s.keysUsed.Load(k.ID); !ok || now.Sub(last.(time.Time)) >= TouchInterval {
		s.keysUsed.Store(k.ID, now)
		if err := s.APIKeys.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.log().Warn("record an API key's use", "key", k.Name, "error", err)
		}
	}
	return k, s.ChargeAPIKey(ctx, k, 1)
}

// ChargeAPIKey counts units of work (a request is one, a batch one per
// item) against k's budget, s.ServerLimit. ETOOMANY, with the time to
// wait, when over it: the request then does nothing, and its units are
// given back, so that a batch too big for what is left does not spend it.
func (s *Service) ChargeAPIKey(ctx context.Context, k *APIKey, units int) error {
	if units <= 0 {
		return nil
	}
	key := "server:key:" + strconv.FormatInt(k.ID, 10)
	err := s.hit(ctx, key, s.ServerLimit, units, "requests (units of work) of this API key")
	if ErrorCode(err) == ETOOMANY {
		if _, _, rerr := s.Rates.Count(context.WithoutCancel(ctx), key, s.ServerLimit.Window, s.now(), -units); rerr != nil {
			s.log().Warn("give back an API key's units", "error", rerr)
		}
	}
	return err
}
