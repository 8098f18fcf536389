-- likes.author_id is the liked post's author (posts never change authors),
-- written with the like, and likes_user covers a viewer's likes with their
-- times and authors: the ranked timeline's affinity of a viewer (their
-- likes since a time, by author) is one range of this index, with no
-- lookup of the likes table or of posts per like (BENCHMARKS.md "The cold
-- ranked page"). The index still answers "has the viewer liked post p"
-- (user_id, post_id), as the one it replaces did.
ALTER TABLE likes ADD COLUMN author_id INTEGER NOT NULL DEFAULT 0;
UPDATE likes SET author_id = coalesce((SELECT p.user_id FROM posts p WHERE p.id = likes.post_id), 0);
DROP INDEX likes_user;
CREATE INDEX likes_user ON likes (user_id, post_id, created_at, author_id);
