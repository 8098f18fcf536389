-- Fixed-window counters of the abuse limits (feed.RateStore): one row per
-- key, holding the count of the window that ends at window_end (Unix ms).
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
