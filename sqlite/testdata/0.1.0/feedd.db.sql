-- feedd.db as feedd 0.1.0 creates it. Once released, this file is never
-- edited: a change to the schema is a new migration after it
-- (CONTRIBUTING.md, "A migration").
-- Times are INTEGER Unix milliseconds.

-- users.mode is the author's distribution mode (feed.Mode: 0 push, 1 pull,
-- 2 leaving pull). users.active_at is the last time the user used feedd
-- (written at most once per interval by Touch).
CREATE TABLE users (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    phone      TEXT    NOT NULL UNIQUE,
    nick_name  TEXT    NOT NULL,
    icon       TEXT    NOT NULL DEFAULT '',
    city       TEXT    NOT NULL DEFAULT '',
    introduce  TEXT    NOT NULL DEFAULT '',
    fans       INTEGER NOT NULL DEFAULT 0,
    followee   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    mode       INTEGER NOT NULL DEFAULT 0,
    active_at  INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE login_codes (
    phone      TEXT    PRIMARY KEY,
    code_hash  TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    tries      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE sessions (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE posts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    shop_id    INTEGER NOT NULL DEFAULT 0,
    title      TEXT    NOT NULL,
    images     TEXT    NOT NULL DEFAULT '',
    content    TEXT    NOT NULL,
    liked      INTEGER NOT NULL DEFAULT 0,
    comments   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    -- Who may comment: 0 everyone, 1 the people the author follows, 2
    -- nobody but its author (feed.CommentPolicy).
    comment_policy INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX posts_user ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_hot ON posts (liked DESC, created_at DESC, id DESC);

-- likes.author_id is the liked post's author (posts never change authors),
-- written with the like, and likes_user covers a viewer's likes with their
-- times and authors: the ranked timeline's affinity of a viewer (their
-- likes since a time, by author) is one range of this index, with no
-- lookup of the likes table or of posts per like (BENCHMARKS.md "Ranked
-- timeline"). The index also answers "has the viewer liked post p".
CREATE TABLE likes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id    INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    author_id  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (post_id, user_id)
);
CREATE INDEX likes_user ON likes (user_id, post_id, created_at, author_id);

-- follows.pull is 1 when the followee is not in push mode (users.mode <>
-- 0), kept in step by SetFollow (a new follow copies the followee's mode)
-- and SetMode (which rewrites the flag of every follow of the author, in
-- the same transaction). follows_pull holds only those follows, so
-- PullFollowees, which every feed page asks first, is one probe of an
-- index that is empty for a viewer who follows nobody in pull mode,
-- whatever the number of their follows.
CREATE TABLE follows (
    follower_id INTEGER NOT NULL,
    followee_id INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    pull        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (follower_id, followee_id)
) WITHOUT ROWID;
CREATE INDEX follows_followee ON follows (followee_id, follower_id);
CREATE INDEX follows_pull ON follows (follower_id, followee_id) WHERE pull <> 0;

-- user_id mutes muted_id: muted_id's posts stay out of user_id's feed.
CREATE TABLE mutes (
    user_id    INTEGER NOT NULL,
    muted_id   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, muted_id)
) WITHOUT ROWID;

-- user_id blocks blocked_id: no follow either way while it stands. Both
-- directions are checked with primary-key lookups, so no reverse index (nor
-- one on mutes) is needed by any query.
CREATE TABLE blocks (
    user_id    INTEGER NOT NULL,
    blocked_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, blocked_id)
) WITHOUT ROWID;

-- Fixed-window counters of the abuse limits (feed.RateStore): one row per
-- key, holding the count of the window that ends at window_end.
CREATE TABLE rate_counts (
    key        TEXT    PRIMARY KEY,
    window_end INTEGER NOT NULL,
    n          INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX rate_counts_window_end ON rate_counts (window_end);

-- One row the readiness probe (GET /readyz) rewrites: proof that the
-- database takes a write.
CREATE TABLE ready_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
);

-- user_id hides the posts whose title or content holds word (folded by
-- feed.NormalizeWord) from their feeds.
CREATE TABLE muted_words (
    user_id    INTEGER NOT NULL,
    word       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, word)
) WITHOUT ROWID;

