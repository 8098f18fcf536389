package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	feed "github.com/feedd/feedd"
)

var _ feed.NotifyStore = (*DB)(nil)

// Notifications are written in the transactions of the actions they tell
// of (SetLike, ToggleLike, SetFollow, SetBlock, SetMute, SetHidden,
// DeletePost), by the hooks below: a committed like has its notification
// and a rolled-back one has none. SQLite's one writer orders them, so the
// open group of a target is found and extended without a race.

// trimBatch bounds the groups one new group's write removes as past the
// retention or beyond the groups kept.
const trimBatch = 10

// notice records that group groupID of userID changed in tx; tx hands
// the notices to db.Notified after its commit.
func (db *DB) notice(tx *sql.Tx, userID, groupID int64) {
	if db.Notified == nil {
		return
	}
	v, _ := db.noticesIn.LoadOrStore(tx, &[]feed.Notice{})
	p := v.(*[]feed.Notice)
	*p = append(*p, feed.Notice{UserID: userID, GroupID: groupID})
}

// noticeMark is how many notices tx holds now, for noticeUndo.
func (db *DB) noticeMark(tx *sql.Tx) int {
	if v, ok := db.noticesIn.Load(tx); ok {
		return len(*v.(*[]feed.Notice))
	}
	return 0
}

// noticeUndo drops the notices tx recorded after mark: those of a write
// whose savepoint was rolled back.
func (db *DB) noticeUndo(tx *sql.Tx, mark int) {
	if v, ok := db.noticesIn.Load(tx); ok {
		p := v.(*[]feed.Notice)
		*p = (*p)[:mark]
	}
}

// flushNotices hands tx's notices to db.Notified (committed) or drops them.
func (db *DB) flushNotices(tx *sql.Tx, committed bool) {
	v, ok := db.noticesIn.LoadAndDelete(tx)
	if ok && committed && db.Notified != nil {
		db.Notified(*v.(*[]feed.Notice))
	}
}

// notifyLike is the hook of a like (on) or an unlike of post postID of
// author by actorID, after the like row changed.
func (db *DB) notifyLike(ctx context.Context, tx *sql.Tx, author, postID, actorID int64, on bool, now time.Time) error {
	if on {
		return db.notifyAdd(ctx, tx, author, feed.NotifyLike, postID, actorID, "", now)
	}
	return db.notifyRetract(ctx, tx, author, feed.NotifyLike, postID, actorID)
}

// notifyFollow is the hook of a follow (on) or an unfollow, after the
// follow row changed.
func (db *DB) notifyFollow(ctx context.Context, tx *sql.Tx, followerID, followeeID int64, on bool, now time.Time) error {
	if on {
		return db.notifyAdd(ctx, tx, followeeID, feed.NotifyFollow, 0, followerID, "", now)
	}
	return db.notifyRetract(ctx, tx, followeeID, feed.NotifyFollow, 0, followerID)
}

