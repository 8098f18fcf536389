-- PostgreSQL as feedd 0.1.0 creates it (River's tables are River's own:
-- MigrateRiver). Once released, this file is never edited: a change to
-- the schema is a new migration after it (CONTRIBUTING.md, "A migration").
-- Times are BIGINT Unix milliseconds, as in the SQLite schema: a post's
-- created_at is its inbox score, so it must round-trip at ms precision.

-- users.mode is the author's distribution mode (feed.Mode: 0 push, 1 pull,
-- 2 leaving pull). users.active_at is the last time the user used feedd
-- (written at most once per interval by Touch).
CREATE TABLE users (
    id         BIGSERIAL PRIMARY KEY,
    phone      TEXT     NOT NULL UNIQUE,
    nick_name  TEXT     NOT NULL,
    icon       TEXT     NOT NULL DEFAULT '',
    city       TEXT     NOT NULL DEFAULT '',
    introduce  TEXT     NOT NULL DEFAULT '',
    fans       INTEGER  NOT NULL DEFAULT 0,
    followee   INTEGER  NOT NULL DEFAULT 0,
    created_at BIGINT   NOT NULL,
    mode       SMALLINT NOT NULL DEFAULT 0,
    active_at  BIGINT   NOT NULL DEFAULT 0
);
-- The few authors not in push mode: PullFollowees can start from them.
CREATE INDEX users_pull ON users (id) WHERE mode <> 0;

