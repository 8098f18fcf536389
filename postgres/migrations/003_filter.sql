-- Content filters and the ranked timeline (filter.go, rank.go).

-- user_id hides the posts whose title or content holds word (folded by
-- feed.NormalizeWord) from their feeds.
CREATE TABLE muted_words (
    user_id    BIGINT  NOT NULL,
    word       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (user_id, word)
);

-- One report per reporter and post; cleared when the post is restored.
CREATE TABLE reports (
    post_id     BIGINT  NOT NULL,
    reporter_id BIGINT  NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (post_id, reporter_id)
);

-- Posts hidden by moderation (reports over the threshold, or an admin).
CREATE TABLE hidden_posts (
    post_id   BIGINT PRIMARY KEY,
    hidden_at BIGINT  NOT NULL
);

-- The order of ranked scrolls, kept until expires_at (items: JSON).
CREATE TABLE rank_snapshots (
    id         TEXT    PRIMARY KEY,
    user_id    BIGINT  NOT NULL,
    items      TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL
);
CREATE INDEX rank_snapshots_user ON rank_snapshots (user_id, created_at);
CREATE INDEX rank_snapshots_expires ON rank_snapshots (expires_at);
