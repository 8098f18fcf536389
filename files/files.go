// Package files is the embedded default's image store (feed.BlobStore):
// one file per object under a directory, --media-dir, at the object's key
// (d/ab/<key>.jpg, p/ab/<key>.jpg). Like the rest of --data, the
// directories are private to feedd's user (0700) and the files 0600,
// whatever the umask.
package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	feed "github.com/feedd/feedd"
)

// Store keeps objects as files under Dir.
type Store struct {
	Dir string
}

var _ feed.BlobStore = (*Store)(nil)

// Open returns a Store on dir, creating it if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{Dir: dir}, nil
}

// path returns the file of key, refusing a key that would leave Dir.
func (s *Store) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") || filepath.Clean(key) != key || strings.HasPrefix(key, "..") {
		return "", feed.Errorf(feed.EINVALID, "bad object key %q", key)
	}
	return filepath.Join(s.Dir, filepath.FromSlash(key)), nil
}

// Put implements feed.BlobStore: the file is written whole under another
// name, synced and renamed into place, so a reader never sees half of it.
func (s *Store) Put(ctx context.Context, key, contentType string, body []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := mkdirs(s.Dir, filepath.Dir(p)); err != nil {
		return feed.MediaStoreDown(err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return feed.MediaStoreDown(err)
	}
	_, err = f.Write(body)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return feed.MediaStoreDown(err)
	}
	return nil
}

// Open implements feed.BlobStore.
func (s *Store) Open(ctx context.Context, key string) (feed.Object, error) {
	p, err := s.path(key)
	if err != nil {
		return feed.Object{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return feed.Object{}, feed.ErrNotFound("image")
	} else if err != nil {
		return feed.Object{}, feed.MediaStoreDown(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return feed.Object{}, feed.MediaStoreDown(err)
	}
	return feed.Object{ReadSeekCloser: f, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Delete implements feed.BlobStore.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		p, err := s.path(k)
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return feed.MediaStoreDown(err)
		}
	}
	return nil
}

// mkdirs makes dir and its parents under root, each 0700 whatever the
// umask.
func mkdirs(root, dir string) error {
	if dir == root || len(dir) <= len(root) {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := mkdirs(root, filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o700)
}
