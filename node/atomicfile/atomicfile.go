// Package atomicfile writes files that appear complete or not at all: the
// data goes to a temporary file in the same directory, is synced, and is
// then renamed (Write) or hard-linked (Create) into place, and the
// directory is synced, so a crash leaves the old file or the new one,
// never a torn one.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm, replacing any file
// there.
func Write(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Rename)
}

// Create writes data to path with permissions perm, failing with an error
// that wraps fs.ErrExist if path exists.
func Create(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Link)
}

// write writes data to a temporary file beside path and places it at path
// with place (os.Rename or os.Link).
func write(path string, data []byte, perm fs.FileMode, place func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		// Gone after a rename; left after a link or a failure. A link in
		// place is the file written even if the name is not removed.
		if rmErr := os.Remove(tmp); err != nil && rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return errors.Join(err, f.Close())
	}
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := place(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
