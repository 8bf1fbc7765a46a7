// Package rootdir guards the e2e's private state directory (-root): the
// e2e removes it at the end with everything in it, so it must be a
// directory the e2e made. Paths are compared cleaned and absolute, never
// as typed; system directories are refused; an existing non-empty
// directory is accepted only when it carries the marker an earlier run
// wrote. The marker also carries the lock that tells a cleanup whether a
// run still uses the root.
package rootdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Marker is the file that marks a directory as an e2e root.
const Marker = ".kubelet-compat-e2e-root"

const markerText = "kubelet-compat e2e state directory\n"

// refused are directories that are never a root (their subdirectories
// may be, except under the virtual file systems in virtual).
var refused = map[string]bool{}

var virtual = []string{"/proc", "/sys", "/dev"}

func init() {
	for _, d := range []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
		"/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin",
		"/usr/lib", "/usr/local", "/usr/sbin", "/usr/share", "/usr/src", "/var", "/var/backups", "/var/cache",
		"/var/lib", "/var/local", "/var/log", "/var/mail", "/var/opt", "/var/run", "/var/spool", "/var/tmp",
		"/run/containerd", "/var/lib/containerd", "/var/lib/kubelet", "/etc/kubernetes", "/var/log/pods", "/var/log/containers"} {
		refused[d] = true
	}
}

// Clean returns path cleaned, or why it cannot be a root: it must be
// absolute, at least two levels deep, not a system directory, not under
// /proc, /sys or /dev, and reached without symlinks.
func Clean(path string) (string, error) {
	if path == "" {
		return "", errors.New("-root is empty")
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("-root %q: must be an absolute path", path)
	}
	c := filepath.Clean(path)
	if err := allowed(c); err != nil {
		return "", fmt.Errorf("-root %q: %w", path, err)
	}
	// The deepest existing part must resolve to itself: no symlink may
	// lead the root somewhere else.
	existing := c
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		existing = filepath.Dir(existing)
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("-root %q: %w", path, err)
	}
	if resolved != existing {
		return "", fmt.Errorf("-root %q: %s is reached through a symlink (to %s): give the real path", path, existing, resolved)
	}
	return c, nil
}

func allowed(c string) error {
	if refused[c] {
		return fmt.Errorf("%s is a system directory", c)
	}
	for _, v := range virtual {
		if c == v || strings.HasPrefix(c, v+"/") {
			return fmt.Errorf("%s is under %s", c, v)
		}
	}
	if strings.Count(c, "/") < 2 {
		return fmt.Errorf("%s is directly under /: use a directory at least two levels deep", c)
	}
	return nil
}

// Claim makes path the root of a run: it creates it, or accepts it when it
// is an empty directory or carries the marker, and writes the marker. It
// returns the cleaned path, the one to use from then on.
func Claim(path string) (string, error) {
	c, err := Clean(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(c)
	switch {
	case os.IsNotExist(err):
		if err := os.MkdirAll(c, 0o755); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case !fi.IsDir():
		return "", fmt.Errorf("-root %s exists and is not a directory", c)
	default:
		entries, err := os.ReadDir(c)
		if err != nil {
			return "", err
		}
		if len(entries) > 0 && Owned(c) != nil {
			return "", fmt.Errorf("-root %s exists and holds files the e2e did not make (no %s): choose another -root, or empty it yourself", c, Marker)
		}
	}
	if err := os.WriteFile(filepath.Join(c, Marker), []byte(markerText), 0o644); err != nil {
		return "", err
	}
	return c, nil
}

// Owned returns nil when path is a root an e2e run made (it carries the
// marker), else why not.
func Owned(path string) error {
	c, err := Clean(path)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(filepath.Join(c, Marker))
	if err != nil {
		return fmt.Errorf("%s is not an e2e root: %w", c, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return fmt.Errorf("%s is not an e2e root: %s is not the marker", c, Marker)
	}
	b, err := os.ReadFile(filepath.Join(c, Marker))
	if err != nil || !strings.HasPrefix(string(b), strings.TrimSpace(markerText)) {
		return fmt.Errorf("%s is not an e2e root: %s is not the marker", c, Marker)
	}
	return nil
}

// ErrBusy means a run holds the root's lock.
var ErrBusy = errors.New("an e2e run holds this root (it is still running)")

// Lock takes the root's lock (an flock on the marker; the kernel drops it
// when the holder exits, even by SIGKILL) without waiting. release drops it.
func Lock(root string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(root, Marker), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", root, ErrBusy)
		}
		return nil, fmt.Errorf("locking %s: %w", root, err)
	}
	return func() { f.Close() }, nil
}
