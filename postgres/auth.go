package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

// Login codes and sessions: feed.AuthStore.

// SaveCode implements feed.AuthStore. The resend check and the write are one
// conditional upsert, so of concurrent requests for one phone at most one
// stores its code.
func (db *DB) SaveCode(ctx context.Context, phone, codeHash string, now time.Time, ttl, resendAfter time.Duration) error {
	// now - sent >= resendAfter, with sent in whole milliseconds, is
	// sent <= ms(now - resendAfter).
	// Sweep a few codes that can no longer matter (expired and past their
	// resend window), skipping rows another request is sweeping.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM login_codes WHERE phone IN
		(SELECT phone FROM login_codes WHERE expires_at <= $1 AND sent_at <= $2 AND phone <> $3 LIMIT 100 FOR UPDATE SKIP LOCKED)`,
		ms(now), ms(now.Add(-resendAfter)), phone); err != nil {
		return err
	}
	tag, err := db.Pool.Exec(ctx, `INSERT INTO login_codes (phone, code_hash, sent_at, expires_at, tries) VALUES ($1, $2, $3, $4, 0)
		ON CONFLICT (phone) DO UPDATE SET code_hash = excluded.code_hash, sent_at = excluded.sent_at, expires_at = excluded.expires_at, tries = 0
		WHERE login_codes.sent_at <= $5`,
		phone, codeHash, ms(now), ms(now.Add(ttl)), ms(now.Add(-resendAfter)))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		// Refused: how long to wait is read apart, only for refusals.
		var sent int64
		wait := resendAfter
		if err := db.Pool.QueryRow(ctx, `SELECT sent_at FROM login_codes WHERE phone = $1`, phone).Scan(&sent); err == nil {
			wait = resendAfter - now.Sub(time.UnixMilli(sent))
		}
		return feed.ResendTooSoon(resendAfter, wait)
	}
	return nil
}

// ConsumeCode implements feed.AuthStore. The code's row is locked while it
// is checked, so concurrent guesses are each counted and a code logs in once.
func (db *DB) ConsumeCode(ctx context.Context, phone, codeHash string, now time.Time, maxTries int) error {
	var refusal error
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var hash string
		var expires int64
		var tries int
		err := tx.QueryRow(ctx, `SELECT code_hash, expires_at, tries FROM login_codes WHERE phone = $1 FOR UPDATE`, phone).Scan(&hash, &expires, &tries)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (now.UnixMilli() >= expires || tries >= maxTries)) {
			refusal = feed.Errorf(feed.EINVALID, "the code has expired or was not requested; ask for a new code")
			return nil
		} else if err != nil {
			return err
		}
		if hash == codeHash {
			_, err = tx.Exec(ctx, `DELETE FROM login_codes WHERE phone = $1`, phone)
			return err
		}
		// A wrong try is counted (and committed) even though the login is
		// refused. The maxTries-th burns the code, whose row stays until
		// SaveCode replaces it, so that its resend wait holds.
		refusal = feed.Errorf(feed.EINVALID, "the code is wrong")
		_, err = tx.Exec(ctx, `UPDATE login_codes SET tries = tries + 1 WHERE phone = $1`, phone)
		return err
	})
	if err != nil {
		return err
	}
	return refusal
}

// CreateSession implements feed.AuthStore.
func (db *DB) CreateSession(ctx context.Context, tokenHash string, userID int64, now, expires time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		// Sweep a few sessions expired by the caller's clock (as Session
		// judges them), so the table does not grow forever; rows another
		// login is sweeping are skipped rather than waited for.
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE token_hash IN
			(SELECT token_hash FROM sessions WHERE expires_at <= $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`, ms(now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)`, tokenHash, userID, ms(expires))
		return err
	})
}

// sessionSlack is how stale an expiry may get before a read extends it: a
// session is extended at most once a minute, not on every request.
const sessionSlack = time.Minute

// Session implements feed.AuthStore.
func (db *DB) Session(ctx context.Context, tokenHash string, now time.Time, ttl time.Duration) (int64, error) {
	var userID, expires int64
	err := db.Pool.QueryRow(ctx, `SELECT user_id, expires_at FROM sessions WHERE token_hash = $1`, tokenHash).Scan(&userID, &expires)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && expires <= ms(now)) {
		return 0, feed.Errorf(feed.EUNAUTHORIZED, "login required")
	} else if err != nil {
		return 0, err
	}
	if next := ms(now.Add(ttl)); next-expires >= sessionSlack.Milliseconds() {
		// Conditional, so a concurrent request that extended it further wins.
		if _, err := db.Pool.Exec(ctx, `UPDATE sessions SET expires_at = $1 WHERE token_hash = $2 AND expires_at < $1`, next, tokenHash); err != nil {
			return 0, err
		}
	}
	return userID, nil
}

// DeleteSession implements feed.AuthStore.
func (db *DB) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	return err
}
