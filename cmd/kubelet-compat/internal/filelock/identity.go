package filelock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Identity tells one version of a file from another: a file replaced by a
// rename has another inode; one rewritten in place another size, mtime or
// ctime.
type Identity struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime time.Time
}

// ErrChanged says the file at a path is not the one that was checked.
var ErrChanged = errors.New("the file changed since it was checked")

// Identify returns the identity of what is at path, not following a symlink.
func Identify(path string) (Identity, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Identity{}, err
	}
	return identityOf(fi), nil
}

func identityOf(fi os.FileInfo) Identity {
	st := fi.Sys().(*syscall.Stat_t)
	return Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		Mtime: time.Unix(st.Mtim.Unix()), Ctime: time.Unix(st.Ctim.Unix())}
}

func (id Identity) String() string {
	return fmt.Sprintf("inode %d:%d, %d bytes, modified %s, changed %s", id.Dev, id.Ino, id.Size,
		id.Mtime.UTC().Format(time.RFC3339Nano), id.Ctime.UTC().Format(time.RFC3339Nano))
}

// RemoveIfUnchanged removes path only if what is there now is the file that
// was identified as checked. A different file is left alone: the error wraps
// ErrChanged and says what is there. A file gone already gives an error
// satisfying os.IsNotExist. Writers that take the lock cannot change the
// file in between; this guards against those that do not.
func RemoveIfUnchanged(path string, checked Identity) error {
	now, err := Identify(path)
	if err != nil {
		return err
	}
	if now != checked {
		return fmt.Errorf("%w: checked %s; now %s", ErrChanged, checked, now)
	}
	return os.Remove(path)
}
