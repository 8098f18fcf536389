package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	feed "github.com/feedd/feedd"
)

var _ feed.NotifyStore = (*DB)(nil)

// Notifications are written in the transactions of the actions they tell
// of (SetLike, ToggleLike, SetFollow, SetBlock, SetMute, SetHidden,
// DeletePost), by the hooks below: a committed like has its notification
// and a rolled-back one has none. Every event takes one path (notifyAdd):
// a transaction-level advisory lock of (user, kind, target) and a share
// lock of the user's row, then what the user was told is read by a
// statement whose snapshot is taken under them, so that concurrent events
// of one target open one group, never two, each sees the ones before it,
// and a concurrent mute or block of the actor is ordered with the event.
// A dismissal takes the same advisory lock.

// trimBatch bounds the groups one new group's write removes as past the
// retention or beyond the groups kept.
const trimBatch = 10

// notice records that group groupID of userID changed in tx; tx hands
// the notices to db.Notified after its commit.
func (db *DB) notice(tx pgx.Tx, userID, groupID int64) {
	if db.Notified == nil {
		return
	}
	v, _ := db.noticesIn.LoadOrStore(tx, &[]feed.Notice{})
	p := v.(*[]feed.Notice)
	*p = append(*p, feed.Notice{UserID: userID, GroupID: groupID})
}

// flushNotices hands tx's notices to db.Notified (committed) or drops them.
func (db *DB) flushNotices(tx pgx.Tx, committed bool) {
	v, ok := db.noticesIn.LoadAndDelete(tx)
	if ok && committed && db.Notified != nil {
		db.Notified(*v.(*[]feed.Notice))
	}
}

// notifyLike is the hook of a like (on) or an unlike of post postID of
// author by actorID, after the like row changed.
func (db *DB) notifyLike(ctx context.Context, tx pgx.Tx, author, postID, actorID int64, on bool, now time.Time) error {
	if on {
		return db.notifyAdd(ctx, tx, author, feed.NotifyLike, postID, actorID, "", now)
	}
	return db.notifyRetract(ctx, tx, author, feed.NotifyLike, postID, actorID)
}

// notifyFollow is the hook of a follow (on) or an unfollow, after the
// follow row changed.
func (db *DB) notifyFollow(ctx context.Context, tx pgx.Tx, followerID, followeeID int64, on bool, now time.Time) error {
	if on {
		return db.notifyAdd(ctx, tx, followeeID, feed.NotifyFollow, 0, followerID, "", now)
	}
	return db.notifyRetract(ctx, tx, followeeID, feed.NotifyFollow, 0, followerID)
}

// notifyModeration is the hook of SetHidden, before its change: when the
// post's hidden state is about to change, its author is told.
func (db *DB) notifyModeration(ctx context.Context, tx pgx.Tx, postID int64, hidden bool, now time.Time) error {
	if db.Notify.Off {
		return nil
	}
	var author int64
	var was bool
	err := tx.QueryRow(ctx, `SELECT user_id, EXISTS (SELECT 1 FROM hidden_posts WHERE post_id = $1) FROM posts WHERE id = $1`, postID).Scan(&author, &was)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && was == hidden) {
		return nil
	} else if err != nil {
		return err
	}
	action := feed.ModerationRestored
	if hidden {
		action = feed.ModerationHidden
	}
	return db.notifyAdd(ctx, tx, author, feed.NotifyModeration, postID, 0, action, now)
}

