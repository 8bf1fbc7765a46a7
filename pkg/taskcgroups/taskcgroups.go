// Package taskcgroups finds the running containers whose init process has
// left the cgroup runc lists their processes from, and puts it back.
//
// runc lists a container's processes (runc ps, which containerd's runc
// shim answers the task API's Pids with) from one cgroup of those it
// recorded, and from every cgroup below it: on cgroup v1 the devices
// hierarchy's, on cgroup v2 the container's one cgroup. On cgroup v1 nodes
// with the systemd cgroup driver a container's processes can end up in the
// pod slice's devices cgroup instead of the container's scope (measured on
// kind nodes: the first pods of each node, kube-proxy's among them). The
// container runs on, but its shim then reports no process, and containerd
// 1.7 and later, loading the shims at its start, take a shim whose task
// reports no process and whose sandbox its own store does not hold (every
// one containerd 1.6 started) for a leaked one and kill it, and with it
// the pod. Put back before that restart, nothing is lost.
//
// A container whose init moved into a cgroup below its own (systemd as
// PID 1, Docker-in-Docker's entrypoint: they make child cgroups and move
// themselves there) is not out: runc ps finds it there, as this package
// does, and Repair, which looks again right before its write, leaves it
// there. Nor is one out of another controller's cgroup only (memory,
// pids): runc ps does not read them.
//
// The evidence is runc's own state (root-owned, under its root) and the
// kernel's (/proc, the cgroup files), never what a process calls itself.
package taskcgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/procstat"
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
	// writeProcs writes pid into the cgroup.procs file at path (nil:
	// writeProcs, the kernel's; tests make a PID reused during it).
	writeProcs func(path string, pid int) error
}

// Task is a running container whose init process is neither in the cgroup
// runc ps reads nor below it.
type Task struct {
	ID  string
	Pid int
	// StartTime is the init process's start (clock ticks after boot), as
	// runc recorded it and /proc shows it.
	StartTime uint64
	// Out is the cgroup runc ps reads, which holds Pid neither itself nor
	// in a cgroup below it (one: runc ps reads one).
	Out []Cgroup
}

// Cgroup is one controller's recorded cgroup directory; Controller ""
// is cgroup v2's one cgroup (runc records it under "").
type Cgroup struct{ Controller, Dir string }

// Name is the controller, or "unified" for cgroup v2's one cgroup.
func (c Cgroup) Name() string {
	if c.Controller == "" {
		return "unified"
	}
	return c.Controller
}

// psCgroup is the cgroup runc ps lists a container's processes from: on
// cgroup v1 the devices hierarchy's (also on a hybrid host, which records
// the unified one too), on cgroup v2 the one cgroup runc records, under
// "". None when runc recorded neither (runc ps then fails alike).
func psCgroup(paths map[string]string) (Cgroup, bool) {
	if dir, ok := paths["devices"]; ok {
		return Cgroup{Controller: "devices", Dir: dir}, true
	}
	if dir, ok := paths[""]; ok && len(paths) == 1 {
		return Cgroup{Dir: dir}, true
	}
	return Cgroup{}, false
}

func (h Host) path(p string) string { return filepath.Join(h.FSRoot, p) }

func (h Host) runc() runcstate.Host { return runcstate.Host{FSRoot: h.FSRoot} }

// Escaped lists the running containers under RuncRoot whose init process
// (the one runc started: same PID and start time) runc ps would not find:
// it is neither in the cgroup runc ps reads (psCgroup), when that exists,
// nor in a cgroup below it. A container whose process is gone, or whose
// PID now names another process, is not running: not listed. No runc
// root: nothing to list.
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

// check reads one container's state; ok when it runs and runc ps would
// not find its init.
func (h Host) check(id string) (Task, bool, error) {
	st, ok, err := h.runc().Read(h.RuncRoot, id)
	if err != nil || !ok {
		return Task{}, false, err
	}
	if _, running := h.runc().Init(st.Pid, st.Start); !running {
		return Task{}, false, nil
	}
	cg, ok := psCgroup(st.Paths)
	if !ok {
		return Task{}, false, nil
	}
	found, err := h.holdsBelow(cg.Dir, st.Pid)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, false, nil // a cgroup runc recorded but the host does not have (e.g. a controller not mounted)
	}
	if err != nil {
		return Task{}, false, fmt.Errorf("container %s: its %s cgroup: %w", short(id), cg.Name(), err)
	}
	if found {
		return Task{}, false, nil
	}
	return Task{ID: id, Pid: st.Pid, StartTime: st.Start, Out: []Cgroup{cg}}, true, nil
}

// errFound ends holdsBelow's walk.
var errFound = errors.New("found")

