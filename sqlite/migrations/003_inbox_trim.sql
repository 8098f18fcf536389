-- How many entries each inbox received since it was last trimmed to the cap:
-- a bound on how far it is over the cap. Inbox.Deliver and Inbox.Add count
-- here, and trim an inbox exactly to the cap once the count passes the slack
-- (see sqlite/inbox.go). A user with no row has no entries since a trim.
CREATE TABLE inbox_trim (
    user_id INTEGER PRIMARY KEY,
    pending INTEGER NOT NULL
);
-- Inboxes filled before the cap was kept may be far over it: the next
-- delivery to each trims it.
INSERT INTO inbox_trim (user_id, pending) SELECT DISTINCT user_id, 1073741824 FROM inbox;