// notifyAdd records actorID's event of kind on target for userID, as
// feed.NotifySettings.Step decides from what the user was told: the path
// of every kind, so that each gets the same rules. A moderation event
// (actorID 0) sets the group's action. Nothing is recorded of one's own
// actions, nor of a user userID mutes or blocks or who blocks userID.
//
// Its first statement takes the target's advisory lock and a share lock of
// userID's row, which SetMute and SetBlock lock for update first
// (lockPair): a mute or block of actorID either committed before the
// second statement (whose snapshot is taken once both locks are held)
// reads the mutes and blocks, or waits for this transaction to end and
// then takes out what it recorded. (Likes and follows hold that lock
// already, from likablePost and lockPair.)
func (db *DB) notifyAdd(ctx context.Context, tx pgx.Tx, userID int64, kind string, target, actorID int64, action string, now time.Time) error {
	if db.Notify.Off || userID == actorID || userID <= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), (SELECT 1 FROM users WHERE id = $2 FOR SHARE)`, notifyLockKey(userID, kind, target), userID); err != nil {
		return err
	}
	// Whether the actor is muted or blocked (actor 0, moderation, never
	// is); the target's newest group not dismissed, and the actor's row in
	// it; the actor's newest row on the target within the renotify window
	// (feed.NotifyFound).
	told, groups := db.Notify.TellCutoffs(now)
	var quiet bool
	var newest, first, toldGroup *int64
	var inNewest, toldRetracted, toldDismissed *bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mutes WHERE user_id = $1 AND muted_id = $2)
			OR EXISTS (SELECT 1 FROM blocks WHERE user_id = $1 AND blocked_id = $2)
			OR EXISTS (SELECT 1 FROM blocks WHERE user_id = $2 AND blocked_id = $1),
			g.id, g.first_at, o.retracted, r.group_id, r.retracted, r.dismissed
		FROM (SELECT 1) one
		LEFT JOIN LATERAL (SELECT id, first_at FROM notify_groups WHERE user_id = $1 AND kind = $3 AND target_id = $4 AND NOT dismissed
			ORDER BY first_at DESC, id DESC LIMIT 1) g ON true
		LEFT JOIN notify_actors o ON o.group_id = g.id AND o.actor_id = $2
		LEFT JOIN LATERAL (SELECT a.group_id, a.retracted, x.dismissed FROM notify_groups x JOIN notify_actors a ON a.group_id = x.id AND a.actor_id = $2
			WHERE x.user_id = $1 AND x.kind = $3 AND x.target_id = $4 AND x.first_at > $5 AND a.at > $6
			ORDER BY a.at DESC LIMIT 1) r ON true`,
		userID, actorID, kind, target, ms(groups), ms(told)).Scan(&quiet, &newest, &first, &inNewest, &toldGroup, &toldRetracted, &toldDismissed); err != nil || quiet {
		return err
	}
	step := db.Notify.Step(feed.NotifyFound{
		Newest: deref(newest), NewestFirst: time.UnixMilli(deref(first)), InNewest: inNewest != nil, InNewestRetracted: deref(inNewest),
		Told: deref(toldGroup), ToldRetracted: deref(toldRetracted), ToldDismissed: deref(toldDismissed),
	}, now)
	switch {
	case step.Skip:
		return nil
	case step.Restore:
		if _, err := tx.Exec(ctx, `WITH a AS (UPDATE notify_actors SET retracted = false WHERE group_id = $1 AND actor_id = $2)
			UPDATE notify_groups SET count = count + 1 WHERE id = $1`, step.Group, actorID); err != nil {
			return err
		}
		db.notice(tx, userID, step.Group) // shown again, as it was
		return nil
	}
	gid := step.Group
	if gid == 0 {
		if err := tx.QueryRow(ctx, `INSERT INTO notify_groups (user_id, kind, target_id, first_at, latest_at, count)
			VALUES ($1, $2, $3, $4, $5, 0) RETURNING id`, userID, kind, target, ms(now), ms(now)).Scan(&gid); err != nil {
			return err
		}
		if err := db.notifyTrim(ctx, tx, userID, now); err != nil {
			return err
		}
		// A group is pushed once, when it opens (feed.PushJob).
		if err := db.pushJobs(ctx, tx, userID, gid, kind); err != nil {
			return err
		}
	}
	var err error
	if actorID == 0 {
		_, err = tx.Exec(ctx, `UPDATE notify_groups SET count = 1, action = $1, latest_at = GREATEST(latest_at, $2) WHERE id = $3`, action, ms(now), gid)
	} else {
		added := 0
		if step.Added {
			added = 1
		}
		// The actor's row and the count in one statement.
		_, err = tx.Exec(ctx, `WITH a AS (INSERT INTO notify_actors (group_id, actor_id, at) VALUES ($1, $2, $3)
				ON CONFLICT (group_id, actor_id) DO UPDATE SET at = excluded.at, retracted = false)
			UPDATE notify_groups SET count = count + $4, latest_at = GREATEST(latest_at, $3) WHERE id = $1`, gid, actorID, ms(now), added)
	}
	if err != nil {
		return err
	}
	db.notice(tx, userID, gid)
	return nil
}

