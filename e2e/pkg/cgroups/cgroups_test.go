package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
)

// layout makes a fake cgroup root: v2 has cgroup.controllers at the root,
// v1 one directory per hierarchy.
func layout(t *testing.T, v2 bool) string {
	root := t.TempDir()
	if v2 {
		assert.NilError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte("1\n"), 0o644))
		return root
	}
	for _, h := range []string{"cpu,cpuacct", "memory", "pids", "systemd", "unified"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(root, h), 0o755))
	}
	assert.NilError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")))
	return root
}

// mkCgroup creates a cgroup directory holding pids.
func mkCgroup(t *testing.T, dir string, pids ...string) {
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strings.Join(pids, "\n")), 0o644))
}

func TestOnlyTheRunsCgroups(t *testing.T) {
	tests := []struct {
		name string
		v2   bool
		// before are the cgroups (relative to the root) that exist before
		// the run, during the ones the kubelet creates, each with a pid.
		before, during []string
		wantKilled     []int
		wantLeft       []string
		wantGone       []string
	}{
		{name: "v2, kubepods existed before: not ours", v2: true, before: []string{"kubepods", "kubepods/besteffort"},
			wantLeft: []string{"kubepods", "kubepods/besteffort"}},
		{name: "v2, created by the run", v2: true, during: []string{"kubepods", "kubepods/besteffort"},
			wantKilled: []int{1001, 1002}, wantGone: []string{"kubepods"}},
		{name: "v1, existed before in every hierarchy", before: []string{"cpu,cpuacct/kubepods", "memory/kubepods", "pids/kubepods"},
			wantLeft: []string{"cpu,cpuacct/kubepods", "memory/kubepods", "pids/kubepods"}},
		{name: "v1, created by the run", during: []string{"cpu,cpuacct/kubepods", "memory/kubepods", "memory/kubepods/burstable"},
			wantKilled: []int{1001, 1002, 1003}, wantGone: []string{"cpu,cpuacct/kubepods", "memory/kubepods"}},
		{name: "v1, only memory existed before", before: []string{"memory/kubepods"}, during: []string{"cpu,cpuacct/kubepods"},
			wantKilled: []int{1001}, wantLeft: []string{"memory/kubepods"}, wantGone: []string{"cpu,cpuacct/kubepods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := layout(t, tt.v2)
			procRoot := t.TempDir()
			var killed []int
			h := Host{Root: root, Proc: procfs.FS{Root: procRoot}, Kill: func(pid int) error {
				killed = append(killed, pid)
				// The process exits, and leaves its cgroup.
				fakeproc.Remove(t, procRoot, pid)
				leave(t, root, pid)
				return nil
			}}
			pid := 900
			for _, c := range tt.before {
				pid++
				fakeproc.Write(t, procRoot, fakeproc.Proc{PID: pid, PPID: 1, Start: 50, Cgroups: []string{"/kubepods"}})
				mkCgroup(t, filepath.Join(root, c), strconv.Itoa(pid))
			}
			rec, err := Record(h, "kubepods")
			assert.NilError(t, err)
			pid = 1000
			for _, c := range tt.during {
				pid++
				fakeproc.Write(t, procRoot, fakeproc.Proc{PID: pid, PPID: 1, Start: 200, Cgroups: []string{"/kubepods"}})
				mkCgroup(t, filepath.Join(root, c), strconv.Itoa(pid))
			}
			// rmdir of a fake cgroup: as on cgroupfs, it fails while the
			// cgroup has children or processes.
			var removed []string
			h.Rmdir = func(p string) error {
				removed = append(removed, p)
				entries, _ := os.ReadDir(p)
				for _, e := range entries {
					if e.IsDir() {
						return syscall.EBUSY
					}
				}
				if b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
					return syscall.EBUSY
				}
				return os.RemoveAll(p)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = Remove(ctx, h, rec, 100)
			sort.Ints(killed)
			assert.DeepEqual(t, killed, tt.wantKilled)
			for _, l := range tt.wantLeft {
				_, err := os.Stat(filepath.Join(root, l))
				assert.NilError(t, err, "%s was removed", l)
			}
			for _, g := range tt.wantGone {
				_, err := os.Stat(filepath.Join(root, g))
				assert.Assert(t, os.IsNotExist(err), "%s is still there", g)
			}
			for _, p := range removed {
				assert.Assert(t, p != root, "removed the cgroup root")
			}
		})
	}
}

// leave takes pid out of every fake cgroup.procs under root.
func leave(t *testing.T, root string, pid int) {
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		var keep []string
		for _, f := range strings.Fields(string(b)) {
			if f != strconv.Itoa(pid) {
				keep = append(keep, f)
			}
		}
		assert.NilError(t, os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644))
		return nil
	})
}

