-- The room each inbox has left: how many more entries it may receive before
-- it could hold more than the cap and its slack. Inbox.Deliver and Inbox.Add
-- count it down and trim the inboxes left without room (room < 0) exactly to
-- the cap (see postgres/inbox.go). A user with no row has an empty inbox.
-- Each delivery updates a row: room on every page keeps the updates HOT.
CREATE TABLE inbox_trim (
    user_id BIGINT  PRIMARY KEY,
    room    INTEGER NOT NULL
) WITH (fillfactor = 50);
-- Inboxes filled before the cap was kept may be far over it: no room, so the
-- next delivery to each trims it.
INSERT INTO inbox_trim (user_id, room) SELECT DISTINCT user_id, 0 FROM inbox;
