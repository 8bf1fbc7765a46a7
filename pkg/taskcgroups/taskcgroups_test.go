package taskcgroups

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeHost is a file system root with runc's state, /proc and cgroups.
type fakeHost struct {
	t    *testing.T
	root string
	Host
}

func newFakeHost(t *testing.T) *fakeHost {
	root := t.TempDir()
	return &fakeHost{t: t, root: root, Host: Host{RuncRoot: DefaultRuncRoot, FSRoot: root}}
}

func (f *fakeHost) write(p, data string) {
	f.t.Helper()
	full := filepath.Join(f.root, p)
	assert.NilError(f.t, os.MkdirAll(filepath.Dir(full), 0o755))
	assert.NilError(f.t, os.WriteFile(full, []byte(data), 0o644))
}

// container records a runc container whose init process pid started at
// start, with a cgroup per controller; in lists the controllers whose
// cgroup.procs holds it.
func (f *fakeHost) container(id string, pid int, start uint64, in ...string) {
	paths := map[string]string{}
	held := map[string]bool{}
	for _, c := range in {
		held[c] = true
	}
	for _, c := range []string{"devices", "memory", "pids"} {
		dir := "/sys/fs/cgroup/" + c + "/kubelet.slice/pod.slice/cri-containerd-" + id + ".scope"
		paths[c] = dir
		procs := ""
		if held[c] {
			procs = "1\n" + strconv.Itoa(pid) + "\n"
		}
		f.write(filepath.Join(dir, "cgroup.procs"), procs)
	}
	f.state(id, pid, start, paths)
}

// state records runc's state of container id (init pid, started at start)
// with the cgroups it gave it.
func (f *fakeHost) state(id string, pid int, start uint64, paths map[string]string) {
	f.t.Helper()
	data, err := json.Marshal(map[string]interface{}{"id": id, "init_process_pid": pid, "init_process_start": start, "cgroup_paths": paths})
	assert.NilError(f.t, err)
	f.write(filepath.Join(DefaultRuncRoot, id, "state.json"), string(data))
}

// process puts pid into /proc with its start time (field 22).
func (f *fakeHost) process(pid int, comm string, start uint64) {
	f.write("/proc/"+strconv.Itoa(pid)+"/stat", strconv.Itoa(pid)+" ("+comm+") S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 "+strconv.FormatUint(start, 10)+" 1 1 18446744073709551615\n")
}

func TestEscaped(t *testing.T) {
	f := newFakeHost(t)
	f.container("aaaa-in-every-cgroup", 100, 5000, "devices", "memory", "pids")
	f.process(100, "pause", 5000)
	f.container("bbbb-out-of-devices", 200, 6000, "memory", "pids")
	f.process(200, "pause) (odd name", 6000)
	f.container("cccc-gone", 300, 7000, "memory")
	f.container("dddd-pid-reused", 400, 8000, "memory")
	f.process(400, "other", 9999)
	got, err := f.Escaped()
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []Task{{ID: "bbbb-out-of-devices", Pid: 200, StartTime: 6000,
		Out: []Cgroup{{"devices", "/sys/fs/cgroup/devices/kubelet.slice/pod.slice/cri-containerd-bbbb-out-of-devices.scope"}}}})

	moved, err := f.Repair(got[0])
	assert.NilError(t, err)
	assert.Check(t, moved)
	procs, err := os.ReadFile(filepath.Join(f.root, got[0].Out[0].Dir, "cgroup.procs"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(procs), "200"))
	got, err = f.Escaped()
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
}

// outOfDevices is a host with container eeee (init 500, started at 1000)
// out of its devices cgroup, and Escaped's task of it.
func outOfDevices(t *testing.T) (*fakeHost, []Task) {
	f := newFakeHost(t)
	f.container("eeee", 500, 1000, "memory", "pids")
	f.process(500, "pause", 1000)
	got, err := f.Escaped()
	assert.NilError(t, err)
	assert.Assert(t, is.Len(got, 1))
	return f, got
}

func TestRepairLeavesAReusedPid(t *testing.T) {
	f, got := outOfDevices(t)
	f.process(500, "someone-else", 2000)
	_, err := f.Repair(got[0])
	assert.ErrorContains(t, err, "container eeee: process 500 is not the one runc started any more: left alone")
	procs, err := os.ReadFile(filepath.Join(f.root, got[0].Out[0].Dir, "cgroup.procs"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(procs), ""))
}

func TestEscapedNoRuncRoot(t *testing.T) {
	got, err := Host{RuncRoot: DefaultRuncRoot, FSRoot: t.TempDir()}.Escaped()
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
}

func TestEscapedBadState(t *testing.T) {
	f := newFakeHost(t)
	f.write(filepath.Join(DefaultRuncRoot, "ffff", "state.json"), "{not json")
	_, err := f.Escaped()
	assert.ErrorContains(t, err, "runc state of ffff")
}

