-- The inbox head (applied to feedd.db and inbox.db both: sqlite/db.go,
-- inboxSchema): each inbox's newest entries, also packed in one blob (see
-- sqlite/inboxhead.go). inbox_trim's head_score, head_post are the head's
-- top T (head_score NULL: the head is to be built again; head_post NULL
-- too: it never was); the entries above T are
-- rows only. 200 is headMax, 201 headMax + 1, 32 headRefresh and 8
-- headBuild.
ALTER TABLE inbox_trim ADD COLUMN head_score INTEGER;
ALTER TABLE inbox_trim ADD COLUMN head_post INTEGER;

CREATE TABLE inbox_head (
    user_id INTEGER PRIMARY KEY,
    head    BLOB NOT NULL
);

-- When the room changes (a delivery, a backfill, a trim): every 32
-- deliveries the entries above T join the head (or it is built again when
-- that leaves it short: feedd_head_join); with T cleared (a late delivery,
-- a backfill, a trim) the head is built again at once; a new inbox (T
-- never set) gets its head within 8 deliveries, pages reading the rows
-- until then, so that a fan-out into new inboxes does not build a head per
-- delivery.
CREATE TRIGGER inbox_head_keep AFTER UPDATE OF room ON inbox_trim
WHEN new.room % 32 = 0 OR (new.head_score IS NULL AND (new.head_post IS NOT NULL OR new.room % 8 = 0))
BEGIN
    INSERT INTO inbox_head (user_id, head) VALUES (new.user_id, coalesce(
        CASE WHEN new.head_score IS NOT NULL THEN feedd_head_join(
            (SELECT feedd_head(score, post_id, 200) FROM (SELECT score, post_id FROM inbox
                WHERE user_id = new.user_id AND (score, post_id) > (new.head_score, new.head_post)
                ORDER BY score DESC, post_id DESC LIMIT 201)),
            (SELECT head FROM inbox_head WHERE user_id = new.user_id), 200) END,
        (SELECT feedd_head(score, post_id, 200) FROM (SELECT score, post_id FROM inbox
            WHERE user_id = new.user_id ORDER BY score DESC, post_id DESC LIMIT 201))))
        ON CONFLICT (user_id) DO UPDATE SET head = excluded.head;
    UPDATE inbox_trim SET (head_score, head_post) = (SELECT feedd_head_top(head, 0), feedd_head_top(head, 1)
        FROM inbox_head WHERE user_id = new.user_id) WHERE user_id = new.user_id;
END;
