package postgres

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.FilterStore = (*DB)(nil)

// SetMutedWord implements feed.FilterStore. The user's row is locked so
// that concurrent additions cannot pass MaxMutedWords together.
func (db *DB) SetMutedWord(ctx context.Context, userID int64, word string, mute bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if !mute {
			_, err := tx.Exec(ctx, `DELETE FROM muted_words WHERE user_id = $1 AND word = $2`, userID, word)
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, userID); err != nil {
			return err
		}
		var n int
		var has bool
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(word = $2), false) FROM muted_words WHERE user_id = $1`,
			userID, word).Scan(&n, &has); err != nil {
			return err
		}
		if has {
			return nil
		}
		if n >= feed.MaxMutedWords {
			return feed.Errorf(feed.ECONFLICT, "at most %d muted words", feed.MaxMutedWords)
		}
		_, err := tx.Exec(ctx, `INSERT INTO muted_words (user_id, word, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			userID, word, now.UnixMilli())
		return err
	})
}

// MutedWords implements feed.FilterStore.
func (db *DB) MutedWords(ctx context.Context, userID int64) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT word FROM muted_words WHERE user_id = $1 ORDER BY word`, userID)
	if err != nil {
		return nil, err
	}
	words, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if words == nil && err == nil {
		words = []string{}
	}
	return words, err
}

// lockPost locks post id's row for the transaction (reports of one post
// are counted one at a time); ENOTFOUND if there is none.
func lockPost(ctx context.Context, tx pgx.Tx, id int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM posts WHERE id = $1 FOR UPDATE`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return feed.ErrNotFound("post")
	}
	return err
}

// Report implements feed.FilterStore. The post's row is locked, so that of
// concurrent reports the last one counts them all; the report, the count of
// those that count (countedReports) and the hiding are one transaction.
func (db *DB) Report(ctx context.Context, postID, reporterID int64, reason string, now time.Time, rule feed.ReportRule) (bool, error) {
	var hidden bool
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPost(ctx, tx, postID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reports (post_id, reporter_id, reason, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (post_id, reporter_id) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at`,
			postID, reporterID, reason, now.UnixMilli()); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, countedReports, postID, rule.MinAge.Milliseconds()).Scan(&n); err != nil {
			return err
		}
		if !rule.Hides(n) {
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO hidden_posts (post_id, hidden_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, postID, now.UnixMilli())
		hidden = err == nil && tag.RowsAffected() > 0
		return err
	})
	return hidden, err
}

// countedReports counts the reports of post $1 that count toward hiding
// it (feed.ReportRule): not dismissed, by accounts at least $2 ms old when
// they reported, in no block with the author.
const countedReports = `SELECT count(*)::INT FROM reports r
	JOIN posts p ON p.id = r.post_id
	JOIN users u ON u.id = r.reporter_id
	WHERE r.post_id = $1 AND NOT r.dismissed AND u.created_at <= r.created_at - $2::BIGINT
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = r.reporter_id)
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = r.reporter_id AND b.blocked_id = p.user_id)`

// SetHidden implements feed.FilterStore.
func (db *DB) SetHidden(ctx context.Context, postID int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPost(ctx, tx, postID); err != nil {
			return err
		}
		if err := db.notifyModeration(ctx, tx, postID, hidden, now); err != nil {
			return err
		}
		if hidden {
			_, err := tx.Exec(ctx, `INSERT INTO hidden_posts (post_id, hidden_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, postID, now.UnixMilli())
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM hidden_posts WHERE post_id = $1`, postID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE reports SET dismissed = true WHERE post_id = $1 AND NOT dismissed`, postID)
		return err
	})
}

// FeedFilter implements feed.FilterStore in one statement: the viewer's
// words (kind 0) and the hidden posts among ids (kind 1).
func (db *DB) FeedFilter(ctx context.Context, viewerID int64, ids []int64) ([]string, map[int64]bool, error) {
	rows, err := db.Pool.Query(ctx, `SELECT 0, word, 0::BIGINT FROM muted_words WHERE user_id = $1
		UNION ALL SELECT 1, '', post_id FROM hidden_posts WHERE post_id = ANY($2)`, viewerID, ids)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	words, hidden := []string{}, map[int64]bool{}
	for rows.Next() {
		var kind int
		var word string
		var id int64
		if err := rows.Scan(&kind, &word, &id); err != nil {
			return nil, nil, err
		}
		if kind == 0 {
			words = append(words, word)
		} else {
			hidden[id] = true
		}
	}
	return words, hidden, rows.Err()
}

// Reported implements feed.FilterStore.
func (db *DB) Reported(ctx context.Context, before int64, limit int) ([]feed.ReportedPost, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := db.Pool.Query(ctx, `SELECT p.id, p.user_id, p.title,
		(SELECT count(*) FROM reports r WHERE r.post_id = p.id AND NOT r.dismissed)::INT,
		coalesce((SELECT reason FROM reports r WHERE r.post_id = p.id AND NOT r.dismissed ORDER BY created_at DESC, reporter_id DESC LIMIT 1), ''),
		EXISTS (SELECT 1 FROM hidden_posts h WHERE h.post_id = p.id)
		FROM posts p
		WHERE p.id IN (SELECT post_id FROM reports WHERE post_id < $1 AND NOT dismissed UNION SELECT post_id FROM hidden_posts WHERE post_id < $1)
		ORDER BY p.id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (feed.ReportedPost, error) {
		var r feed.ReportedPost
		err := row.Scan(&r.PostID, &r.AuthorID, &r.Title, &r.Reports, &r.LastReason, &r.Hidden)
		return r, err
	})
	if out == nil && err == nil {
		out = []feed.ReportedPost{}
	}
	return out, err
}

// Hidden implements feed.FilterStore.
func (db *DB) Hidden(ctx context.Context, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	hidden, err := scanIDs(db.Pool.Query(ctx, `SELECT post_id FROM hidden_posts WHERE post_id = ANY($1)`, ids))
	for _, id := range hidden {
		out[id] = true
	}
	return out, err
}