// deref is *p, or the zero value for nil (a NULL column).
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// notifyTrim removes a few of userID's groups past the retention at now
// and beyond the newest KeepGroups: bounded work per new group.
func (db *DB) notifyTrim(ctx context.Context, tx pgx.Tx, userID int64, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM notify_groups WHERE id IN (SELECT id FROM notify_groups
		WHERE user_id = $1 AND latest_at < $2 ORDER BY latest_at LIMIT $3)`, userID, ms(now.Add(-db.Notify.RetentionPeriod())), trimBatch); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM notify_groups WHERE id IN (SELECT id FROM notify_groups
		WHERE user_id = $1 ORDER BY latest_at DESC, id DESC LIMIT $2 OFFSET $3)`, userID, trimBatch, db.Notify.KeepGroups())
	return err
}

// notifyRetract takes actorID out of userID's groups of kind on target (an
// unlike, an unfollow): the actor's rows are marked retracted, kept for
// the renotify rule (notifyAdd).
func (db *DB) notifyRetract(ctx context.Context, tx pgx.Tx, userID int64, kind string, target, actorID int64) error {
	return db.notifyDropActor(ctx, tx, userID, `UPDATE notify_actors SET retracted = true WHERE actor_id = $1 AND NOT retracted
		AND group_id IN (SELECT id FROM notify_groups WHERE user_id = $2 AND kind = $3 AND target_id = $4) RETURNING group_id`,
		actorID, userID, kind, target)
}

// notifyForget takes actorID out of every group of userID (a block, both
// ways; a mute), as notifyRetract does.
func (db *DB) notifyForget(ctx context.Context, tx pgx.Tx, userID, actorID int64) error {
	return db.notifyDropActor(ctx, tx, userID, `UPDATE notify_actors SET retracted = true WHERE actor_id = $1 AND NOT retracted
		AND group_id IN (SELECT id FROM notify_groups WHERE user_id = $2) RETURNING group_id`, actorID, userID)
}

// notifyBlock is the hook of a block: the notifications between the two
// users go, both ways (notifyAdd refuses new ones).
func (db *DB) notifyBlock(ctx context.Context, tx pgx.Tx, userID, targetID int64) error {
	if err := db.notifyForget(ctx, tx, userID, targetID); err != nil {
		return err
	}
	return db.notifyForget(ctx, tx, targetID, userID)
}

// notifyDropActor runs retract, an UPDATE marking actor rows retracted and
// returning their group ids, and moves those groups' counts. A group left
// with no actor is kept, with count 0, and not shown.
func (db *DB) notifyDropActor(ctx context.Context, tx pgx.Tx, userID int64, retract string, args ...any) error {
	gids, err := scanIDs(tx.Query(ctx, retract, args...))
	if err != nil {
		return err
	}
	for _, gid := range gids {
		tag, err := tx.Exec(ctx, `UPDATE notify_groups SET count = count - 1 WHERE id = $1 AND NOT dismissed`, gid)
		if err != nil {
			return err
		}
		if tag.RowsAffected() > 0 {
			db.notice(tx, userID, gid)
		}
	}
	return nil
}

// notifyForgetPost is the hook of DeletePost: the post's groups go with it.
func (db *DB) notifyForgetPost(ctx context.Context, tx pgx.Tx, authorID, postID int64) error {
	gids, err := scanIDs(tx.Query(ctx, `DELETE FROM notify_groups WHERE user_id = $1 AND kind IN ($2, $3, $5, $6) AND target_id = $4 RETURNING id`,
		authorID, feed.NotifyLike, feed.NotifyModeration, postID, feed.NotifyComment, feed.NotifyRepost))
	for _, gid := range gids {
		db.notice(tx, authorID, gid)
	}
	return err
}

// ---- reads (feed.NotifyStore)

// notifyCols reads a group: its columns, whether it is unread (?1 is the
// user), and its newest actors, newest first, from notify_actors_newest.
const notifyCols = `g.id, g.kind, g.target_id, g.count, g.action, g.latest_at,
	g.latest_at > coalesce((SELECT read_at FROM notify_read WHERE user_id = $1), 0),
	ARRAY(SELECT a.actor_id FROM notify_actors a WHERE a.group_id = g.id AND NOT a.retracted
		ORDER BY a.at DESC, a.actor_id DESC LIMIT 3)`

func scanNotifyGroups(rows pgx.Rows, err error) ([]feed.NotifyGroup, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (feed.NotifyGroup, error) {
		var g feed.NotifyGroup
		var latest int64
		err := row.Scan(&g.ID, &g.Kind, &g.PostID, &g.Count, &g.Action, &latest, &g.Unread, &g.ActorIDs)
		g.LatestAt = time.UnixMilli(latest)
		if g.Kind == feed.NotifyReply { // its target is the answered comment
			g.CommentID, g.PostID = g.PostID, 0
		}
		return g, err
	})
}

