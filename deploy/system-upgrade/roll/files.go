package roll

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
)

// writeAtomic writes data to name through tmp (a file beside it, which
// nothing reads as name): written, synced, renamed over name, the
// directory synced. A roll killed at any point leaves name whole, old or
// new.
func writeAtomic(f Files, name, tmp string, data []byte, perm fs.FileMode) error {
	w, err := f.Create(tmp, perm)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := f.Rename(tmp, name); err != nil {
		return err
	}
	return f.SyncDir(path.Dir(name))
}

// put writes data to name atomically through a dot file beside it, which
// the kubelet's manifest directory ignores.
func put(f Files, name string, data []byte) error {
	return writeAtomic(f, name, dotNew(name), data, 0o644)
}

// dotNew is the dot file name is written as before its rename.
func dotNew(name string) string { return path.Join(path.Dir(name), "."+path.Base(name)+".kc-new") }

// copyFile copies from to to on the node, with its mode and modification
// time (cp -p), synced.
func copyFile(f Files, from, to string) error {
	fi, err := f.Stat(from)
	if err != nil {
		return err
	}
	data, err := f.ReadFile(from)
	if err != nil {
		return err
	}
	w, err := f.Create(to, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Chtimes(to, fi.ModTime())
}

// copyIn writes what r reads to name on the node, synced.
func copyIn(f Files, name string, r io.Reader) error {
	w, err := f.Create(name, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// isFile says whether name is a regular file (test -f).
func isFile(f Files, name string) bool {
	fi, err := f.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

// isDir says whether name is a directory (test -d).
func isDir(f Files, name string) bool {
	fi, err := f.Stat(name)
	return err == nil && fi.IsDir()
}

// exists says whether name exists (test -e).
func exists(f Files, name string) bool {
	_, err := f.Stat(name)
	return err == nil
}

// sameContent says whether two files of the node hold the same bytes (cmp -s).
func sameContent(f Files, a, b string) bool {
	da, err := f.ReadFile(a)
	if err != nil {
		return false
	}
	db, err := f.ReadFile(b)
	return err == nil && bytes.Equal(da, db)
}

// yamlFiles lists the regular *.yaml files of a directory of the node, by
// name, as the shell's glob does (no dot files).
func yamlFiles(f Files, dir string) []string {
	entries, err := f.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".yaml") || !isFile(f, path.Join(dir, n)) {
			continue
		}
		names = append(names, n)
	}
	return names
}

// notExist says whether err is a missing file's.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
