// Package shims finds what the e2e's containerd left running after a run
// that could not stop it (SIGKILL): its shims, their containers and what
// their task bundles name (shim sockets, network namespaces).
//
// Nothing here acts on a process name or command line alone. A shim is the
// run's when its PID and start time were recorded by the run, or when the
// run's own containerd state directory names its PID (shim.pid) or one of
// its children (a container's init.pid) and it started after the run did;
// in both cases it must also serve the run's containerd (-address is the
// run's socket). A container is the run's when a task
// bundle of that state directory names its PID, it started after the run
// did, and its parent is one of those shims or its cgroup is one the run
// created.
package shims

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
)

// Run is what the journal knows about the run's containerd.
type Run struct {
	// Socket is its socket: a shim of ours has -address <Socket>.
	Socket string
	// StateDir is its state directory, where the task bundles are.
	StateDir string
	// Recorded are the shims the run saw while it ran.
	Recorded []procfs.ID
	// Since is when the run started (start ticks): nothing older is ours.
	Since uint64
}

// TaskDir is the runtime v2 tasks' directory in containerd's state dir.
const TaskDir = "io.containerd.runtime.v2.task"

// Task is one task bundle: <state>/io.containerd.runtime.v2.task/<ns>/<id>.
type Task struct {
	Namespace, ID, Bundle string
	ShimPID, InitPID      int
	// Address is the shim's socket (unix:///run/containerd/s/<hash>).
	Address string
	// Netns is the network namespace the bundle's spec joins, if any.
	Netns string
	// Rootfs is the spec's root.path when absolute (a dockerd's
	// containers: the graph driver's mount, <data root>/overlay2/<id>/merged)
	// and MountSources its mounts' absolute sources (the container's shm,
	// volumes, bind mounts).
	Rootfs       string
	MountSources []string
}

// SandboxIDs lists the pod sandboxes the CRI plugin keeps in a containerd
// state directory.
func SandboxIDs(stateDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(stateDir, "io.containerd.grpc.v1.cri", "sandboxes"))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Tasks reads the task bundles of a containerd state directory.
func Tasks(stateDir string) ([]Task, error) {
	base := filepath.Join(stateDir, TaskDir)
	namespaces, err := os.ReadDir(base)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, ns := range namespaces {
		if !ns.IsDir() {
			continue
		}
		ids, err := os.ReadDir(filepath.Join(base, ns.Name()))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if !id.IsDir() {
				continue
			}
			b := filepath.Join(base, ns.Name(), id.Name())
			t := Task{Namespace: ns.Name(), ID: id.Name(), Bundle: b,
				ShimPID: readPID(filepath.Join(b, "shim.pid")), InitPID: readPID(filepath.Join(b, "init.pid"))}
			if a, err := os.ReadFile(filepath.Join(b, "address")); err == nil {
				t.Address = strings.TrimSpace(string(a))
			}
			t.Netns, t.Rootfs, t.MountSources = readSpec(filepath.Join(b, "config.json"))
			out = append(out, t)
		}
	}
	return out, nil
}

func readPID(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0
	}
	return pid
}

// readSpec reads a bundle's OCI spec: the network namespace it joins (a
// bind mount; a container joining its sandbox's namespace names it
// through /proc/<pid>/ns/net, which is not a mount of its own: ""), its
// absolute root path and its mounts' absolute sources.
func readSpec(configJSON string) (netns, rootfs string, sources []string) {
	b, err := os.ReadFile(configJSON)
	if err != nil {
		return "", "", nil
	}
	var spec struct {
		Root struct {
			Path string `json:"path"`
		} `json:"root"`
		Mounts []struct {
			Source string `json:"source"`
		} `json:"mounts"`
		Linux struct {
			Namespaces []struct{ Type, Path string }
		}
	}
	if json.Unmarshal(b, &spec) != nil {
		return "", "", nil
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == "network" && !strings.HasPrefix(ns.Path, "/proc/") {
			netns = ns.Path
		}
	}
	if filepath.IsAbs(spec.Root.Path) {
		rootfs = filepath.Clean(spec.Root.Path)
	}
	for _, m := range spec.Mounts {
		if filepath.IsAbs(m.Source) {
			sources = append(sources, filepath.Clean(m.Source))
		}
	}
	return netns, rootfs, sources
}

