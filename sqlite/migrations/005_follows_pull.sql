-- follows.pull is 1 when the followee is not in push mode (users.mode <> 0),
-- kept in step by SetFollow (a new follow copies the followee's mode) and
-- SetMode (which rewrites the flag of every follow of the author, in the
-- same transaction). follows_pull holds only those follows, so
-- PullFollowees, which every feed page asks first, is one probe of an index
-- that is empty for a viewer who follows nobody in pull mode, whatever the
-- number of their follows.
ALTER TABLE follows ADD COLUMN pull INTEGER NOT NULL DEFAULT 0;
UPDATE follows SET pull = 1 WHERE followee_id IN (SELECT id FROM users WHERE mode <> 0);
CREATE INDEX follows_pull ON follows (follower_id, followee_id) WHERE pull <> 0;
