package roll

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// Host is the node a roll runs on, as the upgrade Job's container reaches
// it: its programs, its files, its lock, the Job's kubectl and the clock.
// NodeHost is the real one; the tests fake it.
type Host interface {
	// Run runs a program of the node: chroot into the node's root with the
	// node's PATH and systemctl told to talk to PID 1. The roll's lock is not handed to it.
	Run(ctx context.Context, c Cmd) Result
	// Kubectl runs the Job's kubectl: the API server with the Job's
	// service account, or, with --kubeconfig, the kubelet's own server.
	Kubectl(ctx context.Context, args ...string) Result
	// Files are the node's files, named by their path on the node.
	Files() Files
	// TryLock takes the exclusive lock on the node's file name without
	// waiting (flock -n): false when another process holds
	// it. The lock lasts as long as this process.
	TryLock(name string) (bool, error)
	// WaitLock waits at most wait for that lock (flock -w): false when it
	// is still held then.
	WaitLock(ctx context.Context, name string, wait time.Duration) (bool, error)
	// Now and Sleep are the clock the roll's waits and stamps run on.
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
	// Hostname is the Job's host name: the node's (the Job's pod has the
	// node's network), the kubelet's serving certificate's name.
	Hostname() string
}

// Cmd is a program run on the node.
type Cmd struct {
	Argv []string
	// Stdout and Stderr, when set, get the program's output as it comes
	// (the Job's log); Result then holds none of it.
	Stdout, Stderr io.Writer
}

// Result is how a program ended: its output (unless Cmd sent it
// elsewhere) and its exit status; Code is -1 and Err says why when it did
// not run or was killed.
type Result struct {
	Stdout, Stderr []byte
	Code           int
	Err            error
}

// OK says whether the program ran and exited 0.
func (r Result) OK() bool { return r.Code == 0 && r.Err == nil }

// Files are the node's files, named by their absolute path on the node.
type Files interface {
	ReadFile(name string) ([]byte, error)
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	MkdirAll(name string) error
	// Create creates or truncates name for writing.
	Create(name string, perm fs.FileMode) (File, error)
	Rename(from, to string) error
	// Remove and RemoveAll succeed when name does not exist.
	Remove(name string) error
	RemoveAll(name string) error
	Chtimes(name string, mtime time.Time) error
	// SyncDir makes the directory's entries (a rename) durable.
	SyncDir(name string) error
	// Path is name as the Job's own programs see it (under $KC_HOST).
	Path(name string) string
}

// File is a file being written on the node.
type File interface {
	io.Writer
	Sync() error
	Close() error
}