// holdsBelow says whether the cgroup dir or one below it holds pid, as
// runc ps walks them (every directory's cgroup.procs; links not
// followed). A cgroup removed during the walk is passed over; dir itself
// missing is fs.ErrNotExist.
func (h Host) holdsBelow(dir string, pid int) (bool, error) {
	root := h.path(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		procs, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if p != root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if holds(procs, pid) {
			return errFound
		}
		return nil
	})
	if err == errFound {
		return true, nil
	}
	return false, err
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

// Repair writes t's init process back into the cgroup runc ps reads,
// checking that PID names the same process (its start time) before the
// write and again after it, and that it is still out: an init found in
// that cgroup or below it by then (the tenant's systemd or
// Docker-in-Docker moved it into a child cgroup since Escaped) is left
// where it is, as runc ps finds it there, and moved is false. Nothing can
// make the check and the write one step: an init that moves below in
// between is written back (on cgroup v2 the kernel refuses it, EBUSY,
// once that cgroup has children with controllers).
//
// The kernel moves whatever process the PID names when the write lands,
// and a PID is free for another process once its own exited and was
// reaped. So Repair holds the process itself, not its number: it opens
// its /proc directory first (pin) and reads its start time through it,
// before the write and after it. A process whose directory still answers
// after the write ran through it, and the PID of a running (or unreaped)
// process names no other: the write moved it. A PID reused before the
// write is left alone, with an error; an init gone by the write's end is
// an error that names what the PID names now, which the write may have
// moved (nothing can tell where it was).
func (h Host) Repair(t Task) (moved bool, err error) {
	write := h.writeProcs
	if write == nil {
		write = writeProcs
	}
	proc, err := h.pin(t.Pid)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("container %s: process %d is not the one runc started any more: left alone", short(t.ID), t.Pid)
	}
	if err != nil {
		return false, fmt.Errorf("container %s: process %d: %w", short(t.ID), t.Pid, err)
	}
	defer proc.Close()
	for _, cg := range t.Out {
		if !sameProcess(proc, t) {
			return moved, fmt.Errorf("container %s: process %d is not the one runc started any more: left alone", short(t.ID), t.Pid)
		}
		in, err := h.holdsBelow(cg.Dir, t.Pid)
		if err != nil {
			return moved, fmt.Errorf("container %s: its %s cgroup %s: %w", short(t.ID), cg.Name(), cg.Dir, err)
		}
		if in {
			continue // runc ps finds it: in the tenant's own cgroup below, left alone
		}
		if err := write(h.path(filepath.Join(cg.Dir, "cgroup.procs")), t.Pid); err != nil {
			return moved, fmt.Errorf("container %s: moving process %d into its %s cgroup %s: %w", short(t.ID), t.Pid, cg.Name(), cg.Dir, err)
		}
		if !sameProcess(proc, t) {
			// What the PID names now, by its number.
			what := fmt.Sprintf("no process has PID %d now", t.Pid)
			if now, _ := h.runc().Init(t.Pid, t.StartTime); now.PID == t.Pid {
				what = fmt.Sprintf("PID %d now names another process (start %d), which this write may have moved there: check /proc/%d/cgroup", t.Pid, now.StartTicks, t.Pid)
			}
			return moved, fmt.Errorf("container %s: process %d exited while it was written into its %s cgroup %s: %s", short(t.ID), t.Pid, cg.Name(), cg.Dir, what)
		}
		moved = true
	}
	return moved, nil
}

// pin opens pid's /proc directory. The open directory names the process
// PID names now, not the number: once that process is reaped, reading its
// files through it fails (ESRCH, or ENOENT), even when the PID names
// another process since; pidfd_send_signal takes such a directory as a
// pidfd. Unlike pidfd_open (Linux 5.3) every kernel has it, so there is
// no fallback to keep, and the start time read through it is that
// process's, with no window between taking the handle and reading its
// identity. Start times alone count clock ticks: a PID reused within the
// tick its process started in would pass a check by number. Under FSRoot
// a test's /proc/<pid> replaced by another directory behaves alike.
func (h Host) pin(pid int) (*os.Root, error) {
	if pid <= 0 {
		return nil, fs.ErrNotExist
	}
	return os.OpenRoot(h.path(filepath.Join("/proc", strconv.Itoa(pid))))
}

// sameProcess says whether the process proc holds is still there and is
// t's init (its start time).
func sameProcess(proc *os.Root, t Task) bool {
	data, err := proc.ReadFile("stat")
	if err != nil {
		return false
	}
	st, err := procstat.Parse(data)
	return err == nil && st.PID == t.Pid && st.StartTicks == t.StartTime
}

// writeProcs writes pid into the cgroup.procs file at path: the kernel
// moves the process pid names at that moment.
func writeProcs(path string, pid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