func TestRemoveRefusesWhatRecordDoesNotWrite(t *testing.T) {
	root := layout(t, true)
	other := t.TempDir()
	mkCgroup(t, filepath.Join(other, "kubepods"))
	var killed, removed []string
	h := Host{Root: root, Proc: procfs.FS{Root: t.TempDir()},
		Kill:  func(pid int) error { killed = append(killed, strconv.Itoa(pid)); return nil },
		Rmdir: func(p string) error { removed = append(removed, p); return nil }}
	for _, created := range []string{filepath.Join(other, "kubepods"), "/sys/fs/cgroup/kubepods", root, root + "/x/../kubepods", filepath.Join(root, "system.slice")} {
		err := Remove(context.Background(), h, Recorded{Mode: V2, Name: "kubepods", Created: []string{created}}, 0)
		assert.Check(t, err != nil, "Remove accepted %s", created)
	}
	assert.Check(t, len(killed) == 0 && len(removed) == 0, "killed %v, removed %v", killed, removed)
}

func TestRemoveSparesOlderProcesses(t *testing.T) {
	root := layout(t, true)
	procRoot := t.TempDir()
	rec, err := Record(Host{Root: root}, "kubepods")
	assert.NilError(t, err)
	assert.DeepEqual(t, rec, Recorded{Mode: V2, Name: "kubepods", Created: []string{filepath.Join(root, "kubepods")}})
	// Someone moved an old process into the run's cgroup.
	fakeproc.Write(t, procRoot, fakeproc.Proc{PID: 77, PPID: 1, Start: 10})
	mkCgroup(t, filepath.Join(root, "kubepods"), "77")
	var killed []int
	h := Host{Root: root, Proc: procfs.FS{Root: procRoot}, Kill: func(pid int) error { killed = append(killed, pid); return nil },
		Rmdir: func(p string) error { return syscall.EBUSY }}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	err = Remove(ctx, h, rec, 100)
	assert.Assert(t, err != nil && strings.Contains(err.Error(), "older than the run"), "%v", err)
	assert.Equal(t, len(killed), 0)
}

func TestDetectAndOurs(t *testing.T) {
	assert.Equal(t, Detect(layout(t, true)), V2)
	assert.Equal(t, Detect(layout(t, false)), V1)
	r := Recorded{Mode: V1, Name: "kubepods", Created: []string{"/sys/fs/cgroup/memory/kubepods"}}
	for path, want := range map[string]bool{"/kubepods": true, "/kubepods/besteffort/pod1/c": true, "/kubepodsx": false, "/": false, "/system.slice/containerd.service": false} {
		assert.Equal(t, r.Ours(path), want, path)
	}
	assert.Assert(t, !Recorded{Mode: V1, Name: "kubepods"}.Ours("/kubepods"), "nothing created: nothing is ours")
}

// TestThaw: the frozen cgroups under the run's are thawed (v1 freezer.state,
// v2 cgroup.freeze); a frozen cgroup that is not the run's is left frozen.
func TestThaw(t *testing.T) {
	for _, tt := range []struct {
		name                string
		v2                  bool
		file, frozen, thawn string
		ours, theirs        string // relative to the root
	}{
		{name: "v1", file: "freezer.state", frozen: "FROZEN\n", thawn: "THAWED",
			ours: "freezer/kc-e2e-docker/node/kubelet.slice/scope", theirs: "freezer/system.slice/other"},
		{name: "v2", v2: true, file: "cgroup.freeze", frozen: "1\n", thawn: "0",
			ours: "kc-e2e-docker/node/scope", theirs: "system.slice/other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := layout(t, tt.v2)
			if !tt.v2 {
				assert.NilError(t, os.MkdirAll(filepath.Join(root, "freezer"), 0o755))
			}
			rec, err := Record(Host{Root: root}, "kc-e2e-docker")
			assert.NilError(t, err)
			for _, dir := range []string{tt.ours, tt.theirs} {
				mkCgroup(t, filepath.Join(root, dir))
				assert.NilError(t, os.WriteFile(filepath.Join(root, dir, tt.file), []byte(tt.frozen), 0o644))
			}
			assert.NilError(t, Thaw(Host{Root: root}, rec))
			ours, _ := os.ReadFile(filepath.Join(root, tt.ours, tt.file))
			theirs, _ := os.ReadFile(filepath.Join(root, tt.theirs, tt.file))
			assert.Equal(t, string(ours), tt.thawn)
			assert.Equal(t, string(theirs), tt.frozen)
		})
	}
}