// notifyModeration is the hook of SetHidden, before its change: when the
// post's hidden state is about to change, its author is told.
func (db *DB) notifyModeration(ctx context.Context, tx *sql.Tx, postID int64, hidden bool, now time.Time) error {
	if db.Notify.Off {
		return nil
	}
	var author int64
	var was bool
	err := tx.QueryRowContext(ctx, `SELECT user_id, EXISTS (SELECT 1 FROM hidden_posts WHERE post_id = ?1) FROM posts WHERE id = ?1`, postID).Scan(&author, &was)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && was == hidden) {
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
func (db *DB) notifyAdd(ctx context.Context, tx *sql.Tx, userID int64, kind string, target, actorID int64, action string, now time.Time) error {
	if db.Notify.Off || userID == actorID || userID <= 0 {
		return nil
	}
	// One statement: whether the actor is muted or blocked (actor 0,
	// moderation, never is); the target's newest group not dismissed, and
	// the actor's row in it; the actor's newest row on the target within
	// the renotify window (feed.NotifyFound).
	told, groups := db.Notify.TellCutoffs(now)
	var quiet bool
	var newest, first, toldGroup sql.NullInt64
	var inNewest, toldRetracted, toldDismissed sql.NullBool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM mutes WHERE user_id = ?1 AND muted_id = ?2)
			OR EXISTS (SELECT 1 FROM blocks WHERE user_id = ?1 AND blocked_id = ?2)
			OR EXISTS (SELECT 1 FROM blocks WHERE user_id = ?2 AND blocked_id = ?1),
			g.id, g.first_at, o.retracted, r.group_id, r.retracted, r.dismissed
		FROM (SELECT 1)
		LEFT JOIN (SELECT id, first_at FROM notify_groups WHERE user_id = ?1 AND kind = ?3 AND target_id = ?4 AND dismissed = 0
			ORDER BY first_at DESC, id DESC LIMIT 1) g ON true
		LEFT JOIN notify_actors o ON o.group_id = g.id AND o.actor_id = ?2
		LEFT JOIN (SELECT a.group_id, a.retracted, x.dismissed FROM notify_groups x JOIN notify_actors a ON a.group_id = x.id AND a.actor_id = ?2
			WHERE x.user_id = ?1 AND x.kind = ?3 AND x.target_id = ?4 AND x.first_at > ?5 AND a.at > ?6
			ORDER BY a.at DESC LIMIT 1) r ON true`,
		userID, actorID, kind, target, ms(groups), ms(told)).Scan(&quiet, &newest, &first, &inNewest, &toldGroup, &toldRetracted, &toldDismissed); err != nil || quiet {
		return err
	}
	step := db.Notify.Step(feed.NotifyFound{
		Newest: newest.Int64, NewestFirst: time.UnixMilli(first.Int64), InNewest: inNewest.Valid, InNewestRetracted: inNewest.Bool,
		Told: toldGroup.Int64, ToldRetracted: toldRetracted.Bool, ToldDismissed: toldDismissed.Bool,
	}, now)
	switch {
	case step.Skip:
		return nil
	case step.Restore:
		if _, err := tx.ExecContext(ctx, `UPDATE notify_actors SET retracted = 0 WHERE group_id = ? AND actor_id = ?`, step.Group, actorID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE notify_groups SET count = count + 1 WHERE id = ?`, step.Group); err != nil {
			return err
		}
		db.notice(tx, userID, step.Group) // shown again, as it was
		return nil
	}
	gid := step.Group
	if gid == 0 {
		if err := tx.QueryRowContext(ctx, `INSERT INTO notify_groups (user_id, kind, target_id, first_at, latest_at, count)
			VALUES (?, ?, ?, ?, ?, 0) RETURNING id`, userID, kind, target, ms(now), ms(now)).Scan(&gid); err != nil {
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
		_, err = tx.ExecContext(ctx, `UPDATE notify_groups SET count = 1, action = ?, latest_at = max(latest_at, ?) WHERE id = ?`, action, ms(now), gid)
	} else {
		if _, err := tx.ExecContext(ctx, `INSERT INTO notify_actors (group_id, actor_id, at) VALUES (?, ?, ?)
			ON CONFLICT (group_id, actor_id) DO UPDATE SET at = excluded.at, retracted = 0`, gid, actorID, ms(now)); err != nil {
			return err
		}
		added := 0
		if step.Added {
			added = 1
		}
		_, err = tx.ExecContext(ctx, `UPDATE notify_groups SET count = count + ?, latest_at = max(latest_at, ?) WHERE id = ?`, added, ms(now), gid)
	}
	if err != nil {
		return err
	}
	db.notice(tx, userID, gid)
	return nil
}

// notifyTrim removes a few of userID's groups past the retention at now
// and beyond the newest KeepGroups: bounded work per new group.
func (db *DB) notifyTrim(ctx context.Context, tx *sql.Tx, userID int64, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM notify_groups WHERE id IN (SELECT id FROM notify_groups
		WHERE user_id = ? AND latest_at < ? ORDER BY latest_at LIMIT ?)`, userID, ms(now.Add(-db.Notify.RetentionPeriod())), trimBatch); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM notify_groups WHERE id IN (SELECT id FROM notify_groups
		WHERE user_id = ? ORDER BY latest_at DESC, id DESC LIMIT ? OFFSET ?)`, userID, trimBatch, db.Notify.KeepGroups())
	return err
}

