//go:build linux
// +build linux

package kubeletcompat

import (
	"os"
	"syscall"
)

func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// changeStamp identifies a version of the file on disk: the cache reloads
// when one of these moves (a rename, a rewrite, a chmod or chown).
func changeStamp(fi os.FileInfo) [4]int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [4]int64{fi.ModTime().UnixNano(), fi.Size()}
	}
	return [4]int64{fi.ModTime().UnixNano(), fi.Size(), int64(st.Ino), st.Ctim.Nano()}
}

// openFile opens path for reading without following a symbolic link and
// without blocking (a FIFO or a device opens at once; the caller's fstat
// then refuses it).
func openFile(path string) (*os.File, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ELOOP {
		return nil, problemf("%s is a symbolic link, not a regular file", path)
	}
	return fh, err
}
