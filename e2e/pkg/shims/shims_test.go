package shims

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs/fakeproc"
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
		{name: "the system containerd's shims are never ours",
			procs: []fakeproc.Proc{{PID: 40, Start: 2000, Args: shimArgs("/run/containerd/containerd.sock", "ddd")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procRoot, state := t.TempDir(), t.TempDir()
			for _, p := range tt.procs {
				p.PPID = 1
				fakeproc.Write(t, procRoot, p)
			}
			for id, pid := range tt.tasks {
				task(t, state, id, pid)
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
