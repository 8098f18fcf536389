-- Photos on posts (media.go). A blob is the stored renditions of one
-- image, shared by identical uploads (source_hash, the SHA-256 of the
-- uploaded bytes); its objects are named by object_key, random and never
-- reused. A blob is pending (ready = 0) while its objects are written.
CREATE TABLE media_blobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    object_key   TEXT    NOT NULL UNIQUE,
    source_hash  TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    width        INTEGER NOT NULL,
    height       INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    blurhash     TEXT    NOT NULL,
    ready        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);
CREATE INDEX media_blobs_source ON media_blobs (source_hash) WHERE ready = 1;
CREATE INDEX media_blobs_pending ON media_blobs (created_at) WHERE ready = 0;

-- One upload of one user, named by the tutorial's path (name, served at
-- /imgs + name). post_id is the post that shows it, at position; while
-- none does, unused_since is when it stopped being shown (or its upload),
-- and the sweep deletes it --media-orphan-ttl later. A user is not
-- deleted before their media (no cascade): erasing an account deletes
-- them first, so their blobs are released too.
CREATE TABLE media (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users (id),
    blob_id      INTEGER NOT NULL REFERENCES media_blobs (id),
    name         TEXT    NOT NULL UNIQUE,
    alt          TEXT    NOT NULL DEFAULT '',
    post_id      INTEGER REFERENCES posts (id) ON DELETE SET NULL,
    position     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    unused_since INTEGER NOT NULL
);
CREATE INDEX media_post ON media (post_id, position);
CREATE INDEX media_unused ON media (unused_since) WHERE post_id IS NULL;
CREATE INDEX media_user ON media (user_id);
CREATE INDEX media_blob ON media (blob_id);

-- Objects of removed blobs still to delete from the object store.
CREATE TABLE media_trash (
    object_key TEXT PRIMARY KEY
);
