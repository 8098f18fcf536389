-- Times are BIGINT Unix milliseconds, as in the SQLite schema: a post's
-- created_at is its inbox score, so it must round-trip at ms precision.

CREATE TABLE users (
    id         BIGSERIAL PRIMARY KEY,
    phone      TEXT    NOT NULL UNIQUE,
    nick_name  TEXT    NOT NULL,
    icon       TEXT    NOT NULL DEFAULT '',
    city       TEXT    NOT NULL DEFAULT '',
    introduce  TEXT    NOT NULL DEFAULT '',
    fans       INTEGER NOT NULL DEFAULT 0,
    followee   INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT  NOT NULL
);

CREATE TABLE login_codes (
    phone      TEXT    PRIMARY KEY,
    code_hash  TEXT    NOT NULL,
    sent_at    BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    tries      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sessions (
    token_hash TEXT   PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id),
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE posts (
    id         BIGSERIAL PRIMARY KEY,
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    shop_id    BIGINT  NOT NULL DEFAULT 0,
    title      TEXT    NOT NULL,
    images     TEXT    NOT NULL DEFAULT '',
    content    TEXT    NOT NULL,
    liked      INTEGER NOT NULL DEFAULT 0,
    comments   INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL
);
CREATE INDEX posts_user ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_hot ON posts (liked DESC, created_at DESC, id DESC);

-- id orders likes earliest first (Likers).
CREATE TABLE likes (
    id         BIGSERIAL PRIMARY KEY,
    post_id    BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (post_id, user_id)
);
CREATE INDEX likes_user ON likes (user_id, post_id);

CREATE TABLE follows (
    follower_id BIGINT NOT NULL,
    followee_id BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (follower_id, followee_id)
);
-- The fan-out audience scan: followers of one user by id (FollowersAfter).
CREATE INDEX follows_followee ON follows (followee_id, follower_id);

-- One row per inbox entry: the inbox used when feedd runs without Redis. The
-- primary key is the feed order of one user's inbox, so a page is one index
-- range scan (read backwards).
CREATE TABLE inbox (
    user_id BIGINT NOT NULL,
    score   BIGINT NOT NULL,
    post_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
);
