-- Content filters and the ranked timeline (filter.go, rank.go).

-- user_id hides the posts whose title or content holds word (folded by
-- feed.NormalizeWord) from their feeds.
CREATE TABLE muted_words (
    user_id    INTEGER NOT NULL,
    word       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, word)
) WITHOUT ROWID;

-- One report per reporter and post; cleared when the post is restored.
CREATE TABLE reports (
    post_id     INTEGER NOT NULL,
    reporter_id INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (post_id, reporter_id)
) WITHOUT ROWID;

-- Posts hidden by moderation (reports over the threshold, or an admin).
CREATE TABLE hidden_posts (
    post_id   INTEGER PRIMARY KEY,
    hidden_at INTEGER NOT NULL
);

-- The order of ranked scrolls, kept until expires_at (items: JSON).
CREATE TABLE rank_snapshots (
    id         TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL,
    items      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX rank_snapshots_user ON rank_snapshots (user_id, created_at);
CREATE INDEX rank_snapshots_expires ON rank_snapshots (expires_at);
