-- Grouped notifications (notify.go). A group is one kind of event on one
-- target (the post for likes and moderation, 0 for follows) of one user,
-- open while its first event is within the group window. Its count of
-- distinct actors is kept with the actor rows in one transaction; the
-- newest actors are read by index, so neither a like nor a page read
-- depends on the group's size. latest_at only moves forward.
CREATE TABLE notify_groups (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id   BIGINT  NOT NULL,
    kind      TEXT    NOT NULL,
    target_id BIGINT  NOT NULL,
    first_at  BIGINT  NOT NULL,
    latest_at BIGINT  NOT NULL,
    count     INTEGER NOT NULL,
    action    TEXT    NOT NULL DEFAULT ''
);
-- The open group of a target: the newest first_at of (user, kind, target).
CREATE INDEX notify_groups_target ON notify_groups (user_id, kind, target_id, first_at);
-- A user's page, by latest activity.
CREATE INDEX notify_groups_latest ON notify_groups (user_id, latest_at, id);

CREATE TABLE notify_actors (
    group_id BIGINT NOT NULL REFERENCES notify_groups (id) ON DELETE CASCADE,
    actor_id BIGINT NOT NULL,
    at       BIGINT NOT NULL,
    PRIMARY KEY (group_id, actor_id)
);
-- A group's newest actors.
CREATE INDEX notify_actors_newest ON notify_actors (group_id, at, actor_id);
-- No index by actor: a block or a mute finds the actor's rows through
-- the user's groups (at most the groups kept) and the primary key.

-- Each user's read marker: groups whose latest_at is not after it are read.
CREATE TABLE notify_read (
    user_id BIGINT PRIMARY KEY,
    read_at BIGINT NOT NULL
);
