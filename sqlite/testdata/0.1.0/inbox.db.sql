-- inbox.db as feedd 0.1.0 creates it: the embedded inboxes in a file of
-- their own, with a writer of their own, so that fan-out never waits
-- behind the API's writes to feedd.db (sqlite/inboxdb.go). Once released,
-- this file is never edited: a change to the schema is a new migration
-- after it (CONTRIBUTING.md, "A migration").

-- One row per inbox entry. The primary key is the feed order of one user's
-- inbox, so a page is one index range scan.
CREATE TABLE inbox (
    user_id INTEGER NOT NULL,
    score   INTEGER NOT NULL,
    post_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
) WITHOUT ROWID;

-- The room each inbox has left: how many more entries it may receive
-- before it could hold more than the cap and its slack. Inbox.Deliver and
-- Inbox.Add count it down and trim the inboxes left without room (room <
-- 0) exactly to the cap, found through inbox_trim_due, which holds only
-- them (sqlite/inbox.go). A user with no row has an empty inbox.
CREATE TABLE inbox_trim (
    user_id INTEGER PRIMARY KEY,
    room    INTEGER NOT NULL
);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;

-- One row the readiness probe (DB.Ready) rewrites.
CREATE TABLE ready_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
);

-- This file's id (key id), which feedd.db names as its inbox file.
CREATE TABLE inbox_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