// TestEscapedCountsWhatRuncPsReads: a container is out only when its init
// is in neither the cgroup runc ps lists it from (cgroup v1: the devices
// hierarchy's; v2: its one cgroup) nor a descendant of it, as runc ps
// walks them.
func TestEscapedCountsWhatRuncPsReads(t *testing.T) {
	const (
		dev     = "/sys/fs/cgroup/devices/kubepods.slice/pod.slice/cri-containerd-x.scope"
		mem     = "/sys/fs/cgroup/memory/kubepods.slice/pod.slice/cri-containerd-x.scope"
		hybrid  = "/sys/fs/cgroup/unified/kubepods.slice/pod.slice/cri-containerd-x.scope"
		unified = "/sys/fs/cgroup/kubepods.slice/pod.slice/cri-containerd-x.scope"
	)
	v1 := map[string]string{"devices": dev, "memory": mem}
	for _, tc := range []struct {
		name  string
		paths map[string]string
		procs map[string]string // cgroup directory: its cgroup.procs
		want  []Cgroup
	}{
		{name: "v1: in its devices cgroup", paths: v1,
			procs: map[string]string{dev: "100\n", mem: "100\n"}},
		{name: "v1: in a child of its devices cgroup (systemd as PID 1, Docker-in-Docker)", paths: v1,
			procs: map[string]string{dev: "", dev + "/init.scope": "100\n", mem: "", mem + "/init.scope": "100\n"}},
		{name: "v1: in a grandchild of its devices cgroup", paths: v1,
			procs: map[string]string{dev: "", dev + "/a": "7\n", dev + "/a/b": "100\n", mem: "100\n"}},
		{name: "v1: out of its memory cgroup only (runc ps does not read it)", paths: v1,
			procs: map[string]string{dev: "100\n", mem: ""}},
		{name: "v1: in its pod's devices cgroup", paths: v1,
			procs: map[string]string{dev: "", dev + "/init.scope": "7\n", filepath.Dir(dev): "100\n", mem: "100\n"},
			want:  []Cgroup{{"devices", dev}}},
		{name: "v1 hybrid: out of the unified one only (runc ps reads devices)",
			paths: map[string]string{"devices": dev, "memory": mem, "": hybrid},
			procs: map[string]string{dev: "100\n", mem: "100\n", hybrid: ""}},
		{name: "v1: no devices cgroup on the host", paths: v1, procs: map[string]string{mem: ""}},
		{name: "v2: in its cgroup", paths: map[string]string{"": unified},
			procs: map[string]string{unified: "100\n"}},
		{name: "v2: in a child of its cgroup", paths: map[string]string{"": unified},
			procs: map[string]string{unified: "", unified + "/init.scope": "100\n"}},
		{name: "v2: in its pod's cgroup", paths: map[string]string{"": unified},
			procs: map[string]string{unified: "", filepath.Dir(unified): "100\n"},
			want:  []Cgroup{{"", unified}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost(t)
			for dir, procs := range tc.procs {
				f.write(filepath.Join(dir, "cgroup.procs"), procs)
			}
			f.state("x", 100, 5000, tc.paths)
			f.process(100, "systemd", 5000)
			got, err := f.Escaped()
			assert.NilError(t, err)
			var want []Task
			if tc.want != nil {
				want = []Task{{ID: "x", Pid: 100, StartTime: 5000, Out: tc.want}}
			}
			assert.Check(t, is.DeepEqual(got, want))
		})
	}
}

// TestRepairPidReusedDuringTheWrite: the init exits and its PID names
// another process between Repair's check and its write, which the kernel
// then moves: Repair sees it after the write and says so.
func TestRepairPidReusedDuringTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during func(f *fakeHost)
		err    string
	}{
		{name: "the same process before and after: written", during: func(*fakeHost) {}},
		{name: "another process at the PID after the write", during: func(f *fakeHost) { f.process(500, "someone-else", 2000) },
			err: "container eeee: process 500 exited while it was written into its devices cgroup " + eeeeDevices + ": PID 500 now names another process (start 2000), which this write may have moved there: check /proc/500/cgroup"},
		// Start times count clock ticks (10 ms): a PID reused within the
		// tick its process started in has the same one. Only a handle on
		// the process itself, not on its number, tells them apart; on the
		// fake's file system its /proc directory is replaced, as the
		// kernel's /proc/<pid> is another directory for another process.
		{name: "another process started in the same clock tick at the PID after the write", during: func(f *fakeHost) {
			assert.NilError(f.t, os.RemoveAll(filepath.Join(f.root, "/proc/500")))
			f.process(500, "someone-else", 1000)
		}, err: "container eeee: process 500 exited while it was written into its devices cgroup " + eeeeDevices + ": PID 500 now names another process (start 1000), which this write may have moved there: check /proc/500/cgroup"},
		{name: "no process at the PID after the write", during: func(f *fakeHost) {
			assert.NilError(f.t, os.RemoveAll(filepath.Join(f.root, "/proc/500")))
		}, err: "container eeee: process 500 exited while it was written into its devices cgroup " + eeeeDevices + ": no process has PID 500 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, got := outOfDevices(t)
			f.Host.writeProcs = func(path string, pid int) error {
				tc.during(f)
				return writeProcs(path, pid)
			}
			moved, err := f.Repair(got[0])
			if tc.err == "" {
				assert.NilError(t, err)
				assert.Check(t, moved)
			} else {
				assert.Error(t, err, tc.err)
			}
		})
	}
}

