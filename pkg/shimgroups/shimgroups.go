// Package shimgroups finds the running containers that containerd, at its
// next start, can no longer reach through their shim, and so takes for
// leaked and kills.
//
// containerd's runc shim serves every container of a pod from one process,
// found through one socket named after the pod's sandbox (each task's
// bundle holds that address). When the shim of a pod's next container
// starts, it connects to that socket first, with a 100 ms timeout; on a
// loaded node the connect can time out although the pod's shim runs. The
// new shim then removes the socket and listens on a new one at the same
// path, so the pod's tasks are split over two shim processes and the
// address reaches only the new one. containerd keeps its connections to
// both until it restarts. At its start it dials each task's address,
// asks the shim that answers for the task's processes, and, for a task
// that shim does not know (and whose sandbox its own store does not hold:
// every one containerd 1.x started), kills the shim as leaked: the pod's
// sandbox or container dies and the kubelet recreates or restarts it.
// Measured on a runtime step 1.7.35 -> 2.4.2: "cleaning leaked shim
// process ... container not created: not found" for a sandbox whose app
// container's shim answered at its address. Nothing can join the two
// again: the only way through is to restart such a pod at a time of the
// operator's choosing, before containerd restarts.
//
// The evidence is runc's state (the container's init PID and start time),
// the bundle's address file (containerd's, root-owned) and the kernel's:
// /proc (the init's parent, which is its shim, and that shim's open
// sockets) and sock_diag (which listening socket is bound to the file at
// the address now), never what a process calls itself. sock_diag answers
// for the caller's network namespace: run it in the shims' (the host's).
package shimgroups

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/pkg/runcstate"
)

// Defaults of containerd's runc shim for the Kubernetes namespace.
const (
	DefaultRuncRoot  = "/run/containerd/runc/k8s.io"
	DefaultTaskState = "/run/containerd/io.containerd.runtime.v2.task/k8s.io"
)

// Host is where the package reads: runc's root, containerd's task state
// (the bundles and their address files) and the root of the file system
// /proc is under ("/" on a node; a directory in tests).
type Host struct {
	RuncRoot  string
	TaskState string
	FSRoot    string
	// Listeners lists the listening unix sockets of the shims' network
	// namespace (nil: UnixListeners, the kernel's for the caller's).
	Listeners func() ([]Listener, error)
}

// Task is a running container its bundle's address no longer reaches.
type Task struct {
	ID string
	// Shim is the PID of the shim that runs it (its init's parent).
	Shim int
	// Address is the socket its bundle names.
	Address string
	// Listener is the PID of the shim listening there, 0 when none does.
	Listener int
}

func (t Task) String() string { return fmt.Sprintf("%.13s: %s", t.ID, t.Reason()) }

// Reason says how its address misses its shim.
func (t Task) Reason() string {
	if t.Listener == 0 {
		return fmt.Sprintf("its shim (pid %d) does not listen at %s, nothing does", t.Shim, t.Address)
	}
	return fmt.Sprintf("its shim is pid %d, but %s reaches pid %d", t.Shim, t.Address, t.Listener)
}

func (h Host) path(p string) string { return filepath.Join(h.FSRoot, p) }

// Stranded lists the running containers under RuncRoot whose shim does
// not hold the listening socket their bundle's address names, and counts
// the running containers it checked. A container that does not run (its
// PID gone or reused), or that has no bundle (being created or deleted),
// is not checked. No runc root: nothing.
func (h Host) Stranded() (out []Task, checked int, err error) {
	ids, err := h.runc().IDs(h.RuncRoot)
	if err != nil || len(ids) == 0 {
		return nil, 0, err
	}
	list := h.Listeners
	if list == nil {
		list = UnixListeners
	}
	listeners, err := list()
	if err != nil {
		return nil, 0, err
	}
	for _, id := range ids {
		t, state, err := h.check(id, listeners)
		if err != nil {
			return nil, checked, err
		}
		if state != notRunning {
			checked++
		}
		if state == strandedTask {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, checked, nil
}

func (h Host) runc() runcstate.Host { return runcstate.Host{FSRoot: h.FSRoot} }

// What check found of one container.
type finding int

const (
	notRunning finding = iota
	reachable
	strandedTask
)

// check: strandedTask when id runs and its shim does not listen at its
// address.
func (h Host) check(id string, listeners []Listener) (Task, finding, error) {
	st, ok, err := h.runc().Read(h.RuncRoot, id)
	if err != nil || !ok {
		return Task{}, notRunning, err
	}
	init, running := h.runc().Init(st.Pid, st.Start)
	if !running {
		return Task{}, notRunning, nil
	}
	addr, ok, err := h.address(id)
	if err != nil || !ok {
		return Task{}, notRunning, err
	}
	t := Task{ID: id, Shim: init.PPID, Address: addr}
	sock, ok := strings.CutPrefix(t.Address, "unix://")
	if !ok {
		return Task{}, notRunning, fmt.Errorf("task %s: address %q is not a unix socket", short(id), t.Address)
	}
	inodes, err := h.boundAt(sock, listeners)
	if err != nil {
		return Task{}, notRunning, fmt.Errorf("task %s: %w", short(id), err)
	}
	if h.holdsAny(t.Shim, inodes) {
		return t, reachable, nil
	}
	t.Listener = h.holder(inodes)
	return t, strandedTask, nil
}

// address is the shim address id's bundle names: its address file
// (containerd 1.x), else the address of its bootstrap.json (2.x writes
// only that). ok is false without either (a bundle being created or
// deleted).
func (h Host) address(id string) (addr string, ok bool, err error) {
	dir := filepath.Join(h.TaskState, id)
	data, err := os.ReadFile(h.path(filepath.Join(dir, "address")))
	if err == nil {
		return strings.TrimSpace(string(data)), true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", false, err
	}
	data, err = os.ReadFile(h.path(filepath.Join(dir, "bootstrap.json")))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var params struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(data, &params); err != nil || params.Address == "" {
		return "", false, fmt.Errorf("task %s: %s names no address", short(id), filepath.Join(dir, "bootstrap.json"))
	}
	return params.Address, true, nil
}

// boundAt returns the socket inode of the listener bound at path now:
// the one whose bound file is the file at path (a listener whose file was
// removed keeps the name, not the file). None when no file is there.
func (h Host) boundAt(path string, listeners []Listener) (map[string]bool, error) {
	fi, err := os.Stat(h.path(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no inode", path)
	}
	out := map[string]bool{}
	for _, l := range listeners {
		if l.Name == path && l.VFSInode == st.Ino {
			out[l.Inode] = true
		}
	}
	return out, nil
}

// holdsAny says whether pid has one of inodes open.
func (h Host) holdsAny(pid int, inodes map[string]bool) bool {
	fds, err := os.ReadDir(h.path(filepath.Join("/proc", strconv.Itoa(pid), "fd")))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		link, err := os.Readlink(h.path(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name())))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
			return true
		}
	}
	return false
}

// holder is a process holding one of inodes, 0 when none is found.
func (h Host) holder(inodes map[string]bool) int {
	if len(inodes) == 0 {
		return 0
	}
	procs, err := os.ReadDir(h.path("/proc"))
	if err != nil {
		return 0
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err == nil && h.holdsAny(pid, inodes) {
			return pid
		}
	}
	return 0
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
