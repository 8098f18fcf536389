-- An app's own users (docs/integrating.md): users linked to the app's
-- identities, revocation, API keys of the app's backend, posts the app
-- publishes under its own ids, and the erasure of a user.

-- users.phone becomes optional: a user made from an app's token, its
-- server API or single sign-on has none (NULL: UNIQUE lets NULLs repeat).
-- SQLite has no ALTER COLUMN; dropping a NOT NULL constraint is a rewrite
-- of the table's text in sqlite_schema, the procedure SQLite documents for
-- it (ALTER TABLE, "Making Other Kinds Of Table Schema Changes"). The
-- check after it fails the migration if the text was not the one expected.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'phone      TEXT    NOT NULL UNIQUE,', 'phone      TEXT    UNIQUE,')
    WHERE type = 'table' AND name = 'users';
PRAGMA writable_schema = RESET;
CREATE TEMP TABLE migration_check (ok INTEGER NOT NULL CHECK (ok));
INSERT INTO migration_check SELECT instr(sql, 'phone      TEXT    UNIQUE,') > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'users';
DROP TABLE migration_check;

-- users.revoked_at: the user's sessions were ended at this time (ms);
-- tokens issued at or before it are refused (feed.Service.RevokeUser).
ALTER TABLE users ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;

-- A revocation ends the user's sessions, found by user.
CREATE INDEX sessions_user ON sessions (user_id);

-- The identities of other systems linked to feedd users: (issuer, subject)
-- is the issuer and subject of an app's tokens, of a single sign-on
-- provider's ID tokens, or the app's own reference of a user given to the
-- server API (issuer: --auth-issuer).
CREATE TABLE identities (
    issuer     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;
CREATE INDEX identities_user ON identities (user_id);

-- The server API's keys (feedd apikey): only the SHA-256 of a key is
-- kept. A name is unique among the keys not revoked; used_at is written at
-- most once an hour per process.
CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL,
    key_hash   TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    used_at    INTEGER NOT NULL DEFAULT 0,
    revoked_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX api_keys_name ON api_keys (name) WHERE revoked_at = 0;

-- posts.foreign_id: the app's own id of a post published through the
-- server API; publishing it again returns the first post.
ALTER TABLE posts ADD COLUMN foreign_id TEXT;
CREATE UNIQUE INDEX posts_foreign_id ON posts (foreign_id) WHERE foreign_id IS NOT NULL;

-- A user's comment likes, for their export and erasure.
CREATE INDEX comment_likes_user ON comment_likes (user_id);

-- The erasures of users (feed.EraseSteps), each worked by a durable job:
-- step is the step under way ('' before the first), cursor where in it,
-- counts (JSON) what each step removed; finished_at is 0 until done. At
-- most one unfinished erasure per user.
CREATE TABLE erasures (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     INTEGER NOT NULL,
    step        TEXT    NOT NULL DEFAULT '',
    cursor      TEXT    NOT NULL DEFAULT '',
    counts      TEXT    NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX erasures_unfinished ON erasures (user_id) WHERE finished_at = 0;
