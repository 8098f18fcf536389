-- inbox.db: the embedded inboxes in a file of their own, with a writer of
-- their own, so that fan-out never waits behind the API's writes to
-- feedd.db (see sqlite/inboxdb.go). The tables are those of feedd.db's
-- migrations 001 and 003_inbox_trim.

-- One row per inbox entry. The primary key is the feed order of one user's
-- inbox, so a page is one index range scan.
CREATE TABLE inbox (
    user_id INTEGER NOT NULL,
    score   INTEGER NOT NULL,
    post_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
) WITHOUT ROWID;

-- The room each inbox has left (see sqlite/inbox.go).
CREATE TABLE inbox_trim (
    user_id INTEGER PRIMARY KEY,
    room    INTEGER NOT NULL
);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;

-- Readiness probe row (DB.Ready).
CREATE TABLE ready_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
);

-- This file's id (key id), which feedd.db names as its inbox file.
CREATE TABLE inbox_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
