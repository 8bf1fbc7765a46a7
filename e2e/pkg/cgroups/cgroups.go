// Package cgroups records, before the kubelet runs, which of its cgroups
// (kubepods, with the cgroupfs driver) do not exist yet, and removes
// afterwards exactly those: the ones this run's kubelet created. It knows
// both layouts: cgroup v1 (one hierarchy per directory under the root,
// kubepods in each) and cgroup v2 (one unified hierarchy, kubepods at the
// root). A cgroup that existed before the run is never touched, nor is a
// process that is older than the run.
package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
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

// Mode is the cgroup layout.
type Mode string

const (
	V1 Mode = "v1"
	V2 Mode = "v2"
)

// Detect reports the layout under root: v2 when the unified hierarchy is
// mounted there (root/cgroup.controllers exists), else v1 (a hybrid host's
// "unified" directory is one more hierarchy).
func Detect(root string) Mode {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return V2
	}
	return V1
}

// Recorded is what the run may remove later.
type Recorded struct {
	Mode Mode   `json:"mode"`
	Name string `json:"name"`
	// Created are the cgroups named Name that did not exist before the
	// run, where the kubelet creates them: only these are removed.
	Created []string `json:"created,omitempty"`
	// Existing are those that existed already (not journaled: never the
	// run's).
	Existing []string `json:"-"`
}

// Record returns the cgroups called name that the kubelet (cgroupfs
// driver) would create and that do not exist yet: root/name on v2,
// root/<hierarchy>/name for each hierarchy on v1.
func Record(h Host, name string) (Recorded, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return Recorded{}, fmt.Errorf("cgroup name %q: want one path element", name)
	}
	r := Recorded{Mode: Detect(h.Root), Name: name}
	var candidates []string
	if r.Mode == V2 {
		candidates = []string{filepath.Join(h.Root, name)}
	} else {
		entries, err := os.ReadDir(h.Root)
		if err != nil {
			return Recorded{}, err
		}
		for _, e := range entries {
			// Hierarchies are directories; cpu -> cpu,cpuacct and the
			// like are symlinks to them.
			if e.IsDir() {
				candidates = append(candidates, filepath.Join(h.Root, e.Name(), name))
			}
		}
	}
	for _, c := range candidates {
		if _, err := os.Lstat(c); os.IsNotExist(err) {
			r.Created = append(r.Created, c)
		} else if err != nil {
			return Recorded{}, err
		} else {
			r.Existing = append(r.Existing, c)
		}
	}
	return r, nil
}

// Ours reports whether a process's cgroup path (/proc/<pid>/cgroup's third
// field, "/kubepods/...") lies in a cgroup the run created.
func (r Recorded) Ours(path string) bool {
	if len(r.Created) == 0 || r.Name == "" {
		return false
	}
	top := "/" + r.Name
	return path == top || strings.HasPrefix(path, top+"/")
}

// Remove removes the cgroups r.Created lists (and the cgroups under them),
// deepest first, after killing the processes still in them that started
// after since (start ticks; older processes are not the run's and are left,
// which leaves their cgroup too). Only empty cgroups can be removed: it
// retries until ctx ends as processes exit.
func Remove(ctx context.Context, h Host, r Recorded, since uint64) error {
	var tops []string
	var errs []error
	for _, c := range r.Created {
		if err := check(h.Root, r, c); err != nil {
			errs = append(errs, err)
			continue
		}
		tops = append(tops, c)
	}
	if err := Thaw(h, Recorded{Mode: r.Mode, Name: r.Name, Created: tops}); err != nil {
		errs = append(errs, err)
	}
	for {
		var last []error
		for _, top := range tops {
			for _, dir := range subtree(top) {
				for _, err := range killProcs(h, dir, since) {
					last = append(last, err)
				}
				if err := h.rmdir(dir); err != nil && !os.IsNotExist(err) {
					last = append(last, fmt.Errorf("rmdir %s: %w", dir, err))
				}
			}
		}
		if len(last) == 0 {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, last...)...)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Thaw thaws every frozen cgroup under those r.Created lists: a process in
// a frozen cgroup does not die of SIGKILL until it is thawed. A run leaves
// frozen ones when it is killed while runc (systemd driver, cgroup v1)
// freezes a container's cgroup to update it; its runc init then waits in
// uninterruptible sleep and the container outlives every SIGKILL.
func Thaw(h Host, r Recorded) error {
	var errs []error
	for _, c := range r.Created {
		if err := check(h.Root, r, c); err != nil {
			errs = append(errs, err)
			continue
		}
		file, frozen, thawed := "freezer.state", "FROZEN", "THAWED"
		if r.Mode == V2 {
			file, frozen, thawed = "cgroup.freeze", "1", "0"
		}
		for _, dir := range subtree(c) {
			p := filepath.Join(dir, file)
			b, err := os.ReadFile(p)
			if err != nil || (strings.TrimSpace(string(b)) != frozen && strings.TrimSpace(string(b)) != "FREEZING") {
				continue
			}
			if err := os.WriteFile(p, []byte(thawed), 0); err != nil {
				errs = append(errs, fmt.Errorf("thawing %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// check refuses a recorded path that is not where Record puts them.
func check(root string, r Recorded, c string) error {
	clean := filepath.Clean(c)
	ok := clean == c && filepath.Base(c) == r.Name
	if r.Mode == V2 {
		ok = ok && filepath.Dir(c) == filepath.Clean(root)
	} else {
		ok = ok && filepath.Dir(filepath.Dir(c)) == filepath.Clean(root)
	}
	if !ok {
		return fmt.Errorf("not removing cgroup %s: not %s's %s under %s", c, r.Mode, r.Name, root)
	}
	return nil
}

// subtree lists dir and the directories under it, deepest first (symlinks
// are not followed).
func subtree(dir string) []string {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.SliceStable(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killProcs SIGKILLs the processes of one cgroup that started after since.
func killProcs(h Host, dir string, since uint64) []error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var errs []error
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		st, err := h.Proc.Stat(pid)
		if err != nil {
			continue // gone
		}
		if st.StartTicks < since {
			errs = append(errs, fmt.Errorf("cgroup %s holds pid %d, older than the run: left alone", dir, pid))
			continue
		}
		if err := h.Kill(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d in %s: %w", pid, dir, err))
		}
	}
	return errs
}
