// Package filelock serialises the commands that change the compat file:
// record (writes it) and sweep (checks it, then deletes it). Both hold an
// exclusive flock(2) on a lock file next to the compat file for the whole
// check-and-change, and sweep deletes only the very file it checked.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PathFor returns the lock file of path: .<name>.lock in the same directory.
// It is never removed: removing a lock file lets two holders lock two files.
func PathFor(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// Lock is a held lock.
type Lock struct {
	f       *os.File
	path    string
	release sync.Once
}

// pollInterval bounds how long a waiter sleeps between attempts.
const pollInterval = 100 * time.Millisecond

// Acquire takes the exclusive lock on lockPath, creating the file (mode 0600,
// owned by the caller) if needed. It never follows a symlink, never blocks on
// a FIFO, and refuses a lock file that is not a regular file owned by the
// caller that only the caller may write. It waits at most timeout for
// another holder, and stops waiting when ctx is done.
func Acquire(ctx context.Context, lockPath string, timeout time.Duration) (*Lock, error) {
	f, err := open(lockPath)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, pollInterval) {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			l := &Lock{f: f, path: lockPath}
			l.noteHolder()
			return l, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", lockPath, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			holder := holderOf(f)
			f.Close()
			return nil, fmt.Errorf("lock %s is still held after %s%s (another kubelet-compat record, sweep or etcd-bridge?): try again later, or give --lock-timeout", lockPath, timeout, holder)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", lockPath, ctx.Err())
		case <-time.After(min(wait, left)):
		}
	}
}

func open(lockPath string) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lock file %s is a symlink: refusing it (remove it)", lockPath)
		}
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkLockFile(fi)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file %s: %v: refusing it (remove it)", lockPath, err)
	}
	return f, nil
}

func checkLockFile(fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (mode %s)", fi.Mode())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("not owned by uid %d", os.Geteuid())
	}
	if fi.Mode().Perm()&0022 != 0 {
		return fmt.Errorf("writable by group or others (mode %s)", fi.Mode().Perm())
	}
	return nil
}

// noteHolder writes the holder's PID into the lock file, for the message of
// whoever waits for it. Best effort: the flock is the lock, not the content.
func (l *Lock) noteHolder() {
	if err := l.f.Truncate(0); err == nil {
		l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

func holderOf(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err == nil && pid > 0 {
		return fmt.Sprintf(" by pid %d", pid)
	}
	return ""
}

// Release gives the lock up; releasing again does nothing.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	var err error
	l.release.Do(func() { err = l.f.Close() }) // closing the last descriptor releases the flock
	return err
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }
