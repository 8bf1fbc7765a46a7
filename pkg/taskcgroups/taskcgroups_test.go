package taskcgroups

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

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

	assert.NilError(t, f.Repair(got[0]))
	procs, err := os.ReadFile(filepath.Join(f.root, got[0].Out[0].Dir, "cgroup.procs"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(procs), "200"))
	got, err = f.Escaped()
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
}

func TestRepairLeavesAReusedPid(t *testing.T) {
	f := newFakeHost(t)
	f.container("eeee", 500, 1000, "memory", "pids")
	f.process(500, "pause", 1000)
	got, err := f.Escaped()
	assert.NilError(t, err)
	assert.Assert(t, is.Len(got, 1))
	f.process(500, "someone-else", 2000)
	assert.ErrorContains(t, f.Repair(got[0]), "container eeee: process 500 is not the one runc started any more: left alone")
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
