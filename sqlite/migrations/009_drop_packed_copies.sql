-- Drops the inbox head (007_inbox_head.sql, also applied to inbox.db:
-- sqlite/db.go, inboxSchema) and the rank profile (008_rank_profile.sql):
-- packed copies of rows that the ranked timeline now reads from the rows
-- themselves. Their triggers called SQL functions that only feedd's
-- processes registered, so that a stock sqlite3 shell could not write
-- likes, follows or inboxes; every trigger left is plain SQL. IF EXISTS:
-- inbox.db has no rank profile, and a database that had not applied 008
-- records it without running it (sqlite/db.go, retired).
DROP TRIGGER IF EXISTS inbox_head_keep;
DROP TABLE IF EXISTS inbox_head;
ALTER TABLE inbox_trim DROP COLUMN head_score;
ALTER TABLE inbox_trim DROP COLUMN head_post;

DROP TRIGGER IF EXISTS rank_profile_like;
DROP TRIGGER IF EXISTS rank_profile_unlike;
DROP TRIGGER IF EXISTS rank_profile_like_update;
DROP TRIGGER IF EXISTS rank_profile_follow;
DROP TRIGGER IF EXISTS rank_profile_unfollow;
DROP TRIGGER IF EXISTS rank_profile_follow_update;
DROP TABLE IF EXISTS rank_profile;
