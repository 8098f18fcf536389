package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.FilterStore = (*DB)(nil)

// SetMutedWord implements feed.FilterStore.
func (db *DB) SetMutedWord(ctx context.Context, userID int64, word string, mute bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if !mute {
			_, err := tx.ExecContext(ctx, `DELETE FROM muted_words WHERE user_id = ? AND word = ?`, userID, word)
			return err
		}
		var n int
		var has bool
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(word = ?), 0) FROM muted_words WHERE user_id = ?`, word, userID).Scan(&n, &has); err != nil {
			return err
		}
		if has {
			return nil
		}
		if n >= feed.MaxMutedWords {
			return feed.Errorf(feed.ECONFLICT, "at most %d muted words", feed.MaxMutedWords)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO muted_words (user_id, word, created_at) VALUES (?, ?, ?)`, userID, word, ms(now))
		return err
	})
}

// MutedWords implements feed.FilterStore.
func (db *DB) MutedWords(ctx context.Context, userID int64) ([]string, error) {
	return scanStrings(db.read(ctx, `SELECT word FROM muted_words WHERE user_id = ? ORDER BY word`, userID))
}

func scanStrings(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func postExists(ctx context.Context, tx *sql.Tx, id int64) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM posts WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return feed.ErrNotFound("post")
	}
	return err
}

// Report implements feed.FilterStore: the report, the count of those that
// count (countedReports) and the hiding in one write transaction.
func (db *DB) Report(ctx context.Context, postID, reporterID int64, reason string, now time.Time, rule feed.ReportRule) (bool, error) {
	var hidden bool
	err := db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := postExists(ctx, tx, postID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reports (post_id, reporter_id, reason, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (post_id, reporter_id) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at`,
			postID, reporterID, reason, ms(now)); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, countedReports, postID, rule.MinAge.Milliseconds()).Scan(&n); err != nil {
			return err
		}
		if !rule.Hides(n) {
			return nil
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO hidden_posts (post_id, hidden_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, postID, ms(now))
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		hidden = k > 0
		return err
	})
	return hidden, err
}

// countedReports counts the reports of post ?1 that count toward hiding
// it (feed.ReportRule): not dismissed, by accounts at least ?2 ms old when
// they reported, in no block with the author.
const countedReports = `SELECT count(*) FROM reports r
	JOIN posts p ON p.id = r.post_id
	JOIN users u ON u.id = r.reporter_id
	WHERE r.post_id = ?1 AND r.dismissed = 0 AND u.created_at <= r.created_at - ?2
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = p.user_id AND b.blocked_id = r.reporter_id)
	AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = r.reporter_id AND b.blocked_id = p.user_id)`

// SetHidden implements feed.FilterStore.
func (db *DB) SetHidden(ctx context.Context, postID int64, hidden bool, now time.Time) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := postExists(ctx, tx, postID); err != nil {
			return err
		}
		if err := db.notifyModeration(ctx, tx, postID, hidden, now); err != nil {
			return err
		}
		if hidden {
			_, err := tx.ExecContext(ctx, `INSERT INTO hidden_posts (post_id, hidden_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, postID, ms(now))
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM hidden_posts WHERE post_id = ?`, postID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE reports SET dismissed = 1 WHERE post_id = ? AND dismissed = 0`, postID)
		return err
	})
}

// FeedFilter implements feed.FilterStore in one statement: the viewer's
// words (kind 0) and the hidden posts among ids (kind 1).
func (db *DB) FeedFilter(ctx context.Context, viewerID int64, ids []int64) ([]string, map[int64]bool, error) {
	rows, err := db.read(ctx, `SELECT 0, word, 0 FROM muted_words WHERE user_id = ?1
		UNION ALL SELECT 1, '', post_id FROM hidden_posts WHERE post_id IN (SELECT value FROM json_each(?2))`, viewerID, idList(ids))
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
		before = 1<<63 - 1
	}
	rows, err := db.read(ctx, `SELECT p.id, p.user_id, p.title,
		(SELECT count(*) FROM reports r WHERE r.post_id = p.id AND r.dismissed = 0),
		coalesce((SELECT reason FROM reports r WHERE r.post_id = p.id AND r.dismissed = 0 ORDER BY created_at DESC, reporter_id DESC LIMIT 1), ''),
		EXISTS (SELECT 1 FROM hidden_posts h WHERE h.post_id = p.id)
		FROM posts p
		WHERE p.id IN (SELECT post_id FROM reports WHERE post_id < ?1 AND dismissed = 0 UNION SELECT post_id FROM hidden_posts WHERE post_id < ?1)
		ORDER BY p.id DESC LIMIT ?2`, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []feed.ReportedPost{}
	for rows.Next() {
		var r feed.ReportedPost
		if err := rows.Scan(&r.PostID, &r.AuthorID, &r.Title, &r.Reports, &r.LastReason, &r.Hidden); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Hidden implements feed.FilterStore.
func (db *DB) Hidden(ctx context.Context, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	hidden, err := scanIDs(db.read(ctx, `SELECT post_id FROM hidden_posts WHERE post_id IN (SELECT value FROM json_each(?))`, idList(ids)))
	for _, id := range hidden {
		out[id] = true
	}
	return out, err
}
