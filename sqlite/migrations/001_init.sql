CREATE TABLE users (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    phone      TEXT    NOT NULL UNIQUE,
    nick_name  TEXT    NOT NULL,
    icon       TEXT    NOT NULL DEFAULT '',
    city       TEXT    NOT NULL DEFAULT '',
    introduce  TEXT    NOT NULL DEFAULT '',
    fans       INTEGER NOT NULL DEFAULT 0,
    followee   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE login_codes (
    phone      TEXT    PRIMARY KEY,
    code_hash  TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    tries      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE sessions (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE posts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    shop_id    INTEGER NOT NULL DEFAULT 0,
    title      TEXT    NOT NULL,
    images     TEXT    NOT NULL DEFAULT '',
    content    TEXT    NOT NULL,
    liked      INTEGER NOT NULL DEFAULT 0,
    comments   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX posts_user ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_hot ON posts (liked DESC, created_at DESC, id DESC);

CREATE TABLE likes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id    INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (post_id, user_id)
);
CREATE INDEX likes_user ON likes (user_id, post_id);

CREATE TABLE follows (
    follower_id INTEGER NOT NULL,
    followee_id INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (follower_id, followee_id)
) WITHOUT ROWID;
CREATE INDEX follows_followee ON follows (followee_id, follower_id);

-- One row per inbox entry: the embedded inbox. The primary key is the feed
-- order of one user's inbox, so a page is one index range scan.
CREATE TABLE inbox (
    user_id INTEGER NOT NULL,
    score   INTEGER NOT NULL,
    post_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
) WITHOUT ROWID;