-- One report per reporter and post. When an admin restores the post its
-- reports are kept, marked dismissed: a dismissed report no longer counts
-- toward hiding the post, also when its reporter reports the post again
-- (feed.FilterStore.Report).
CREATE TABLE reports (
    post_id     INTEGER NOT NULL,
    reporter_id INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    dismissed   INTEGER NOT NULL DEFAULT 0,
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

-- Comments (comment.go): two-level threads under posts, the tutorial's
-- tb_blog_comments with its columns (parent_id: the thread's top-level
-- comment, 0 for one; answer_id: the comment answered; status 0 normal,
-- 1 reported, 2 hidden by moderation) and feedd's: replies (a thread's
-- replies not deleted), author_hidden (the post's author hid it), deleted
-- (a placeholder kept for its replies). AUTOINCREMENT: an id given on
-- insert (an import) is kept, and later ids follow the largest.
CREATE TABLE comments (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id       INTEGER NOT NULL,
    user_id       INTEGER NOT NULL,
    parent_id     INTEGER NOT NULL DEFAULT 0,
    answer_id     INTEGER NOT NULL DEFAULT 0,
    content       TEXT    NOT NULL,
    liked         INTEGER NOT NULL DEFAULT 0,
    replies       INTEGER NOT NULL DEFAULT 0,
    status        INTEGER NOT NULL DEFAULT 0,
    author_hidden INTEGER NOT NULL DEFAULT 0,
    deleted       INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
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
    comment_id INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (comment_id, user_id)
) WITHOUT ROWID;

-- One report per reporter and comment; dismissed by a restore.
CREATE TABLE comment_reports (
    comment_id  INTEGER NOT NULL,
    reporter_id INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    dismissed   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (comment_id, reporter_id)
) WITHOUT ROWID;

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
    last_key   INTEGER NOT NULL DEFAULT 0,
    done       INTEGER NOT NULL DEFAULT 0,
    counts     TEXT    NOT NULL DEFAULT '{}',
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (source, phase)
) WITHOUT ROWID;

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
-- AUTOINCREMENT: a group's id is its key (feed.NotifyKey), never given
-- to another group, also after the group with the highest id is removed.
CREATE TABLE notify_groups (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id   INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    target_id INTEGER NOT NULL,
    first_at  INTEGER NOT NULL,
    latest_at INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    action    TEXT    NOT NULL DEFAULT '',
    dismissed INTEGER NOT NULL DEFAULT 0
);
-- The open group of a target: the newest first_at of (user, kind, target).
CREATE INDEX notify_groups_target ON notify_groups (user_id, kind, target_id, first_at);
-- A user's page, by latest activity.
CREATE INDEX notify_groups_latest ON notify_groups (user_id, latest_at, id);

CREATE TABLE notify_actors (
    group_id INTEGER NOT NULL REFERENCES notify_groups (id) ON DELETE CASCADE,
    actor_id INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    retracted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id, actor_id)
) WITHOUT ROWID;
-- A group's newest actors, of those not retracted.
CREATE INDEX notify_actors_newest ON notify_actors (group_id, at, actor_id) WHERE retracted = 0;
-- No index by actor: a block or a mute finds the actor's rows through
-- the user's groups (at most the groups kept) and the primary key.

-- Each user's read marker: groups whose latest_at is not after it are read.
CREATE TABLE notify_read (
    user_id INTEGER PRIMARY KEY,
    read_at INTEGER NOT NULL
);

-- feedd.db names the inbox.db that belongs to it (key inbox_file, the id
-- inbox.db keeps in its own inbox_meta): after a restore of feedd.db
-- alone, or with inbox.db lost, the ids differ and the inboxes are
-- regenerated (sqlite/inboxdb.go).
CREATE TABLE feedd_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The inbox tables, as in inbox.db (inbox_migrations/), where feedd keeps
-- the inboxes; the Inbox type works on either file, and tests that need
-- one file use these.
CREATE TABLE inbox (
    user_id INTEGER NOT NULL,
    score   INTEGER NOT NULL,
    post_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, score, post_id)
) WITHOUT ROWID;

CREATE TABLE inbox_trim (
    user_id INTEGER PRIMARY KEY,
    room    INTEGER NOT NULL
);
CREATE INDEX inbox_trim_due ON inbox_trim (user_id) WHERE room < 0;
