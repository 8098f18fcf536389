CREATE VIEW feedd_migrations AS SELECT [this database was upgraded by feedd 0.2.0 or later, and an older feedd cannot run it: run the newer feedd, or restore the backup taken before the upgrade]() AS name;
CREATE TABLE feedd_schema_migrations (name TEXT PRIMARY KEY, release TEXT NOT NULL, applied_at INTEGER NOT NULL);
CREATE TABLE inbox (user_id INTEGER NOT NULL, score INTEGER NOT NULL, post_id INTEGER NOT NULL, PRIMARY KEY (user_id, score, post_id)) WITHOUT ROWID;
CREATE TABLE inbox_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE inbox_trim (user_id INTEGER PRIMARY KEY, room INTEGER NOT NULL);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;
CREATE TABLE ready_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
