-- Reports are kept when an admin restores their post, marked dismissed: a
-- dismissed report no longer counts toward hiding the post, also when its
-- reporter reports the post again (feed.FilterStore.Report).
ALTER TABLE reports ADD COLUMN dismissed INTEGER NOT NULL DEFAULT 0;
