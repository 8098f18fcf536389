-- A notification group's id is its key (feed.NotifyKey): never given to
-- another group, also after the group with the highest id is removed.
-- INTEGER PRIMARY KEY alone reuses the highest id; AUTOINCREMENT does not.
-- SQLite cannot change a key in place, so both tables are made anew: the
-- old ones are renamed first (notify_actors' foreign key follows the
-- rename), the new ones filled, the old ones dropped (actors first, so the
-- drop of the groups deletes nothing through the foreign key).
ALTER TABLE notify_actors RENAME TO notify_actors_old;
ALTER TABLE notify_groups RENAME TO notify_groups_old;
DROP INDEX notify_groups_target;
DROP INDEX notify_groups_latest;
DROP INDEX notify_actors_newest;

CREATE TABLE notify_groups (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id   INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    target_id INTEGER NOT NULL,
    first_at  INTEGER NOT NULL,
    latest_at INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    action    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX notify_groups_target ON notify_groups (user_id, kind, target_id, first_at);
CREATE INDEX notify_groups_latest ON notify_groups (user_id, latest_at, id);

CREATE TABLE notify_actors (
    group_id INTEGER NOT NULL REFERENCES notify_groups (id) ON DELETE CASCADE,
    actor_id INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (group_id, actor_id)
) WITHOUT ROWID;
CREATE INDEX notify_actors_newest ON notify_actors (group_id, at, actor_id);

INSERT INTO notify_groups SELECT * FROM notify_groups_old;
INSERT INTO notify_actors SELECT * FROM notify_actors_old;
DROP TABLE notify_actors_old;
DROP TABLE notify_groups_old;
