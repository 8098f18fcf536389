package feed

import (
	"bytes"
	"container/list"
	"context"
	"io"
	"sync"
	"time"
)

// BlobCache keeps the small objects of a BlobStore in memory (previews,
// mostly), so that serving one costs no file or S3 request: objects are
// named by their content and never change (docs/operations.md, "Images").
// It holds at most its byte budget, dropping the least recently read
// object first, and reads an object from the store again once it is older
// than its TTL: an object another process deleted is served from here for
// at most that long (its answers are cacheable for a year anyway). A
// Delete through the cache drops the objects at once.
type BlobCache struct {
	BlobStore
	maxBytes int64
	now      func() time.Time

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *cachedBlob, most recently read first
	byKey map[string]*list.Element
}

type cachedBlob struct {
	key      string
	body     []byte
	modified time.Time
	fetched  time.Time
}

// Defaults of NewBlobCache's limits (--media-cache).
const (
	DefaultBlobCacheBytes = 64 << 20
	BlobCacheMaxObject    = 64 << 10
	BlobCacheTTL          = time.Minute
)

// NewBlobCache caches the objects of store of at most BlobCacheMaxObject
// bytes, maxBytes of them in all, each for BlobCacheTTL at most.
func NewBlobCache(store BlobStore, maxBytes int64, now func() time.Time) *BlobCache {
	if now == nil {
		now = time.Now
	}
	return &BlobCache{BlobStore: store, maxBytes: maxBytes, now: now, lru: list.New(), byKey: map[string]*list.Element{}}
}

// Open implements BlobStore: from memory when the object is cached and
// younger than the TTL, else from the store (then cached, if small).
func (c *BlobCache) Open(ctx context.Context, key string) (Object, error) {
	if b := c.get(key); b != nil {
		return b.object(), nil
	}
	o, err := c.BlobStore.Open(ctx, key)
	if err != nil || o.Size > BlobCacheMaxObject || o.Size > c.maxBytes {
		return o, err
	}
	body := make([]byte, o.Size)
	_, err = io.ReadFull(o, body)
	o.Close()
	if err != nil {
		return Object{}, MediaStoreDown(err)
	}
	b := &cachedBlob{key: key, body: body, modified: o.Modified, fetched: c.now()}
	c.put(b)
	return b.object(), nil
}

// Delete implements BlobStore, dropping keys from the cache first.
func (c *BlobCache) Delete(ctx context.Context, keys ...string) error {
	c.mu.Lock()
	for _, k := range keys {
		if e := c.byKey[k]; e != nil {
			c.remove(e)
		}
	}
	c.mu.Unlock()
	return c.BlobStore.Delete(ctx, keys...)
}

func (c *BlobCache) get(key string) *cachedBlob {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[key]
	if e == nil {
		return nil
	}
	b := e.Value.(*cachedBlob)
	if c.now().Sub(b.fetched) >= BlobCacheTTL {
		c.remove(e)
		return nil
	}
	c.lru.MoveToFront(e)
	return b
}

func (c *BlobCache) put(b *cachedBlob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[b.key]; e != nil {
		c.remove(e)
	}
	c.byKey[b.key] = c.lru.PushFront(b)
	c.bytes += int64(len(b.body))
	for c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

// remove drops e; c.mu is held.
func (c *BlobCache) remove(e *list.Element) {
	b := c.lru.Remove(e).(*cachedBlob)
	delete(c.byKey, b.key)
	c.bytes -= int64(len(b.body))
}

// Bytes reports how many bytes of objects the cache holds.
func (c *BlobCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (b *cachedBlob) object() Object {
	return Object{ReadSeekCloser: nopCloser{bytes.NewReader(b.body)}, Size: int64(len(b.body)), Modified: b.modified}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
