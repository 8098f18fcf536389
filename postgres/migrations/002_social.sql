-- The social graph beyond follows, and what the hybrid feed needs.
--
-- users.mode is the author's distribution mode (feed.Mode: 0 push, 1 pull,
-- 2 leaving pull). users.active_at is the last time the user used feedd (Unix
-- ms, written at most once per interval by Touch); existing users count as
-- active since they were created. Adding a column with a constant default
-- does not rewrite the table; the UPDATE writes each row once.
ALTER TABLE users
    ADD COLUMN mode      SMALLINT NOT NULL DEFAULT 0,
    ADD COLUMN active_at BIGINT   NOT NULL DEFAULT 0;
UPDATE users SET active_at = created_at;
-- The few authors not in push mode: PullFollowees can start from them.
CREATE INDEX users_pull ON users (id) WHERE mode <> 0;

-- user_id mutes muted_id: muted_id's posts stay out of user_id's feed.
CREATE TABLE mutes (
    user_id    BIGINT NOT NULL,
    muted_id   BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, muted_id)
);

-- user_id blocks blocked_id: no follow either way while it stands. Both
-- directions are checked with primary-key lookups, so no reverse index (nor
-- one on mutes) is needed by any query.
CREATE TABLE blocks (
    user_id    BIGINT NOT NULL,
    blocked_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, blocked_id)
);
