-- follows.pull is true when the followee is not in push mode (users.mode <>
-- 0), kept in step by SetFollow (a new follow copies the followee's mode,
-- read under the lock of lockPair) and SetMode (which rewrites the flag of
-- every follow of the author in the same transaction, after locking the
-- author's row). follows_pull holds only those follows, so PullFollowees,
-- which every feed page asks first, is one probe of an index that is empty
-- for a viewer who follows nobody in pull mode, whatever the number of their
-- follows. Adding a column with a constant default does not rewrite the
-- table; the UPDATE writes only the follows of pull-mode authors.
ALTER TABLE follows ADD COLUMN pull BOOLEAN NOT NULL DEFAULT false;
UPDATE follows SET pull = true WHERE followee_id IN (SELECT id FROM users WHERE mode <> 0);
CREATE INDEX follows_pull ON follows (follower_id, followee_id) WHERE pull;
