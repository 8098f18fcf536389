-- Reposts and quotes (repost.go; docs/architecture.md, "Reposts: each
-- post once").

-- posts.quote_of is the post this one quotes (0: none); quote_policy who
-- may quote it (0 everyone, 1 the people the author follows, 2 nobody but
-- its author: feed.QuotePolicy); reposts and quotes its counts, kept in the
-- transactions that add and remove reposts and quotes.
ALTER TABLE posts
    ADD COLUMN quote_of     BIGINT   NOT NULL DEFAULT 0,
    ADD COLUMN quote_policy SMALLINT NOT NULL DEFAULT 0,
    ADD COLUMN reposts      INTEGER  NOT NULL DEFAULT 0,
    ADD COLUMN quotes       INTEGER  NOT NULL DEFAULT 0;

-- follows.show_reposts is false when the follower hides the followee's
-- reposts from their feed.
ALTER TABLE follows ADD COLUMN show_reposts BOOLEAN NOT NULL DEFAULT true;

-- One repost per user and post. A repost is a feed entry of its own: its
-- id is taken from the posts' sequence, so an inbox entry's id names a
-- post or a repost, never both.
CREATE TABLE reposts (
    id         BIGINT PRIMARY KEY DEFAULT nextval('posts_id_seq'),
    user_id    BIGINT NOT NULL REFERENCES users (id),
    post_id    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (user_id, post_id)
);
-- The reposter's entries newest first, beside posts_user: their outbox.
CREATE INDEX reposts_user ON reposts (user_id, created_at DESC, id DESC);
-- A post's reposts, earliest first: who shared it, and a deleted post's
-- purge.
CREATE INDEX reposts_post ON reposts (post_id, created_at, id);
