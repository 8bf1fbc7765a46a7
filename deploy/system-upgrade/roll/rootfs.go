package roll

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RootFS is Files on a directory that holds the node's root (the Job's
// $KC_HOST; a test's temporary directory).
type RootFS struct {
	Root string
	// NoSync skips fsync (a test's files, which no crash of the machine
	// can lose).
	NoSync bool
}

// Path is name under the root.
func (r RootFS) Path(name string) string { return filepath.Join(r.Root, filepath.FromSlash(name)) }

func (r RootFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(r.Path(name)) }
func (r RootFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(r.Path(name)) }
func (r RootFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(r.Path(name)) }
func (r RootFS) MkdirAll(name string) error                 { return os.MkdirAll(r.Path(name), 0o755) }
func (r RootFS) Rename(from, to string) error               { return os.Rename(r.Path(from), r.Path(to)) }
func (r RootFS) RemoveAll(name string) error                { return os.RemoveAll(r.Path(name)) }

func (r RootFS) Create(name string, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(r.Path(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil || !r.NoSync {
		return f, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ *os.File }

func (noSyncFile) Sync() error { return nil }

func (r RootFS) Remove(name string) error {
	if err := os.Remove(r.Path(name)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func (r RootFS) Chtimes(name string, mtime time.Time) error {
	return os.Chtimes(r.Path(name), mtime, mtime)
}

func (r RootFS) SyncDir(name string) error {
	if r.NoSync {
		return nil
	}
	d, err := os.Open(r.Path(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
