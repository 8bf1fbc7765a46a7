// Package atomicfile writes the generators' files whole: to a temporary
// file next to the target, then a rename, so a failure leaves the old file.
package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
)

// Write replaces path with data (mode 0644) through a rename.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteIfChanged is Write when path does not hold data already; it reports
// whether it wrote.
func WriteIfChanged(path string, data []byte) (bool, error) {
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, data) {
		return false, nil
	}
	return true, Write(path, data)
}
