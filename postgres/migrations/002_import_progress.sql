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
