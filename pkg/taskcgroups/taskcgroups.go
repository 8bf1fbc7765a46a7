// Package taskcgroups finds the running containers whose init process has
// left a cgroup runc gave it, and puts it back.
//
// runc lists a container's processes (runc ps, which containerd's runc
// shim answers the task API's Pids with) from one cgroup of those it
// recorded: on cgroup v1, the devices hierarchy's. On cgroup v1 nodes with
// the systemd cgroup driver a container's processes can end up in the pod
// slice's devices cgroup instead of the container's scope (measured on kind
// nodes: the first pods of each node, kube-proxy's among them). The
// container runs on, but its shim then reports no process, and containerd
// 1.7 and later, loading the shims at its start, take a shim whose task
// reports no process and whose sandbox its own store does not hold (every
// one containerd 1.6 started) for a leaked one and kill it, and with it
// the pod. Put back before that restart, nothing is lost.
//
// The evidence is runc's own state (root-owned, under its root) and the
// kernel's (/proc, the cgroup files), never what a process calls itself.
package taskcgroups

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/runcstate"
)

// DefaultRuncRoot is where containerd's runc shim keeps runc's state of
// the Kubernetes namespace's containers.
const DefaultRuncRoot = "/run/containerd/runc/k8s.io"

// Host is where the package reads and writes: runc's root, and the root
// of the file system /proc and the cgroup paths runc recorded are under
// ("/" on a node; a directory in tests).
type Host struct {
	RuncRoot string
	FSRoot   string
}

// Task is a running container whose init process is not in every cgroup
// runc recorded for it.
type Task struct {
	ID  string
	Pid int
	// StartTime is the init process's start (clock ticks after boot), as
	// runc recorded it and /proc shows it.
	StartTime uint64
	// Out are the controllers whose recorded cgroup does not hold Pid,
	// with that cgroup's directory, sorted.
	Out []Cgroup
}

// Cgroup is one controller's recorded cgroup directory.
type Cgroup struct{ Controller, Dir string }

func (h Host) path(p string) string { return filepath.Join(h.FSRoot, p) }

func (h Host) runc() runcstate.Host { return runcstate.Host{FSRoot: h.FSRoot} }

// Escaped lists the running containers under RuncRoot whose init process
// (the one runc started: same PID and start time) is missing from one of
// its recorded cgroups that exists. A container whose process is gone, or
// whose PID now names another process, is not running: not listed. No
// runc root: nothing to list.
func (h Host) Escaped() ([]Task, error) {
	ids, err := h.runc().IDs(h.RuncRoot)
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, id := range ids {
		t, ok, err := h.check(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// check reads one container's state; ok when it runs and is out of a
// recorded cgroup.
func (h Host) check(id string) (Task, bool, error) {
	st, ok, err := h.runc().Read(h.RuncRoot, id)
	if err != nil || !ok {
		return Task{}, false, err
	}
	if _, running := h.runc().Init(st.Pid, st.Start); !running {
		return Task{}, false, nil
	}
	t := Task{ID: id, Pid: st.Pid, StartTime: st.Start}
	for controller, dir := range st.Paths {
		procs, err := os.ReadFile(h.path(filepath.Join(dir, "cgroup.procs")))
		if err != nil {
			continue // a cgroup runc recorded but the host does not have (e.g. a controller not mounted)
		}
		if !holds(procs, st.Pid) {
			t.Out = append(t.Out, Cgroup{Controller: controller, Dir: dir})
		}
	}
	sort.Slice(t.Out, func(i, j int) bool { return t.Out[i].Controller < t.Out[j].Controller })
	return t, len(t.Out) > 0, nil
}

func holds(procs []byte, pid int) bool {
	want := strconv.Itoa(pid)
	sc := bufio.NewScanner(strings.NewReader(string(procs)))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == want {
			return true
		}
	}
	return false
}

// Repair writes t's init process back into each cgroup it is out of, after
// checking again that it is the same process (a PID reused since Escaped
// is left alone, with an error).
func (h Host) Repair(t Task) error {
	if _, same := h.runc().Init(t.Pid, t.StartTime); !same {
		return fmt.Errorf("container %s: process %d is not the one runc started any more: left alone", short(t.ID), t.Pid)
	}
	for _, cg := range t.Out {
		f, err := os.OpenFile(h.path(filepath.Join(cg.Dir, "cgroup.procs")), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("container %s: %s cgroup: %w", short(t.ID), cg.Controller, err)
		}
		_, err = f.WriteString(strconv.Itoa(t.Pid))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("container %s: moving process %d into its %s cgroup %s: %w", short(t.ID), t.Pid, cg.Controller, cg.Dir, err)
		}
	}
	return nil
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