// serves reports whether pid is a shim of the containerd at socket and,
// when ids is not nil, runs one of those tasks (its -namespace and -id).
func serves(fs procfs.FS, pid int, socket string, ids map[string]bool) bool {
	args, err := fs.Cmdline(pid)
	if err != nil {
		return false
	}
	addr, ok := procfs.Flag(args, "address")
	if !ok || filepath.Clean(addr) != filepath.Clean(socket) {
		return false
	}
	if ids == nil {
		return true
	}
	ns, _ := procfs.Flag(args, "namespace")
	id, _ := procfs.Flag(args, "id")
	return ids[ns+"/"+id]
}

// Find returns the run's shims that still run. A candidate is a shim the
// run recorded (same PID and start time), or the PID a bundle's shim.pid
// names, or the parent of a process a bundle's init.pid names (runc v2's
// shim in containerd 1.6 writes no shim.pid; it is the subreaper of its
// containers' init processes). Every candidate must have started after
// the run and serve the run's socket; those not recorded must also run
// one of the run's tasks (-namespace, -id).
func Find(fs procfs.FS, r Run) ([]procfs.ID, error) {
	if r.Socket == "" {
		return nil, fmt.Errorf("no containerd socket recorded")
	}
	found := map[int]procfs.ID{}
	for _, rec := range r.Recorded {
		if rec.StartTicks >= r.Since && fs.Alive(rec) && serves(fs, rec.PID, r.Socket, nil) {
			found[rec.PID] = rec
		}
	}
	tasks, err := Tasks(r.StateDir)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, t := range tasks {
		ids[t.Namespace+"/"+t.ID] = true
	}
	for _, t := range tasks {
		candidates := []int{t.ShimPID}
		if t.InitPID != 0 {
			if st, err := fs.Stat(t.InitPID); err == nil && st.StartTicks >= r.Since {
				candidates = append(candidates, st.PPID)
			}
		}
		for _, pid := range candidates {
			if pid <= 1 {
				continue
			}
			if id, ok := started(fs, pid, r.Since); ok && serves(fs, pid, r.Socket, ids) {
				found[pid] = id
			}
		}
	}
	return sorted(found), nil
}

// Containers returns the init processes of the run's containers that still
// run: bundles' init.pid, started after the run, child of one of shims or
// in a cgroup ours accepts.
func Containers(fs procfs.FS, r Run, shims []procfs.ID, ours func(cgroupPath string) bool) ([]procfs.ID, error) {
	tasks, err := Tasks(r.StateDir)
	if err != nil {
		return nil, err
	}
	parents := map[int]bool{}
	for _, s := range shims {
		parents[s.PID] = true
	}
	found := map[int]procfs.ID{}
	for _, t := range tasks {
		if t.InitPID == 0 {
			continue
		}
		st, err := fs.Stat(t.InitPID)
		if err != nil || st.StartTicks < r.Since || st.State == 'Z' {
			continue
		}
		ok := parents[st.PPID]
		if !ok && ours != nil {
			paths, _ := fs.CgroupPaths(t.InitPID)
			for _, p := range paths {
				if ours(p) {
					ok = true
					break
				}
			}
		}
		if ok {
			found[t.InitPID] = procfs.ID{PID: t.InitPID, StartTicks: st.StartTicks}
		}
	}
	return sorted(found), nil
}

func started(fs procfs.FS, pid int, since uint64) (procfs.ID, bool) {
	st, err := fs.Stat(pid)
	if err != nil || st.StartTicks < since || st.State == 'Z' {
		return procfs.ID{}, false
	}
	return procfs.ID{PID: pid, StartTicks: st.StartTicks}, true
}

func sorted(m map[int]procfs.ID) []procfs.ID {
	out := make([]procfs.ID, 0, len(m))
	for _, id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