// notifyRetract takes actorID out of userID's groups of kind on target (an
// unlike, an unfollow): the actor's rows are marked retracted, kept for
// the renotify rule (notifyAdd).
func (db *DB) notifyRetract(ctx context.Context, tx *sql.Tx, userID int64, kind string, target, actorID int64) error {
	return db.notifyDropActor(ctx, tx, userID, `UPDATE notify_actors SET retracted = 1 WHERE actor_id = ?1 AND retracted = 0
		AND group_id IN (SELECT id FROM notify_groups WHERE user_id = ?2 AND kind = ?3 AND target_id = ?4) RETURNING group_id`,
		actorID, userID, kind, target)
}

// notifyForget takes actorID out of every group of userID (a block, both
// ways; a mute), as notifyRetract does.
func (db *DB) notifyForget(ctx context.Context, tx *sql.Tx, userID, actorID int64) error {
	return db.notifyDropActor(ctx, tx, userID, `UPDATE notify_actors SET retracted = 1 WHERE actor_id = ?1 AND retracted = 0
		AND group_id IN (SELECT id FROM notify_groups WHERE user_id = ?2) RETURNING group_id`, actorID, userID)
}

// notifyBlock is the hook of a block: the notifications between the two
// users go, both ways (notifyAdd refuses new ones).
func (db *DB) notifyBlock(ctx context.Context, tx *sql.Tx, userID, targetID int64) error {
	if err := db.notifyForget(ctx, tx, userID, targetID); err != nil {
		return err
	}
	return db.notifyForget(ctx, tx, targetID, userID)
}

// notifyDropActor runs retract, an UPDATE marking actor rows retracted and
// returning their group ids, and moves those groups' counts. A group left
// with no actor is kept, with count 0, and not shown.
func (db *DB) notifyDropActor(ctx context.Context, tx *sql.Tx, userID int64, retract string, args ...any) error {
	gids, err := scanIDs(tx.QueryContext(ctx, retract, args...))
	if err != nil {
		return err
	}
	for _, gid := range gids {
		res, err := tx.ExecContext(ctx, `UPDATE notify_groups SET count = count - 1 WHERE id = ? AND dismissed = 0`, gid)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k > 0 {
			db.notice(tx, userID, gid)
		}
	}
	return nil
}

// notifyForgetPost is the hook of DeletePost: the post's groups go with it.
func (db *DB) notifyForgetPost(ctx context.Context, tx *sql.Tx, authorID, postID int64) error {
	gids, err := scanIDs(tx.QueryContext(ctx, `DELETE FROM notify_groups WHERE user_id = ? AND kind IN (?, ?, ?, ?) AND target_id = ? RETURNING id`,
		authorID, feed.NotifyLike, feed.NotifyModeration, feed.NotifyComment, feed.NotifyRepost, postID))
	for _, gid := range gids {
		db.notice(tx, authorID, gid)
	}
	return err
}

// ---- reads (feed.NotifyStore)

// notifyCols reads a group: its columns, whether it is unread (?1 is the
// user), and its newest actors, newest first, from notify_actors_newest.
// Reads show only groups with actors (count > 0): an emptied or dismissed
// group is kept, not shown.
const notifyCols = `g.id, g.kind, g.target_id, g.count, g.action, g.latest_at,
	g.latest_at > coalesce((SELECT read_at FROM notify_read WHERE user_id = ?1), 0),
	coalesce((SELECT group_concat(actor_id) FROM (SELECT a.actor_id FROM notify_actors a WHERE a.group_id = g.id AND a.retracted = 0
		ORDER BY a.at DESC, a.actor_id DESC LIMIT 3)), '')`

