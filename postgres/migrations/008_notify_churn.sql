-- An actor's repeat of an event within the renotify window counts once
-- (postgres/notify.go, notifyAdd): a retraction (unlike, unfollow, a block
-- or mute) marks the actor's row retracted instead of deleting it, and a
-- dismissal marks its group dismissed, so that the actor's next event on
-- the target finds what it was told before. Neither is shown: a group's
-- count is of its actors not retracted, and a dismissed group has count 0.
ALTER TABLE notify_groups ADD COLUMN dismissed BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE notify_actors ADD COLUMN retracted BOOLEAN NOT NULL DEFAULT false;
-- A group's newest actors, of those not retracted.
DROP INDEX notify_actors_newest;
CREATE INDEX notify_actors_newest ON notify_actors (group_id, at, actor_id) WHERE NOT retracted;
