package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/feedtest"
	"github.com/feedd/feedd/sqlite"
)

// openInbox opens the inbox database of a fresh data directory.
func openInbox(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.OpenInbox(t.Context(), t.TempDir(), sqlite.Options{}, nil)
	if err != nil {
		t.Fatalf("open inbox: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The inbox conformance suite on inbox.db, the file feedd keeps inboxes in.
func TestInboxFile(t *testing.T) {
	feedtest.TestInbox(t, func(t *testing.T, cap int) feed.Inbox { return &sqlite.Inbox{DB: openInbox(t), Cap: cap} }, feed.InboxSlack)
}

// page reads user's whole inbox, newest first.
func page(t *testing.T, ib feed.Inbox, user int64) []feed.Entry {
	t.Helper()
	es, err := ib.Page(t.Context(), user, feed.Top(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// inbox.db belongs to one feedd.db. Lost, or beside a feedd.db restored
// from a backup without it, it is emptied and every user marked inactive
// (their inboxes are regenerated at their next visit); paired again, it is
// kept as is.
func TestOpenInboxPairs(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	main, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()
	u, err := main.FindOrCreateUser(ctx, "13800000001", "a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := main.Touch(ctx, u.ID, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	e := feed.Entry{PostID: 7, Score: 1000}
	// open opens inbox.db, delivers e to u if deliver, and reports whether
	// it was regenerated, whether u's inbox holds e and whether u is marked
	// inactive.
	open := func(what string, deliver bool) (regenerated, holds, inactive bool) {
		t.Helper()
		idb, err := sqlite.OpenInbox(ctx, dir, sqlite.Options{}, main)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer idb.Close()
		ib := &sqlite.Inbox{DB: idb}
		if deliver {
			if err := ib.Deliver(ctx, e, []int64{u.ID}); err != nil {
				t.Fatal(err)
			}
		}
		prev, err := main.Touch(ctx, u.ID, time.Now(), time.Hour) // reads active_at; a stale one is set to now
		if err != nil {
			t.Fatal(err)
		}
		return idb.Regenerated, len(page(t, ib, u.ID)) == 1, prev.UnixMilli() == 0
	}
	if r, _, in := open("first start", true); r || in {
		t.Errorf("first start: regenerated %v, user inactive %v; want neither", r, in)
	}
	if r, h, in := open("second start", false); r || !h || in {
		t.Errorf("second start: regenerated %v, holds %v, inactive %v; want false, true, false", r, h, in)
	}
	// inbox.db lost.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(dir, sqlite.InboxFile+suffix))
	}
	if r, h, in := open("inbox.db lost", true); !r || h != true || !in {
		t.Errorf("inbox.db lost: regenerated %v, holds %v (delivered after), inactive %v; want true, true, true", r, h, in)
	}
	// The inbox.db of another feedd.db (a feedd.db restored without its own).
	other := t.TempDir()
	odb, err := sqlite.Open(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	oib, err := sqlite.OpenInbox(ctx, other, sqlite.Options{}, odb)
	if err != nil {
		t.Fatal(err)
	}
	oib.Close()
	odb.Close()
	idb, err := sqlite.OpenInbox(ctx, dir, sqlite.Options{}, main) // make sure dir's inbox.db is checkpointed and closed
	if err != nil {
		t.Fatal(err)
	}
	idb.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(dir, sqlite.InboxFile+suffix))
		if b, err := os.ReadFile(filepath.Join(other, sqlite.InboxFile+suffix)); err == nil {
			os.WriteFile(filepath.Join(dir, sqlite.InboxFile+suffix), b, 0o600)
		}
	}
	if r, h, in := open("another feedd.db's inbox.db", false); !r || h || !in {
		t.Errorf("another feedd.db's inbox.db: regenerated %v, holds %v, inactive %v; want true, false, true", r, h, in)
	}
	if r, _, in := open("paired again", false); r || in {
		t.Errorf("paired again: regenerated %v, inactive %v; want neither", r, in)
	}
	fi, err := os.Stat(filepath.Join(dir, sqlite.InboxFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode %v, want 0600", sqlite.InboxFile, fi.Mode().Perm())
	}
}
