// Package regularfile reads files that must be regular files, without ever
// blocking: the file is opened non-blocking (optionally without following a
// final symlink) and the opened descriptor is checked, so a FIFO or device
// swapped in after any earlier check is refused instead of stalling the
// reader.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// NotRegularError is returned for anything but a regular file.
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (mode %s)", e.Path, e.Mode)
}

// Read returns at most limit+1 bytes of the regular file at path, so that a
// caller can tell a file larger than limit. With noFollow a symlink is
// refused (as a NotRegularError with os.ModeSymlink) rather than followed.
func Read(path string, limit int64, noFollow bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if noFollow && errors.Is(err, syscall.ELOOP) {
		return nil, &NotRegularError{Path: path, Mode: os.ModeSymlink}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}
