package shims

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
)

const (
	sock  = "/var/lib/kc-e2e-test/containerd/containerd.sock"
	since = 1000 // the run started at tick 1000
)

func shimArgs(address, id string) []string {
	return []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", id, "-address", address}
}

// task writes a task bundle of our containerd's state dir.
func task(t *testing.T, state, id string, shimPID int) {
	dir := filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", id)
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "shim.pid"), []byte(strconv.Itoa(shimPID)), 0o644))
}

func TestFindOnlyTheRunsShims(t *testing.T) {
	tests := []struct {
		name     string
		procs    []fakeproc.Proc
		recorded []procfs.ID
		tasks    map[string]int // task ID -> shim.pid in our state dir
		inits    map[string]int // task ID -> init.pid in our state dir
		want     []int
	}{
		{name: "a process naming our socket is not a shim of ours",
			procs: []fakeproc.Proc{{PID: 10, Start: 2000, Args: []string{"tail", "-f", sock}}, {PID: 11, Start: 2000, Args: []string{"sh", "-c", "echo -address " + sock}}}},
		{name: "a recorded shim", procs: []fakeproc.Proc{{PID: 20, Start: 2000, Args: shimArgs(sock, "aaa")}},
			recorded: []procfs.ID{{PID: 20, StartTicks: 2000}}, want: []int{20}},
		{name: "a recorded PID that was recycled",
			procs:    []fakeproc.Proc{{PID: 21, Start: 3000, Args: shimArgs(sock, "aaa")}},
			recorded: []procfs.ID{{PID: 21, StartTicks: 2000}}},
		{name: "a recorded shim of another containerd (never: the address must be ours)",
			procs:    []fakeproc.Proc{{PID: 22, Start: 2000, Args: shimArgs("/run/containerd/containerd.sock", "aaa")}},
			recorded: []procfs.ID{{PID: 22, StartTicks: 2000}}},
		{name: "a shim our state dir names, started during the run",
			procs: []fakeproc.Proc{{PID: 30, Start: 2000, Args: shimArgs(sock, "bbb")}},
			tasks: map[string]int{"bbb": 30, "ccc": 30}, want: []int{30}},
		{name: "our state dir names a PID now held by an older process",
			procs: []fakeproc.Proc{{PID: 31, Start: 500, Args: shimArgs(sock, "bbb")}},
			tasks: map[string]int{"bbb": 31}},
		{name: "our state dir names a shim of another task",
			procs: []fakeproc.Proc{{PID: 32, Start: 2000, Args: shimArgs(sock, "zzz")}},
			tasks: map[string]int{"bbb": 32}},
		{name: "the parent of a container our state dir names",
			procs: []fakeproc.Proc{{PID: 33, Start: 2000, Args: shimArgs(sock, "bbb")}, {PID: 60, PPID: 33, Start: 2100, Args: []string{"/pause"}}},
			inits: map[string]int{"bbb": 60}, want: []int{33}},
		{name: "the parent of a container, but not a shim of ours",
			procs: []fakeproc.Proc{{PID: 34, Start: 2000, Args: shimArgs("/run/containerd/containerd.sock", "bbb")}, {PID: 61, PPID: 34, Start: 2100, Args: []string{"/pause"}}},
			inits: map[string]int{"bbb": 61}},
		{name: "the parent of an older process an init.pid names (recycled)",
			procs: []fakeproc.Proc{{PID: 35, Start: 2000, Args: shimArgs(sock, "bbb")}, {PID: 62, PPID: 35, Start: 500, Args: []string{"sshd"}}},
			inits: map[string]int{"bbb": 62}},
		{name: "a recorded shim older than the run",
			procs:    []fakeproc.Proc{{PID: 36, Start: 500, Args: shimArgs(sock, "aaa")}},
			recorded: []procfs.ID{{PID: 36, StartTicks: 500}}},
		{name: "the system containerd's shims are never ours",
			procs: []fakeproc.Proc{{PID: 40, Start: 2000, Args: shimArgs("/run/containerd/containerd.sock", "ddd")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procRoot, state := t.TempDir(), t.TempDir()
			for _, p := range tt.procs {
				if p.PPID == 0 {
					p.PPID = 1
				}
				fakeproc.Write(t, procRoot, p)
			}
			for id, pid := range tt.tasks {
				task(t, state, id, pid)
			}
			for id, pid := range tt.inits {
				task(t, state, id, 0)
				dir := filepath.Join(state, TaskDir, "k8s.io", id)
				assert.NilError(t, os.WriteFile(filepath.Join(dir, "init.pid"), []byte(strconv.Itoa(pid)), 0o644))
			}
			found, err := Find(procfs.FS{Root: procRoot}, Run{Socket: sock, StateDir: state, Recorded: tt.recorded, Since: since})
			assert.NilError(t, err)
			var got []int
			for _, id := range found {
				got = append(got, id.PID)
			}
			sort.Ints(got)
			assert.DeepEqual(t, got, tt.want)
		})
	}
}

func TestContainersAndBundles(t *testing.T) {
	procRoot, state := t.TempDir(), t.TempDir()
	fakeproc.Write(t, procRoot, fakeproc.Proc{PID: 30, PPID: 1, Start: 2000, Args: shimArgs(sock, "bbb")})
	for _, p := range []fakeproc.Proc{
		{PID: 50, PPID: 30, Start: 2100, Cgroups: []string{"/kubepods/besteffort/pod1/bbb"}}, // the shim's child
		{PID: 51, PPID: 1, Start: 2100, Cgroups: []string{"/kubepods/besteffort/pod1/ccc"}},  // reparented, in our cgroup
		{PID: 52, PPID: 1, Start: 2100, Cgroups: []string{"/system.slice/other.service"}},    // reparented, not ours
		{PID: 53, PPID: 30, Start: 500, Cgroups: []string{"/kubepods/besteffort/pod1/eee"}},  // older than the run
		{PID: 54, PPID: 30, Start: 2100, Cgroups: []string{"/kubepods/besteffort/pod1/fff"}}, // no bundle names it
	} {
		fakeproc.Write(t, procRoot, p)
	}
	assert.NilError(t, os.MkdirAll(filepath.Join(state, "io.containerd.grpc.v1.cri", "sandboxes", "bbb"), 0o755))
	assert.DeepEqual(t, SandboxIDs(state), []string{"bbb"})
	for id, init := range map[string]int{"bbb": 50, "ccc": 51, "ddd": 52, "eee": 53} {
		task(t, state, id, 30)
		dir := filepath.Join(state, TaskDir, "k8s.io", id)
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "init.pid"), []byte(strconv.Itoa(init)), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "address"), []byte("unix:///run/containerd/s/"+id+"\n"), 0o644))
		netns := "/run/netns/cni-" + id
		if id != "bbb" {
			netns = "/proc/" + strconv.Itoa(init) + "/ns/net" // a container joins its sandbox's
		}
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"`+netns+`"}]}}`), 0o644))
	}
	fs := procfs.FS{Root: procRoot}
	r := Run{Socket: sock, StateDir: state, Since: since}
	shims, err := Find(fs, r)
	assert.NilError(t, err)
	assert.DeepEqual(t, shims, []procfs.ID{{PID: 30, StartTicks: 2000}})
	ours := func(p string) bool { return p == "/kubepods" || strings.HasPrefix(p, "/kubepods/") }
	got, err := Containers(fs, r, shims, ours)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []procfs.ID{{PID: 50, StartTicks: 2100}, {PID: 51, StartTicks: 2100}})

	tasks, err := Tasks(state)
	assert.NilError(t, err)
	assert.Equal(t, len(tasks), 4)
	assert.Equal(t, tasks[0].Address, "unix:///run/containerd/s/bbb")
	assert.Equal(t, tasks[0].Netns, "/run/netns/cni-bbb")
	assert.Equal(t, tasks[1].Netns, "", "a /proc/<pid>/ns/net path is not a netns of the run's")
	none, err := Tasks(filepath.Join(state, "absent"))
	assert.NilError(t, err)
	assert.Equal(t, len(none), 0)
}

func TestTaskSpecMounts(t *testing.T) {
	tests := []struct {
		name, spec  string
		wantRootfs  string
		wantSources []string
	}{
		{name: "a dockerd's container: absolute root and shm", spec: `{"root":{"path":"/data/overlay2/m1/merged"},"mounts":[{"destination":"/proc","source":"proc"},{"destination":"/dev/shm","source":"/data/containers/c1/mounts/shm"}]}`,
			wantRootfs: "/data/overlay2/m1/merged", wantSources: []string{"/data/containers/c1/mounts/shm"}},
		{name: "a CRI container: relative root", spec: `{"root":{"path":"rootfs"},"mounts":[{"destination":"/etc/hosts","source":"/var/lib/x/hosts"}]}`,
			wantSources: []string{"/var/lib/x/hosts"}},
		{name: "no spec", spec: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(state, TaskDir, "moby", "c1")
			assert.NilError(t, os.MkdirAll(dir, 0o755))
			if tt.spec != "" {
				assert.NilError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(tt.spec), 0o644))
			}
			tasks, err := Tasks(state)
			assert.NilError(t, err)
			assert.Equal(t, len(tasks), 1)
			assert.Equal(t, tasks[0].Rootfs, tt.wantRootfs)
			assert.DeepEqual(t, tasks[0].MountSources, tt.wantSources)
		})
	}
}
