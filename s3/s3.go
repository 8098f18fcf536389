// Package s3 is the production image store (feed.BlobStore): objects in
// a bucket of any S3-compatible object store, through minio-go. Every
// process of a deployment reads and writes the same bucket, so any API
// process serves any image whichever process stored it.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	feed "github.com/feedd/feedd"
)

// Store keeps objects in Bucket, each key under Prefix.
type Store struct {
	Client *minio.Client
	Bucket string
	Prefix string
}

var _ feed.BlobStore = (*Store)(nil)

// Config names the bucket and its credentials.
type Config struct {
	// URL is http(s)://HOST[:PORT]/BUCKET[/PREFIX][?region=REGION]: the
	// object store's endpoint, the bucket (addressed by path) and an
	// optional key prefix.
	URL       string
	AccessKey string
	SecretKey string
}

// ParseURL splits a store URL into endpoint, TLS, bucket, key prefix and
// region.
func ParseURL(raw string) (endpoint string, secure bool, bucket, prefix, region string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, "", "", "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false, "", "", "", errors.New("the URL must be http:// or https://")
	}
	if u.User != nil {
		return "", false, "", "", "", errors.New("the URL must not hold credentials: give them by environment or file")
	}
	path := strings.Trim(u.Path, "/")
	bucket, prefix, _ = strings.Cut(path, "/")
	if u.Host == "" || bucket == "" {
		return "", false, "", "", "", errors.New("the URL must name a host and a bucket: http(s)://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, u.Scheme == "https", bucket, prefix, u.Query().Get("region"), nil
}

// Open returns a Store on the bucket of c, creating the bucket if it does
// not exist.
func Open(ctx context.Context, c Config) (*Store, error) {
	endpoint, secure, bucket, prefix, region, err := ParseURL(c.URL)
	if err != nil {
		return nil, err
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: secure, Region: region, BucketLookup: minio.BucketLookupPath,
		// An unreachable store answers the upload 503 within seconds
		// rather than after minio's ten tries.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, err
	}
	s := &Store{Client: client, Bucket: bucket, Prefix: prefix}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if !ok {
		if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucket, err)
		}
	}
	return s, nil
}

// Ready reports whether the bucket answers (GET /readyz).
func (s *Store) Ready(ctx context.Context) error {
	_, err := s.Client.BucketExists(ctx, s.Bucket)
	return err
}

// Put implements feed.BlobStore.
func (s *Store) Put(ctx context.Context, key, contentType string, body []byte) error {
	_, err := s.Client.PutObject(ctx, s.Bucket, s.Prefix+key, bytes.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: contentType, CacheControl: "public, max-age=31536000, immutable"})
	if err != nil {
		return feed.MediaStoreDown(err)
	}
	return nil
}

// Open implements feed.BlobStore: the object is read as it is served,
// with a Range request to the store for each range a client asks.
func (s *Store) Open(ctx context.Context, key string) (feed.Object, error) {
	o, err := s.Client.GetObject(ctx, s.Bucket, s.Prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return feed.Object{}, feed.MediaStoreDown(err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		if r := minio.ToErrorResponse(err); r.Code == "NoSuchKey" || r.StatusCode == 404 {
			return feed.Object{}, feed.ErrNotFound("image")
		}
		return feed.Object{}, feed.MediaStoreDown(err)
	}
	return feed.Object{ReadSeekCloser: o, Size: st.Size, Modified: st.LastModified}, nil
}

// Delete implements feed.BlobStore.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	ch := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		ch <- minio.ObjectInfo{Key: s.Prefix + k}
	}
	close(ch)
	var errs []error
	for e := range s.Client.RemoveObjects(ctx, s.Bucket, ch, minio.RemoveObjectsOptions{}) {
		if r := minio.ToErrorResponse(e.Err); r.Code != "NoSuchKey" {
			errs = append(errs, e.Err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return feed.MediaStoreDown(err)
	}
	return nil
}