CREATE TABLE login_codes (
    phone      TEXT    PRIMARY KEY,
    code_hash  TEXT    NOT NULL,
    sent_at    BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    tries      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sessions (
    token_hash TEXT   PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id),
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE posts (
    id         BIGSERIAL PRIMARY KEY,
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    shop_id    BIGINT  NOT NULL DEFAULT 0,
    title      TEXT    NOT NULL,
    images     TEXT    NOT NULL DEFAULT '',
    content    TEXT    NOT NULL,
    liked      INTEGER NOT NULL DEFAULT 0,
    comments   INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    -- Who may comment: 0 everyone, 1 the people the author follows, 2
    -- nobody but its author (feed.CommentPolicy).
    comment_policy SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX posts_user ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_hot ON posts (liked DESC, created_at DESC, id DESC);

-- id orders likes earliest first (Likers). author_id is the liked post's
-- author (posts never change authors), written with the like (SetLike,
-- ToggleLike: the author likablePost read), and likes_user covers a
-- viewer's likes with their times and authors: the ranked timeline's
-- affinity of a viewer (their likes since a time, by author) is one
-- index-only range, with no join of posts per like (BENCHMARKS.md "Ranked
-- timeline"). The index also answers "has the viewer liked post p".
CREATE TABLE likes (
    id         BIGSERIAL PRIMARY KEY,
    post_id    BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    author_id  BIGINT NOT NULL,
    UNIQUE (post_id, user_id)
);
CREATE INDEX likes_user ON likes (user_id, post_id) INCLUDE (created_at, author_id);

-- follows.pull is true when the followee is not in push mode (users.mode <>
-- 0), kept in step by SetFollow (a new follow copies the followee's mode,
-- read under the lock of lockPair) and SetMode (which rewrites the flag of
-- every follow of the author in the same transaction, after locking the
-- author's row). follows_pull holds only those follows, so PullFollowees,
-- which every feed page asks first, is one probe of an index that is empty
-- for a viewer who follows nobody in pull mode, whatever the number of
-- their follows.
CREATE TABLE follows (
    follower_id BIGINT  NOT NULL,
    followee_id BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    pull        BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (follower_id, followee_id)
);
-- The fan-out audience scan: followers of one user by id (FollowersAfter).
CREATE INDEX follows_followee ON follows (followee_id, follower_id);
CREATE INDEX follows_pull ON follows (follower_id, followee_id) WHERE pull;

-- One row per inbox entry: the inbox used when feedd runs without Redis. The
-- primary key is the feed order of one user's inbox, so a page is one index
-- range scan (read backwards).
CREATE TABLE inbox (
    user_id BIGINT NOT NULL,
    score   BIGINT NOT NULL,
    post_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
);

-- The room each inbox has left: how many more entries it may receive before
-- it could hold more than the cap and its slack. Inbox.Deliver and Inbox.Add
-- count it down and trim the inboxes left without room (room < 0) exactly to
-- the cap (see postgres/inbox.go). A user with no row has an empty inbox.
-- Each delivery updates a row: room on every page keeps the updates HOT.
CREATE TABLE inbox_trim (
    user_id BIGINT  PRIMARY KEY,
    room    INTEGER NOT NULL
) WITH (fillfactor = 50);

-- user_id mutes muted_id: muted_id's posts stay out of user_id's feed.
CREATE TABLE mutes (
    user_id    BIGINT NOT NULL,
    muted_id   BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, muted_id)
);

-- user_id blocks blocked_id: no follow either way while it stands. Both
-- directions are checked with primary-key lookups, so no reverse index (nor
-- one on mutes) is needed by any query.
CREATE TABLE blocks (
    user_id    BIGINT NOT NULL,
    blocked_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, blocked_id)
);

-- Fixed-window counters of the abuse limits (feed.RateStore): one row per
-- key, holding the count of the window that ends at window_end.
CREATE TABLE rate_counts (
    key        TEXT    PRIMARY KEY,
    window_end BIGINT  NOT NULL,
    n          BIGINT  NOT NULL
);
CREATE INDEX rate_counts_window_end ON rate_counts (window_end);

-- One row the readiness probe (GET /readyz) rewrites: proof that the
-- database takes a write.
CREATE TABLE ready_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at BIGINT  NOT NULL
);

-- user_id hides the posts whose title or content holds word (folded by
-- feed.NormalizeWord) from their feeds.
CREATE TABLE muted_words (
    user_id    BIGINT  NOT NULL,
    word       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (user_id, word)
);

-- One report per reporter and post. When an admin restores the post its
-- reports are kept, marked dismissed: a dismissed report no longer counts
-- toward hiding the post, also when its reporter reports the post again
-- (feed.FilterStore.Report).
CREATE TABLE reports (
    post_id     BIGINT  NOT NULL,
    reporter_id BIGINT  NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    dismissed   BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (post_id, reporter_id)
);

-- Posts hidden by moderation (reports over the threshold, or an admin).
CREATE TABLE hidden_posts (
    post_id   BIGINT PRIMARY KEY,
    hidden_at BIGINT NOT NULL
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

-- Comments (comment.go): two-level threads under posts, the tutorial's
-- tb_blog_comments with its columns (parent_id: the thread's top-level
-- comment, 0 for one; answer_id: the comment answered; status 0 normal,
-- 1 reported, 2 hidden by moderation) and feedd's: replies (a thread's
-- replies not deleted), author_hidden (the post's author hid it), deleted
-- (a placeholder kept for its replies). An id given on insert (an import)
-- is kept; the store moves the sequence past it.
CREATE TABLE comments (
    id            BIGSERIAL PRIMARY KEY,
    post_id       BIGINT   NOT NULL,
    user_id       BIGINT   NOT NULL,
    parent_id     BIGINT   NOT NULL DEFAULT 0,
    answer_id     BIGINT   NOT NULL DEFAULT 0,
    content       TEXT     NOT NULL,
    liked         INTEGER  NOT NULL DEFAULT 0,
    replies       INTEGER  NOT NULL DEFAULT 0,
    status        SMALLINT NOT NULL DEFAULT 0,
    author_hidden BOOLEAN  NOT NULL DEFAULT false,
    deleted       BOOLEAN  NOT NULL DEFAULT false,
    created_at    BIGINT   NOT NULL,
    updated_at    BIGINT   NOT NULL
);
-- A post's top-level comments newest first (parent_id 0), and all of a
-- post's comments (a deleted post's purge).
CREATE INDEX comments_post ON comments (post_id, parent_id, created_at, id);
-- A post's top-level comments by likes, then newest first.
CREATE INDEX comments_top ON comments (post_id, liked, created_at, id) WHERE parent_id = 0;
-- A thread's replies, oldest first.
CREATE INDEX comments_thread ON comments (parent_id, created_at, id) WHERE parent_id <> 0;
-- A user's comments by time (the ranked timeline's signal).
CREATE INDEX comments_user ON comments (user_id, created_at, post_id);
-- The moderation list: comments reported or hidden.
CREATE INDEX comments_status ON comments (id) WHERE status <> 0;

