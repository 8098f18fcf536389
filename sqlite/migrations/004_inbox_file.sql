-- The inboxes live in a file of their own, inbox.db (sqlite/inboxdb.go).
-- feedd.db names the inbox.db that belongs to it (key inbox_file, the id
-- inbox.db keeps in its own inbox_meta): after a restore of feedd.db alone,
-- or with inbox.db lost, the ids differ and the inboxes are regenerated.
CREATE TABLE feedd_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
