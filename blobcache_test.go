package feed_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/files"
)

// TestBlobCache runs the cache over real files: a small object is read
// from the store once, then from memory until its TTL; one deleted behind
// the cache's back is served for the TTL at most, one deleted through it
// not at all; big objects are never kept; the byte budget holds.
func TestBlobCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := files.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	c := feed.NewBlobCache(st, 3*feed.BlobCacheMaxObject, func() time.Time { return time.Unix(0, now.Load()) })

	body := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	read := func(key string) ([]byte, error) {
		t.Helper()
		o, err := c.Open(ctx, key)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		b, err := io.ReadAll(o)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != o.Size || o.Modified.IsZero() {
			t.Fatalf("%s: %d bytes read, size %d, modified %v", key, len(b), o.Size, o.Modified)
		}
		return b, nil
	}
	put := func(key string, b []byte) {
		t.Helper()
		if err := st.Put(ctx, key, "image/jpeg", b); err != nil {
			t.Fatal(err)
		}
	}
	// removeBehind deletes key's file as another process would.
	removeBehind := func(key string) {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(key))); err != nil {
			t.Fatal(err)
		}
	}

	small := body(40<<10, 'a')
	put("p/aa/small.jpg", small)
	if b, err := read("p/aa/small.jpg"); err != nil || !bytes.Equal(b, small) {
		t.Fatalf("first read: %v", err)
	}
	if c.Bytes() != int64(len(small)) {
		t.Fatalf("cache holds %d bytes, want %d", c.Bytes(), len(small))
	}
	removeBehind("p/aa/small.jpg")
	if b, err := read("p/aa/small.jpg"); err != nil || !bytes.Equal(b, small) {
		t.Fatalf("read within the TTL after a delete elsewhere: %v", err)
	}
	now.Add(int64(feed.BlobCacheTTL))
	if _, err := read("p/aa/small.jpg"); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("read past the TTL of a deleted object: %v, want ENOTFOUND", err)
	}
	if c.Bytes() != 0 {
		t.Fatalf("cache holds %d bytes after its only object expired", c.Bytes())
	}

	put("p/bb/kept.jpg", small)
	read("p/bb/kept.jpg")
	if err := c.Delete(ctx, "p/bb/kept.jpg"); err != nil {
		t.Fatal(err)
	}
	if _, err := read("p/bb/kept.jpg"); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("read after a delete through the cache: %v, want ENOTFOUND", err)
	}

	big := body(feed.BlobCacheMaxObject+1, 'b')
	put("p/cc/big.jpg", big)
	if b, err := read("p/cc/big.jpg"); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("big read: %v", err)
	}
	if c.Bytes() != 0 {
		t.Fatalf("a big object was kept: %d bytes", c.Bytes())
	}

	// Five objects of 40 KiB in a budget of 192 KiB: the four most
	// recently read stay, the least recently read goes.
	keys := []string{"p/d0/x.jpg", "p/d1/x.jpg", "p/d2/x.jpg", "p/d3/x.jpg", "p/d4/x.jpg"}
	for i, k := range keys {
		put(k, body(40<<10, byte('0'+i)))
		read(k)
		if i == 3 {
			read(keys[0]) // now the most recent: keys[1] is the oldest
		}
	}
	if c.Bytes() > 3*feed.BlobCacheMaxObject {
		t.Fatalf("cache holds %d bytes, over its budget", c.Bytes())
	}
	for _, k := range keys {
		removeBehind(k)
	}
	for i, k := range keys {
		_, err := read(k)
		if cached := err == nil; cached != (i != 1) {
			t.Errorf("%s cached %v (err %v); want every one but the least recently read", k, cached, err)
		}
	}
}