CREATE TABLE comment_likes (
    comment_id BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (comment_id, user_id)
);

-- One report per reporter and comment; dismissed by a restore.
CREATE TABLE comment_reports (
    comment_id  BIGINT  NOT NULL,
    reporter_id BIGINT  NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    dismissed   BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (comment_id, reporter_id)
);

-- Where an import from another service stands (feedd import; docs/operations.md,
-- "Moving from hmdp"): one row per source and phase, a phase being one of
-- the source's tables (last_key: the key of the last source row done) or a
-- step run after them (inboxes). A batch of rows and its row here are
-- written in one transaction, so a re-run resumes after the last batch
-- committed and never writes a row twice. counts is JSON: rows read,
-- imported, and skipped and cleaned by reason.
CREATE TABLE import_progress (
    source     TEXT    NOT NULL,
    phase      TEXT    NOT NULL,
    last_key   BIGINT  NOT NULL DEFAULT 0,
    done       BOOLEAN NOT NULL DEFAULT false,
    counts     JSONB   NOT NULL DEFAULT '{}',
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (source, phase)
);

-- Grouped notifications (notify.go). A group is one kind of event on one
-- target (the post for likes and moderation, 0 for follows) of one user,
-- open while its first event is within the group window. Its count of
-- distinct actors is kept with the actor rows in one transaction; the
-- newest actors are read by index, so neither a like nor a page read
-- depends on the group's size. latest_at only moves forward.
-- An actor's repeat of an event within the renotify window counts once
-- (notifyAdd): a retraction (unlike, unfollow, a block or mute) marks
-- the actor's row retracted instead of deleting it, and a dismissal
-- marks its group dismissed, so that the actor's next event on the
-- target finds what it was told before. Neither is shown: a group's
-- count is of its actors not retracted, and a dismissed group has count 0.
CREATE TABLE notify_groups (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id   BIGINT  NOT NULL,
    kind      TEXT    NOT NULL,
    target_id BIGINT  NOT NULL,
    first_at  BIGINT  NOT NULL,
    latest_at BIGINT  NOT NULL,
    count     INTEGER NOT NULL,
    action    TEXT    NOT NULL DEFAULT '',
    dismissed BOOLEAN NOT NULL DEFAULT false
);
-- The open group of a target: the newest first_at of (user, kind, target).
CREATE INDEX notify_groups_target ON notify_groups (user_id, kind, target_id, first_at);
-- A user's page, by latest activity.
CREATE INDEX notify_groups_latest ON notify_groups (user_id, latest_at, id);

CREATE TABLE notify_actors (
    group_id BIGINT NOT NULL REFERENCES notify_groups (id) ON DELETE CASCADE,
    actor_id BIGINT NOT NULL,
    at       BIGINT NOT NULL,
    retracted BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (group_id, actor_id)
);
-- A group's newest actors, of those not retracted.
CREATE INDEX notify_actors_newest ON notify_actors (group_id, at, actor_id) WHERE NOT retracted;
-- No index by actor: a block or a mute finds the actor's rows through
-- the user's groups (at most the groups kept) and the primary key.

-- Each user's read marker: groups whose latest_at is not after it are read.
CREATE TABLE notify_read (
    user_id BIGINT PRIMARY KEY,
    read_at BIGINT NOT NULL
);