func scanNotifyGroups(rows *sql.Rows, err error) ([]feed.NotifyGroup, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []feed.NotifyGroup{}
	for rows.Next() {
		var g feed.NotifyGroup
		var latest int64
		var actors string
		if err := rows.Scan(&g.ID, &g.Kind, &g.PostID, &g.Count, &g.Action, &latest, &g.Unread, &actors); err != nil {
			return nil, err
		}
		g.LatestAt = time.UnixMilli(latest)
		if g.Kind == feed.NotifyReply { // its target is the answered comment
			g.CommentID, g.PostID = g.PostID, 0
		}
		for a := range strings.SplitSeq(actors, ",") {
			if id, err := strconv.ParseInt(a, 10, 64); err == nil {
				g.ActorIDs = append(g.ActorIDs, id)
			}
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

func (db *DB) notifyCutoff(now time.Time) int64 { return ms(now.Add(-db.Notify.RetentionPeriod())) }

// Notifications implements feed.NotifyStore: one statement, a range of
// notify_groups_latest and per group an index range of its newest actors.
func (db *DB) Notifications(ctx context.Context, userID int64, b feed.Bound, now time.Time, limit int) ([]feed.NotifyGroup, error) {
	gs, err := scanNotifyGroups(db.read(ctx, `SELECT `+notifyCols+` FROM notify_groups g
		WHERE g.user_id = ?1 AND g.latest_at >= ?2 AND g.latest_at <= ?3 AND (g.latest_at < ?3 OR ?4 = 0 OR g.id < ?4) AND g.count > 0
		ORDER BY g.latest_at DESC, g.id DESC LIMIT ?5`, userID, db.notifyCutoff(now), b.Max, b.BeforeID, limit))
	for i := range gs {
		gs[i].UserID = userID
	}
	return gs, err
}

// NotifyGroup implements feed.NotifyStore.
func (db *DB) NotifyGroup(ctx context.Context, userID, groupID int64, now time.Time) (*feed.NotifyGroup, error) {
	gs, err := scanNotifyGroups(db.read(ctx, `SELECT `+notifyCols+` FROM notify_groups g
		WHERE g.id = ?2 AND g.user_id = ?1 AND g.latest_at >= ?3 AND g.count > 0`, userID, groupID, db.notifyCutoff(now)))
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
	var posts string
	err := db.readRow(ctx, `SELECT count(*), coalesce(group_concat(c.post_id), '') FROM notify_groups g
		LEFT JOIN comments c ON g.kind = ?3 AND c.id = g.target_id
		WHERE g.user_id = ?1 AND g.count > 0
		AND g.latest_at > max(?2 - 1, coalesce((SELECT read_at FROM notify_read WHERE user_id = ?1), 0))`,
		userID, db.notifyCutoff(now), feed.NotifyReply).Scan(&n, &posts)
	if err != nil {
		return 0, nil, err
	}
	var ids []int64
	for p := range strings.SplitSeq(posts, ",") {
		if id, err := strconv.ParseInt(p, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return n, ids, nil
}

// MarkNotificationsRead implements feed.NotifyStore.
func (db *DB) MarkNotificationsRead(ctx context.Context, userID int64, upTo time.Time) error {
	_, err := db.exec(ctx, `INSERT INTO notify_read (user_id, read_at) VALUES (?, ?)
		ON CONFLICT (user_id) DO UPDATE SET read_at = max(read_at, excluded.read_at)`, userID, ms(upTo))
	return err
}

// DismissNotification implements feed.NotifyStore. The group is kept,
// marked dismissed and emptied (not shown), with its actors' rows: an
// actor's repeat within the renotify window does not reopen it (notifyAdd).
func (db *DB) DismissNotification(ctx context.Context, userID, groupID int64) error {
	return db.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE notify_groups SET dismissed = 1, count = 0 WHERE id = ? AND user_id = ? AND count > 0`, groupID, userID)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return feed.ErrNotFound("notification")
		}
		db.notice(tx, userID, groupID)
		return nil
	})
}
