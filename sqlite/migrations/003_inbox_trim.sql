-- The room each inbox has left: how many more entries it may receive before
-- it could hold more than the cap and its slack. Inbox.Deliver and Inbox.Add
-- count it down and trim the inboxes left without room (room < 0) exactly to
-- the cap, found through inbox_trim_due, which holds only them (see
-- sqlite/inbox.go). A user with no row has an empty inbox.
CREATE TABLE inbox_trim (
    user_id INTEGER PRIMARY KEY,
    room    INTEGER NOT NULL
);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;
-- Inboxes filled before the cap was kept may be far over it: no room, so the
-- next delivery to each trims it.
INSERT INTO inbox_trim (user_id, room) SELECT DISTINCT user_id, 0 FROM inbox;
