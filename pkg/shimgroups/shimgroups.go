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
// the bundle's address file (containerd's, root-owned) and the kernel's
// (/proc: the init's parent, which is its shim, that shim's open sockets,
// and the listening sockets of its network namespace), never what a
// process calls itself.
package shimgroups

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/procstat"
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
// not hold the listening socket their bundle's address names. A container
// that does not run (its PID gone or reused), or that has no bundle
// (being created or deleted), is not listed. No runc root: nothing.
func (h Host) Stranded() ([]Task, error) {
	entries, err := os.ReadDir(h.path(h.RuncRoot))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t, ok, err := h.check(e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// check: ok when id runs and its shim does not listen at its address.
func (h Host) check(id string) (Task, bool, error) {
	data, err := os.ReadFile(h.path(filepath.Join(h.RuncRoot, id, "state.json")))
	if errors.Is(err, os.ErrNotExist) {
		return Task{}, false, nil
	}
	if err != nil {
		return Task{}, false, err
	}
	var st struct {
		Pid   int    `json:"init_process_pid"`
		Start uint64 `json:"init_process_start"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return Task{}, false, fmt.Errorf("runc state of %s: %w", id, err)
	}
	init, ok := h.stat(st.Pid)
	if !ok || init.StartTicks != st.Start {
		return Task{}, false, nil
	}
	addr, err := os.ReadFile(h.path(filepath.Join(h.TaskState, id, "address")))
	if errors.Is(err, os.ErrNotExist) {
		return Task{}, false, nil
	}
	if err != nil {
		return Task{}, false, err
	}
	t := Task{ID: id, Shim: init.PPID, Address: strings.TrimSpace(string(addr))}
	sock, ok := strings.CutPrefix(t.Address, "unix://")
	if !ok {
		return Task{}, false, fmt.Errorf("task %s: address %q is not a unix socket", short(id), t.Address)
	}
	// The shim's own network namespace holds its socket.
	inodes, err := h.listening(t.Shim, sock)
	if err != nil {
		return Task{}, false, fmt.Errorf("task %s: %w", short(id), err)
	}
	if h.holdsAny(t.Shim, inodes) {
		return Task{}, false, nil
	}
	t.Listener = h.holder(inodes)
	return t, true, nil
}

func (h Host) stat(pid int) (procstat.Stat, bool) {
	if pid <= 0 {
		return procstat.Stat{}, false
	}
	data, err := os.ReadFile(h.path(filepath.Join("/proc", strconv.Itoa(pid), "stat")))
	if err != nil {
		return procstat.Stat{}, false
	}
	st, err := procstat.Parse(data)
	return st, err == nil && st.PID == pid
}

// listening returns the inodes of the listening unix sockets bound to
// path, as the network namespace of pid lists them.
func (h Host) listening(pid int, path string) (map[string]bool, error) {
	f, err := os.Open(h.path(filepath.Join("/proc", strconv.Itoa(pid), "net", "unix")))
	if err != nil {
		return nil, fmt.Errorf("the shim's unix sockets: %w", err)
	}
	defer f.Close()
	// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 is
	// __SO_ACCEPTCON: a listening socket.
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 8 || fl[7] != path {
			continue
		}
		flags, err := strconv.ParseUint(fl[3], 16, 32)
		if err == nil && flags&0x10000 != 0 {
			out[fl[6]] = true
		}
	}
	return out, sc.Err()
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
