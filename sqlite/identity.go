package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

// Identities, revocations and API keys (feed.IdentityStore,
// feed.APIKeyStore; migrations/005_identity.sql).

var (
	_ feed.IdentityStore = (*DB)(nil)
	_ feed.APIKeyStore   = (*DB)(nil)
)

// linked is an identity's user as LinkIdentities reads it.
type linked struct {
	userID  int64
	name    string
	icon    string
	revoked int64
}

// needs reports whether p would change the user l.
func (l linked) needs(p feed.Profile) bool {
	return (p.Name != "" && p.Name != l.name) || (p.Picture != "" && p.Picture != l.icon)
}

func (l linked) link(created bool) feed.Link {
	k := feed.Link{UserID: l.userID, Created: created}
	if l.revoked > 0 {
		k.RevokedAt = time.UnixMilli(l.revoked)
	}
	return k
}

// LinkIdentities implements feed.IdentityStore. Identities already linked
// whose profile says nothing new are read, without a write (a token's
// every request); the others are linked in one transaction.
func (db *DB) LinkIdentities(ctx context.Context, issuer string, subjects []string, profiles []feed.Profile, newName func() string, now time.Time) ([]feed.Link, error) {
	links := make([]feed.Link, len(subjects))
	known, err := db.linkedUsers(ctx, db.Read, issuer, subjects)
	if err != nil {
		return nil, err
	}
	todo := false
	for i, s := range subjects {
		if l, ok := known[s]; ok && !l.needs(profiles[i]) {
			links[i] = l.link(false)
		} else {
			todo = true
		}
	}
	if !todo {
		return links, nil
	}
	err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		known, err := db.linkedUsers(ctx, tx, issuer, subjects)
		if err != nil {
			return err
		}
		for i, s := range subjects {
			p := profiles[i]
			l, ok := known[s]
			switch {
			case ok && !l.needs(p):
				links[i] = l.link(false)
			case ok:
				if p.Name != "" {
					l.name = p.Name
				}
				if p.Picture != "" {
					l.icon = p.Picture
				}
				if _, err := tx.ExecContext(ctx, `UPDATE users SET nick_name = ?, icon = ? WHERE id = ?`, l.name, l.icon, l.userID); err != nil {
					return err
				}
				links[i] = l.link(false)
			default:
				name := p.Name
				if name == "" {
					name = newName()
				}
				var id int64
				if err := tx.QueryRowContext(ctx, `INSERT INTO users (phone, nick_name, icon, created_at, active_at) VALUES (NULL, ?1, ?2, ?3, ?3) RETURNING id`,
					name, p.Picture, ms(now)).Scan(&id); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO identities (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)`,
					issuer, s, id, ms(now)); err != nil {
					return err
				}
				known[s] = linked{userID: id, name: name, icon: p.Picture}
				links[i] = feed.Link{UserID: id, Created: true}
			}
		}
		return nil
	})
	return links, err
}

// querier is what a pool and a transaction both do.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// linkedUsers reads the users of the identities of issuer among subjects.
func (db *DB) linkedUsers(ctx context.Context, q querier, issuer string, subjects []string) (map[string]linked, error) {
	list, err := json.Marshal(subjects)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT i.subject, u.id, u.nick_name, u.icon, u.revoked_at FROM identities i JOIN users u ON u.id = i.user_id
		WHERE i.issuer = ? AND i.subject IN (SELECT value FROM json_each(?))`, issuer, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]linked, len(subjects))
	for rows.Next() {
		var s string
		var l linked
		if err := rows.Scan(&s, &l.userID, &l.name, &l.icon, &l.revoked); err != nil {
			return nil, err
		}
		out[s] = l
	}
	return out, rows.Err()
}

// IdentityUsers implements feed.IdentityStore.
func (db *DB) IdentityUsers(ctx context.Context, issuer string, subjects []string) (map[string]int64, error) {
	known, err := db.linkedUsers(ctx, db.Read, issuer, subjects)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(known))
	for s, l := range known {
		out[s] = l.userID
	}
	return out, nil
}

// Revoke implements feed.IdentityStore.
func (db *DB) Revoke(ctx context.Context, userID int64, now time.Time) error {
	res, err := db.exec(ctx, `UPDATE users SET revoked_at = ? WHERE id = ?`, ms(now), userID)
	if err != nil {
		return err
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return feed.ErrNotFound("user")
	}
	return nil
}

// EndSessions implements feed.AuthStore.
func (db *DB) EndSessions(ctx context.Context, userID int64) error {
	_, err := db.exec(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID)
	return err
}

// SessionHashes returns the token hashes of userID's sessions: what a
// cache of sessions (redis.AuthStore) ends with them.
func (db *DB) SessionHashes(ctx context.Context, userID int64) ([]string, error) {
	rows, err := db.read(ctx, `SELECT token_hash FROM sessions WHERE user_id = ?`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ---- API keys

const apiKeyCols = `id, name, created_at, used_at, revoked_at`

func scanAPIKey(s scanner) (*feed.APIKey, error) {
	var k feed.APIKey
	var created, used, revoked int64
	if err := s.Scan(&k.ID, &k.Name, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt = time.UnixMilli(created)
	if used > 0 {
		k.UsedAt = time.UnixMilli(used)
	}
	if revoked > 0 {
		k.RevokedAt = time.UnixMilli(revoked)
	}
	return &k, nil
}

// CreateAPIKey implements feed.APIKeyStore.
func (db *DB) CreateAPIKey(ctx context.Context, name, keyHash string, now time.Time) (*feed.APIKey, error) {
	var k *feed.APIKey
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		k, err = scanAPIKey(tx.QueryRowContext(ctx, `INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING `+apiKeyCols, name, keyHash, ms(now)))
		if errors.Is(err, sql.ErrNoRows) {
			return feed.Errorf(feed.ECONFLICT, "a live key is named %q; revoke it or choose another name", name)
		}
		return err
	})
	return k, err
}

// APIKeys implements feed.APIKeyStore.
func (db *DB) APIKeys(ctx context.Context) ([]*feed.APIKey, error) {
	rows, err := db.read(ctx, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*feed.APIKey{}
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey implements feed.APIKeyStore.
func (db *DB) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	res, err := db.exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at = 0`, ms(now), name)
	if err != nil {
		return err
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return feed.Errorf(feed.ENOTFOUND, "no live key is named %q", name)
	}
	return nil
}

// APIKeyByHash implements feed.APIKeyStore.
func (db *DB) APIKeyByHash(ctx context.Context, keyHash string) (*feed.APIKey, error) {
	k, err := scanAPIKey(db.readRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE key_hash = ? AND revoked_at = 0`, keyHash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("API key")
	}
	return k, err
}

// TouchAPIKey implements feed.APIKeyStore.
func (db *DB) TouchAPIKey(ctx context.Context, id int64, now time.Time) error {
	_, err := db.exec(ctx, `UPDATE api_keys SET used_at = ? WHERE id = ?`, ms(now), id)
	return err
}