const eeeeDevices = "/sys/fs/cgroup/devices/kubelet.slice/pod.slice/cri-containerd-eeee.scope"

// TestRepairLeavesAnInitThatMovedBelow: between Escaped and Repair the
// init moved into a cgroup below the one runc ps reads (the tenant's
// systemd or Docker-in-Docker made it): runc ps finds it there, and
// writing it back would move the tenant's PID 1 out of its own cgroup
// (on v2 the kernel refuses it once that cgroup has children with
// controllers: EBUSY). Repair leaves it (moved false) and writes nothing.
func TestRepairLeavesAnInitThatMovedBelow(t *testing.T) {
	const (
		dev     = "/sys/fs/cgroup/devices/kubepods.slice/pod.slice/cri-containerd-x.scope"
		mem     = "/sys/fs/cgroup/memory/kubepods.slice/pod.slice/cri-containerd-x.scope"
		unified = "/sys/fs/cgroup/kubepods.slice/pod.slice/cri-containerd-x.scope"
	)
	for _, tc := range []struct {
		name  string
		paths map[string]string
		ps    string // the cgroup runc ps reads
		below string // where the init went after Escaped (the tenant, or another repair)
	}{
		{name: "v1: into a child of its devices cgroup", paths: map[string]string{"devices": dev, "memory": mem},
			ps: dev, below: dev + "/init.scope"},
		{name: "v1: into a grandchild of its devices cgroup", paths: map[string]string{"devices": dev, "memory": mem},
			ps: dev, below: dev + "/docker/inner"},
		{name: "v2: into a child of its cgroup", paths: map[string]string{"": unified},
			ps: unified, below: unified + "/init.scope"},
		{name: "v1: back in its devices cgroup itself", paths: map[string]string{"devices": dev, "memory": mem},
			ps: dev, below: dev},
		{name: "v2: back in its cgroup itself", paths: map[string]string{"": unified},
			ps: unified, below: unified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost(t)
			f.write(filepath.Join(tc.ps, "cgroup.procs"), "")
			f.write(filepath.Join(filepath.Dir(tc.ps), "cgroup.procs"), "100\n") // out: in its pod's cgroup
			f.state("x", 100, 5000, tc.paths)
			f.process(100, "systemd", 5000)
			got, err := f.Escaped()
			assert.NilError(t, err)
			assert.Assert(t, is.Len(got, 1))

			// The tenant moves its PID 1 below the container's cgroup.
			f.write(filepath.Join(filepath.Dir(tc.ps), "cgroup.procs"), "")
			f.write(filepath.Join(tc.below, "cgroup.procs"), "100\n")

			moved, err := f.Repair(got[0])
			assert.NilError(t, err)
			assert.Check(t, !moved)
			want := "" // the fake's write would leave "100", without a newline
			if tc.below == tc.ps {
				want = "100\n"
			}
			procs, err := os.ReadFile(filepath.Join(f.root, tc.ps, "cgroup.procs"))
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(procs), want), "Repair wrote the tenant's PID 1 back into %s", tc.ps)
		})
	}
}

// TestPinHoldsTheProcessNotItsNumber: on the kernel's /proc, the open
// directory Repair holds answers while its process exists, a zombie
// included (its PID is no other's until it is reaped), and no longer once
// it is reaped, whatever the PID names then: what Repair's check after the
// write relies on.
func TestPinHoldsTheProcessNotItsNumber(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to run: %v", err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	h := Host{FSRoot: "/"}
	init, ok := h.runc().Init(pid, 0)
	assert.Assert(t, !ok && init.PID == pid, "the child in /proc: %+v", init)
	task := Task{ID: "x", Pid: pid, StartTime: init.StartTicks}
	proc, err := h.pin(pid)
	assert.NilError(t, err)
	defer proc.Close()
	assert.Check(t, sameProcess(proc, task))
	assert.Check(t, !sameProcess(proc, Task{ID: "x", Pid: pid, StartTime: init.StartTicks + 1}), "another start time")

	assert.NilError(t, cmd.Process.Kill())
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, _ := h.runc().Init(pid, task.StartTime); st.State == 'Z' {
			break
		}
		assert.Assert(t, time.Now().Before(deadline), "the killed child never became a zombie")
		time.Sleep(10 * time.Millisecond)
	}
	assert.Check(t, sameProcess(proc, task), "a zombie is still its process")

	_ = cmd.Wait() // reaped: its PID is free
	assert.Check(t, !sameProcess(proc, task), "reaped")
	_, err = proc.ReadFile("stat")
	assert.Check(t, err != nil, "stat read through the pin of a reaped process")
}
