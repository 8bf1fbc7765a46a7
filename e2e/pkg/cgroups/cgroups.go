// Package cgroups records, before the kubelet runs, which of its cgroups
// (kubepods) exist, and removes afterwards the ones the run created.
package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
)

// Host is where the cgroups are: Root is /sys/fs/cgroup on the machine and
// a temporary directory in tests; Kill sends SIGKILL; Rmdir removes a
// cgroup (syscall.Rmdir when nil).
type Host struct {
	Root  string
	Proc  procfs.FS
	Kill  func(pid int) error
	Rmdir func(path string) error
}

func (h Host) rmdir(p string) error {
	if h.Rmdir != nil {
		return h.Rmdir(p)
	}
	return syscall.Rmdir(p)
}

// Recorded is what Record saw before the run.
type Recorded struct {
	Name  string `json:"name"`
	guard bool
}

// Record notes whether the kubelet's cgroup name exists already.
func Record(h Host, name string) (Recorded, error) {
	_, err := os.Stat(filepath.Join(h.Root, "cpu", name))
	return Recorded{Name: name, guard: os.IsNotExist(err)}, nil
}

// Remove removes the cgroup directories named r.Name directly under each
// cgroup v1 hierarchy (or the v2 root), deepest first, killing what still
// runs in them. Only empty cgroups can be removed; it retries for a while
// as processes exit.
func Remove(ctx context.Context, h Host, r Recorded, since uint64) error {
	if !r.guard {
		return nil
	}
	roots, _ := filepath.Glob(filepath.Join(h.Root, "*", r.Name))
	if v2 := filepath.Join(h.Root, r.Name); isDir(v2) {
		roots = append(roots, v2)
	}
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		last = nil
		for _, root := range roots {
			var dirs []string
			_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				killProcs(h, dirs[i])
				if err := h.rmdir(dirs[i]); err != nil && !os.IsNotExist(err) {
					last = fmt.Errorf("rmdir %s: %w", dirs[i], err)
				}
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(500 * time.Millisecond):
		}
	}
	return last
}

func killProcs(h Host, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = h.Kill(pid)
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
