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

-- Who may comment on a post: 0 everyone, 1 the people its author follows,
-- 2 nobody but its author (feed.CommentPolicy). A constant default: the
-- table is not rewritten.
ALTER TABLE posts ADD COLUMN comment_policy SMALLINT NOT NULL DEFAULT 0;
