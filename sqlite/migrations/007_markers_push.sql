-- Markers: where each user stopped reading a timeline (feed.Marker).
-- timeline is 'timeline' (last_read_id a post) or 'notifications' (a
-- notification group); score is the item's position then, so the marker
-- keeps its place when the item is gone.
CREATE TABLE markers (
    user_id      INTEGER NOT NULL,
    timeline     TEXT    NOT NULL,
    last_read_id INTEGER NOT NULL,
    score        INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, timeline)
) WITHOUT ROWID;

-- Web Push subscriptions (feed.PushSubscription): one per browser
-- endpoint; alerts_off lists the notification kinds not pushed, comma
-- separated, so that kinds added later are pushed.
CREATE TABLE push_subscriptions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL,
    endpoint   TEXT    NOT NULL UNIQUE,
    p256dh     TEXT    NOT NULL,
    auth       TEXT    NOT NULL,
    alerts_off TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id, id);

-- The server's VAPID key pair (RFC 8292), made once: every push is signed
-- with it, and browsers subscribed with its public key.
CREATE TABLE vapid_keys (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    private_key TEXT    NOT NULL,
    public_key  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
