-- The social graph beyond follows, and what the hybrid feed needs.
--
-- users.mode is the author's distribution mode (feed.Mode: 0 push, 1 pull,
-- 2 leaving pull). users.active_at is the last time the user used feedd (Unix
-- ms, written at most once per interval by Touch); existing users count as
-- active since they were created.
ALTER TABLE users ADD COLUMN mode INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN active_at INTEGER NOT NULL DEFAULT 0;
UPDATE users SET active_at = created_at;

-- user_id mutes muted_id: muted_id's posts stay out of user_id's feed.
CREATE TABLE mutes (
    user_id    INTEGER NOT NULL,
    muted_id   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, muted_id)
) WITHOUT ROWID;

-- user_id blocks blocked_id: no follow either way while it stands. Both
-- directions are checked with primary-key lookups, so no reverse index (nor
-- one on mutes) is needed by any query.
CREATE TABLE blocks (
    user_id    INTEGER NOT NULL,
    blocked_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, blocked_id)
) WITHOUT ROWID;
