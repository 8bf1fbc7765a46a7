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
