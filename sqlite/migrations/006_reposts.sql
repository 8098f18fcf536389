-- Reposts and quotes (repost.go; docs/architecture.md, "Reposts: each
-- post once").

-- posts.quote_of is the post this one quotes (0: none); quote_policy who
-- may quote it (0 everyone, 1 the people the author follows, 2 nobody but
-- its author: feed.QuotePolicy); reposts and quotes its counts, kept in the
-- transactions that add and remove reposts and quotes.
ALTER TABLE posts ADD COLUMN quote_of INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN quote_policy INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN reposts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN quotes INTEGER NOT NULL DEFAULT 0;

-- follows.show_reposts is 0 when the follower hides the followee's
-- reposts from their feed.
ALTER TABLE follows ADD COLUMN show_reposts INTEGER NOT NULL DEFAULT 1;

-- One repost per user and post. A repost is a feed entry of its own: its
-- id is taken from the posts' sequence (sqlite_sequence's row of posts),
-- so an inbox entry's id names a post or a repost, never both.
CREATE TABLE reposts (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL,
    post_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (user_id, post_id)
);
-- The reposter's entries newest first, beside posts_user: their outbox.
CREATE INDEX reposts_user ON reposts (user_id, created_at DESC, id DESC);
-- A post's reposts, earliest first: who shared it, and a deleted post's
-- purge.
CREATE INDEX reposts_post ON reposts (post_id, created_at, id);
