-- likes.author_id is the liked post's author (posts never change authors),
-- written with the like (SetLike, ToggleLike: the author likablePost read),
-- and likes_user covers a viewer's likes with their times and authors: the
-- ranked timeline's affinity of a viewer (their likes since a time, by
-- author) is one index-only range, with no join of posts per like
-- (BENCHMARKS.md "The cold ranked page"). The index still answers "has the
-- viewer liked post p" (user_id, post_id), as the one it replaces did. The
-- default only fills the rows that exist, which the UPDATE then rewrites
-- once; without it afterwards, an INSERT that forgot the author fails.
ALTER TABLE likes ADD COLUMN author_id BIGINT NOT NULL DEFAULT 0;
UPDATE likes l SET author_id = p.user_id FROM posts p WHERE p.id = l.post_id;
ALTER TABLE likes ALTER COLUMN author_id DROP DEFAULT;
DROP INDEX likes_user;
CREATE INDEX likes_user ON likes (user_id, post_id) INCLUDE (created_at, author_id);
