CREATE TABLE feedd_migrations (name TEXT PRIMARY KEY);
CREATE TABLE inbox (user_id INTEGER NOT NULL, score INTEGER NOT NULL, post_id INTEGER NOT NULL, PRIMARY KEY (user_id, score, post_id)) WITHOUT ROWID;
CREATE TABLE inbox_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE inbox_trim (user_id INTEGER PRIMARY KEY, room INTEGER NOT NULL);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;
CREATE TABLE ready_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
