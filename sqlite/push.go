package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.PushStore = (*DB)(nil)

const pushCols = `id, user_id, endpoint, p256dh, auth, alerts_off, created_at`

func scanPush(sc interface{ Scan(...any) error }) (*feed.PushSubscription, error) {
	var p feed.PushSubscription
	var off string
	var created int64
	if err := sc.Scan(&p.ID, &p.UserID, &p.Endpoint, &p.P256dh, &p.Auth, &off, &created); err != nil {
		return nil, err
	}
	if off != "" {
		p.AlertsOff = strings.Split(off, ",")
	}
	p.CreatedAt = time.UnixMilli(created)
	return &p, nil
}

// SavePushSubscription implements feed.PushStore.
func (db *DB) SavePushSubscription(ctx context.Context, sub *feed.PushSubscription) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE endpoint = ?`, sub.Endpoint); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO push_subscriptions (user_id, endpoint, p256dh, auth, alerts_off, created_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, sub.UserID, sub.Endpoint, sub.P256dh, sub.Auth, strings.Join(sub.AlertsOff, ","), ms(sub.CreatedAt)).Scan(&sub.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE id IN (SELECT id FROM push_subscriptions
			WHERE user_id = ? ORDER BY id DESC LIMIT -1 OFFSET ?)`, sub.UserID, feed.MaxPushSubscriptions)
		return err
	})
}

// PushSubscriptions implements feed.PushStore.
func (db *DB) PushSubscriptions(ctx context.Context, userID int64) ([]feed.PushSubscription, error) {
	rows, err := db.read(ctx, `SELECT `+pushCols+` FROM push_subscriptions WHERE user_id = ? ORDER BY id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []feed.PushSubscription{}
	for rows.Next() {
		p, err := scanPush(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

// PushSubscription implements feed.PushStore.
func (db *DB) PushSubscription(ctx context.Context, id int64) (*feed.PushSubscription, error) {
	p, err := scanPush(db.readRow(ctx, `SELECT `+pushCols+` FROM push_subscriptions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, feed.ErrNotFound("push subscription")
	}
	return p, err
}

// DeletePushSubscription implements feed.PushStore.
func (db *DB) DeletePushSubscription(ctx context.Context, userID, id int64) error {
	res, err := db.exec(ctx, `DELETE FROM push_subscriptions WHERE id = ? AND (? = 0 OR user_id = ?)`, id, userID, userID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return feed.ErrNotFound("push subscription")
	}
	return nil
}

// VAPIDKeys implements feed.PushStore.
func (db *DB) VAPIDKeys(ctx context.Context, gen func() (feed.VAPIDKeys, error)) (feed.VAPIDKeys, error) {
	var k feed.VAPIDKeys
	err := db.readRow(ctx, `SELECT private_key, public_key FROM vapid_keys WHERE id = 1`).Scan(&k.Private, &k.Public)
	if !errors.Is(err, sql.ErrNoRows) {
		return k, err
	}
	if k, err = gen(); err != nil {
		return k, err
	}
	err = db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO vapid_keys (id, private_key, public_key, created_at) VALUES (1, ?, ?, ?)
			ON CONFLICT DO NOTHING`, k.Private, k.Public, ms(time.Now())); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT private_key, public_key FROM vapid_keys WHERE id = 1`).Scan(&k.Private, &k.Public)
	})
	return k, err
}

// pushJobs enqueues in tx the push jobs of a new notification group of
// kind for userID: one per subscription of userID that wants the kind.
func (db *DB) pushJobs(ctx context.Context, tx *sql.Tx, userID, groupID int64, kind string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, alerts_off FROM push_subscriptions WHERE user_id = ?`, userID)
	if err != nil {
		return err
	}
	var jobs []feed.Job
	for rows.Next() {
		var id int64
		var off string
		if err := rows.Scan(&id, &off); err != nil {
			rows.Close()
			return err
		}
		sub := feed.PushSubscription{AlertsOff: strings.Split(off, ",")}
		if sub.Alerted(kind) {
			jobs = append(jobs, feed.PushJob{SubscriptionID: id, UserID: userID, GroupID: groupID})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(jobs) == 0 {
		return err
	}
	return db.enqueue(ctx, tx, jobs...)
}