// notifyLockKey is the advisory lock key of (userID, kind, target).
func notifyLockKey(userID int64, kind string, target int64) int64 {
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i], b[8+i] = byte(userID>>(8*i)), byte(target>>(8*i))
	}
	h.Write(b[:])
	h.Write([]byte(kind))
	return int64(h.Sum64())
}

func (db *DB) notifyCutoff(now time.Time) int64 { return ms(now.Add(-db.Notify.RetentionPeriod())) }

// Notifications implements feed.NotifyStore: one statement, a range of
// notify_groups_latest and per group an index range of its newest actors.
func (db *DB) Notifications(ctx context.Context, userID int64, b feed.Bound, now time.Time, limit int) ([]feed.NotifyGroup, error) {
	gs, err := scanNotifyGroups(db.Pool.Query(ctx, `SELECT `+notifyCols+` FROM notify_groups g
		WHERE g.user_id = $1 AND g.latest_at >= $2 AND g.latest_at <= $3 AND (g.latest_at < $3 OR $4::bigint = 0 OR g.id < $4::bigint) AND g.count > 0
		ORDER BY g.latest_at DESC, g.id DESC LIMIT $5`, userID, db.notifyCutoff(now), b.Max, b.BeforeID, limit))
	for i := range gs {
		gs[i].UserID = userID
	}
	return gs, err
}

// NotifyGroup implements feed.NotifyStore.
func (db *DB) NotifyGroup(ctx context.Context, userID, groupID int64, now time.Time) (*feed.NotifyGroup, error) {
	gs, err := scanNotifyGroups(db.Pool.Query(ctx, `SELECT `+notifyCols+` FROM notify_groups g
		WHERE g.id = $2 AND g.user_id = $1 AND g.latest_at >= $3 AND g.count > 0`, userID, groupID, db.notifyCutoff(now)))
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, feed.ErrNotFound("notification")
	}
	gs[0].UserID = userID
	return &gs[0], nil
}

// UnreadNotifications implements feed.NotifyStore: a range of
// notify_groups_latest, at most the groups kept, and the comment of each
// reply group by its key.
func (db *DB) UnreadNotifications(ctx context.Context, userID int64, now time.Time) (int, []int64, error) {
	var n int
	var posts []int64
	err := db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(array_agg(c.post_id) FILTER (WHERE c.post_id IS NOT NULL), '{}') FROM notify_groups g
		LEFT JOIN comments c ON g.kind = $3 AND c.id = g.target_id
		WHERE g.user_id = $1 AND g.count > 0
		AND g.latest_at > GREATEST($2::bigint - 1, coalesce((SELECT read_at FROM notify_read WHERE user_id = $1), 0))`,
		userID, db.notifyCutoff(now), feed.NotifyReply).Scan(&n, &posts)
	return n, posts, err
}

// MarkNotificationsRead implements feed.NotifyStore.
func (db *DB) MarkNotificationsRead(ctx context.Context, userID int64, upTo time.Time) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO notify_read (user_id, read_at) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET read_at = GREATEST(notify_read.read_at, excluded.read_at)`, userID, ms(upTo))
	return err
}

// DismissNotification implements feed.NotifyStore. The group is kept,
// marked dismissed and emptied (not shown), with its actors' rows: an
// actor's repeat within the renotify window does not reopen it (notifyAdd).
// It takes the target's advisory lock first, as notifyAdd does, so an
// event either joined the group before (and is dismissed with it) or
// finds it dismissed and opens a new one.
func (db *DB) DismissNotification(ctx context.Context, userID, groupID int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var kind string
		var target int64
		err := tx.QueryRow(ctx, `SELECT kind, target_id FROM notify_groups WHERE id = $1 AND user_id = $2 AND count > 0`, groupID, userID).Scan(&kind, &target)
		if errors.Is(err, pgx.ErrNoRows) {
			return feed.ErrNotFound("notification")
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, notifyLockKey(userID, kind, target)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE notify_groups SET dismissed = true, count = 0 WHERE id = $1 AND user_id = $2 AND count > 0`, groupID, userID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return feed.ErrNotFound("notification")
		}
		db.notice(tx, userID, groupID)
		return nil
	})
}
