package kind

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
)

// fakeMachine is a host in temporary directories: /proc (this process and
// a boot ID), /proc/sys with the sysctls a kubelet writes (and
// net.ipv4.ip_forward, which kind nodes only write in their own network
// namespaces), a cgroup v1 tree.
func fakeMachine(t *testing.T) Machine {
	tmp := t.TempDir()
	m := Machine{SysctlDir: filepath.Join(tmp, "sys"), CgroupRoot: filepath.Join(tmp, "cgroup"), Proc: procfs.FS{Root: filepath.Join(tmp, "proc")},
		OutsideDirs: []string{filepath.Join(tmp, "run", "containerd", "s"), filepath.Join(tmp, "run", "containerd")}}
	fakeproc.Write(t, m.Proc.Root, fakeproc.Proc{PID: os.Getpid(), PPID: 1, Start: 4242, Args: []string{"e2e"}})
	fakeproc.BootID(t, m.Proc.Root, "boot-1")
	for name, v := range map[string]string{"vm/overcommit_memory": "0", "vm/panic_on_oom": "0", "kernel/panic": "0", "kernel/panic_on_oops": "0",
		"kernel/keys/root_maxkeys": "200", "kernel/keys/root_maxbytes": "20000", "net/ipv4/ip_forward": "0"} {
		p := filepath.Join(m.SysctlDir, name)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(v+"\n"), 0o644))
	}
	for _, h := range []string{"memory", "pids", "cpu,cpuacct"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(m.CgroupRoot, h), 0o755))
	}
	return m
}

// TestKindJournalsTheKubeletsSysctls: the kind nodes' kubelets write the
// host-global sysctls (setupKernelTunables: privileged nodes see the
// host's /proc/sys), so the kind run records them before any cluster
// starts, with either engine; net.ipv4.ip_forward stays out (the nodes set
// it in their own network namespaces, the private dockerd runs with
// --ip-forward=false and the user's engine's is the user's).
func TestKindJournalsTheKubeletsSysctls(t *testing.T) {
	want := map[string]string{"vm.overcommit_memory": "0", "vm.panic_on_oom": "0", "kernel.panic": "0", "kernel.panic_on_oops": "0",
		"kernel.keys.root_maxkeys": "200", "kernel.keys.root_maxbytes": "20000"}
	for _, private := range []bool{true, false} {
		name := "the user's engine"
		if private {
			name = "a private dockerd"
		}
		t.Run(name, func(t *testing.T) {
			f := newFirstRun(t, none)
			p, dp := f.second(t, private)
			stack := cleanup.New(io.Discard)
			_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
			assert.NilError(t, err)
			assert.NilError(t, p.journalRun(context.Background(), private, dp, f.lock, stack))
			var st *journal.State
			// Before any cluster: journalRun is all the run does before
			// its first claimCluster.
			st, err = journal.Load(p.opts.Root)
			assert.NilError(t, err)
			got := map[string]string{}
			for _, s := range st.Sysctls {
				got[s.Name] = s.Before
			}
			assert.DeepEqual(t, got, want)
			assert.NilError(t, stack.Run(context.Background(), 30*time.Second))
		})
	}
}

// TestRaiseSysctlJournalsTheValueBefore: a sysctl the run raises (the
// CAPI rolls' inotify instances) is journaled with its value before,
// once, and the undo writes that back; one already high enough is left.
func TestRaiseSysctlJournalsTheValueBefore(t *testing.T) {
	f := newFirstRun(t, none)
	p, dp := f.second(t, true)
	stack := cleanup.New(io.Discard)
	_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
	assert.NilError(t, err)
	assert.NilError(t, p.journalRun(context.Background(), true, dp, f.lock, stack))
	path := filepath.Join(p.machine.SysctlDir, "fs", "inotify", "max_user_instances")
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assert.NilError(t, os.WriteFile(path, []byte("128\n"), 0o644))

	assert.NilError(t, p.RaiseSysctl("fs.inotify.max_user_instances", 1024))
	assert.NilError(t, p.RaiseSysctl("fs.inotify.max_user_instances", 1024))
	assert.NilError(t, p.RaiseSysctl("fs.inotify.max_user_instances", 512))
	b, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.Equal(t, string(b), "1024")
	st, err := journal.Load(p.opts.Root)
	assert.NilError(t, err)
	var journaled []journal.Sysctl
	for _, s := range st.Sysctls {
		if s.Name == "fs.inotify.max_user_instances" {
			journaled = append(journaled, s)
		}
	}
	assert.DeepEqual(t, journaled, []journal.Sysctl{{Name: "fs.inotify.max_user_instances", Before: "128"}})

	assert.NilError(t, stack.Run(context.Background(), 30*time.Second))
	b, err = os.ReadFile(path)
	assert.NilError(t, err)
	assert.Equal(t, string(b), "128")
}
